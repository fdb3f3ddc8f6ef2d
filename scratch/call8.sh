#!/usr/bin/env bash
set -u
export CONVLAB_GIT_REV=$1
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCONVLAB_CUDA=ON -DCONVLAB_CUDA_ARCHS=90 > /dev/null 2>&1 && ninja -C build-gpu convlab_bench > /tmp/b.log 2>&1 || { tail -5 /tmp/b.log; exit 1; }
build-gpu/convlab_bench --benchmark_filter='^conv2d/cuda/(09_depthwise|cudnn)/n128h28w28c(384|256)_k(384|256)r3s3_str1pad1g(384|256)_f16/' \
  --benchmark_repetitions=5 --benchmark_out=$OUT/bench-depthwise-repeat.json --benchmark_out_format=json 2>&1 | grep -E "median|stddev|cv" 
