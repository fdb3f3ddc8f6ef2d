# lead-wave3w call 5, for the next session (any card), once call 4 has kept the conv helpers:
# call 2's other two questions against 10e (helpers at four groups) in one process. Copy 10z =
# 10e with the conv's last k-step as an m16n8k8 (kK8Tail, every C); copy 10x = 10e with the
# helpers making six groups (kHelperGroups = 6). Tests of the two copies, the bench shapes
# C = 128 / 256 / 512. Before it, on the host (with conv-helpers.patch applied, or landed):
#   sed 's#10e_fused_cluster#10z_fused_cluster_k8#g; s#constexpr bool kK8Tail = false;#constexpr bool kK8Tail = true;#' gpu/convfirst/10e_fused_cluster.cu > gpu/convfirst/10z_fused_cluster_k8.cu
#   sed 's#10e_fused_cluster#10x_fused_cluster_helpers6#g; s#constexpr int kHelperGroups = 4, kHelperGroup0#constexpr int kHelperGroups = 6, kHelperGroup0#' gpu/convfirst/10e_fused_cluster.cu > gpu/convfirst/10x_fused_cluster_helpers6.cu
#   mkdir -p .scratch; git rev-parse --short HEAD > .scratch/rev
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)+conv-helpers
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCONVLAB_CUDA=ON -DCONVLAB_CUDA_ARCHS=90 > $OUT/build.log 2>&1
timeout 330 ninja -C build-gpu >> $OUT/build.log 2>&1 || { echo "build did not finish"; tail -20 $OUT/build.log; exit 4; }
echo "build done at ${SECONDS}s"
mkdir -p /tmp/t /tmp/c
OUT=/tmp/t timeout 150 bench/run_gpu.sh --no-bench --only 'convfirst/gpu/(10x|10z)_' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
OUT=/tmp/c CONVLAB_BENCH_TIMEOUT=40 timeout 90 bench/run_gpu.sh --no-tests --only 'convfirst/gpu/(10e|10x|10z)_' > /tmp/c/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench-10.json 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log c/logs.tar.gz c/run.log
cat /tmp/t/summary.txt /tmp/c/summary.txt 2>/dev/null | grep -v "^  " | tee $OUT/summaries.txt
python3 bench/bench_rows.py /tmp/c/bench-gpu.json
