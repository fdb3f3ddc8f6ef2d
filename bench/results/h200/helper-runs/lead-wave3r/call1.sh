# wave-3r call 1: the conv ahead (conv-ahead.patch, applied to main's 10e before the call) against
# main's 10e (10y = HEAD's file), in one process. 1. tests of 10e, 10y and the convfirst sweep;
# 2. one bench process of both (PyTorch beside them when the GPU is an H200); 3. with the time
# left, compute-sanitizer's four tools on 10e.
set -x
T=${CALL_LIMIT:-470}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+conv-ahead
mkdir -p /tmp/t /tmp/c /tmp/s
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/t/gpu.txt
TORCH=; grep -q H200 /tmp/t/gpu.txt && TORCH=--torch
git show HEAD:gpu/convfirst/10e_fused_cluster.cu | sed 's#10e_fused_cluster#10y_fused_cluster_before#g' > gpu/convfirst/10y_fused_cluster_before.cu
grep -c "kConvAhead" gpu/convfirst/10e_fused_cluster.cu gpu/convfirst/10y_fused_cluster_before.cu
OUT=/tmp/t timeout 300 bench/run_gpu.sh --no-bench --only 'convfirst/gpu/(10e|10y)_|convfirst: every GPU rung' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
OUT=/tmp/c CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_SHAPES='128,28,28,128,512,128,1;128,14,14,256,1024,256,1;128,7,7,512,2048,512,1' \
  CONVLAB_TORCH_TIMEOUT=70 CONVLAB_TORCH_BUDGET=60 CONVLAB_BENCH_TIMEOUT=40 timeout $([ -n "$TORCH" ] && echo 125 || echo 50) \
  bench/run_gpu.sh --no-tests $TORCH --only 'convfirst/gpu/(10e|10y)_' > /tmp/c/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench.json 2>/dev/null
left=$((T - SECONDS))
[ $left -gt 30 ] && OUT=/tmp/s CONVLAB_SANITIZE_TESTS='convfirst/gpu/10e_fused_cluster' CONVLAB_SANITIZE_TIMEOUT=$((left - 12)) \
  CONVLAB_SANITIZE_TEST_TIMEOUT=$((left - 15)) CONVLAB_RACECHECK_FLOP_LIMIT=5e7 CONVLAB_SANITIZE_JOBS=4 \
  timeout $((left - 8)) bench/run_gpu.sh --sanitize-only > /tmp/s/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/ 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log t/gpu.txt c/logs.tar.gz c/run.log s/run.log s/logs.tar.gz
cat /tmp/t/summary.txt /tmp/c/summary.txt; head -6 /tmp/s/sanitize.log 2>/dev/null
python3 bench/bench_rows.py /tmp/c/bench-gpu.json
