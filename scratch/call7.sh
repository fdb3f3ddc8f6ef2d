#!/usr/bin/env bash
set -u
export CONVLAB_GIT_REV=$1
R='conv2d/cuda/(09_depthwise$|09_depthwise/n128h28w28|cudnn/n128h28w28c(384|256)_k(384|256)r3s3_str1pad1g(384|256)_)'
CONVLAB_TEST_TIMEOUT=120 CONVLAB_BENCH_TIMEOUT=120 CONVLAB_SANITIZE_TIMEOUT=150 CONVLAB_SANITIZE_TESTS="conv2d/cuda/09_depthwise" \
  bench/run_gpu.sh --sanitize --only "$R" > /tmp/run.log 2>&1
cat $OUT/summary.txt
python3 - "$OUT/bench-gpu.json" <<'PY'
import json,sys
for b in json.load(open(sys.argv[1]))['benchmarks']:
    print(f"{b['name'][:90]:90s} {b.get('real_time',0):8.4f} {b.get('error_message','')[:60]}")
PY
head -1 scratch/pt_dw.txt > /tmp/pt1.txt
bench/profile_gpu.sh /tmp/pt1.txt > /dev/null 2>&1
cd /tmp && mkdir -p p && cd p && tar xzf $OUT/profile.tar.gz && grep -hE "Duration|DRAM Throughput|L2 Cache Throughput|Executed Instructions  |Issue Slots Busy|L1/TEX Hit|Eligible Warps" conv2d*
rm -f $OUT/gpu-tests.log; tar czf $OUT/logs2.tar.gz -C /tmp run.log
