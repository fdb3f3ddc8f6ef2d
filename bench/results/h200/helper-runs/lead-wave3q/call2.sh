# wave-3q call 2: the conv split by groups (conv-by-group.patch, applied to main's 10e before the
# call) against main's 10e (10y, built from HEAD's file). Each stage's files reach $OUT when it ends.
# 1. Tests of 10e, 10y and the convfirst random-shape sweep.
# 2. One bench process of 10e and 10y at the three shapes (on an H200, PyTorch's rows beside them).
# 3. Nsight Compute (full set) of one launch of each at C = 256 @ 14².
# 4. compute-sanitizer on 10e.
set -x
T=${CALL_LIMIT:-420}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+conv-by-group
mkdir -p /tmp/t /tmp/c /tmp/p /tmp/s
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/t/gpu.txt
TORCH=; grep -q H200 /tmp/t/gpu.txt && TORCH=--torch
git show HEAD:gpu/convfirst/10e_fused_cluster.cu | sed 's#10e_fused_cluster#10y_fused_cluster_before#g' > gpu/convfirst/10y_fused_cluster_before.cu
grep -c "kConvPairs" gpu/convfirst/10e_fused_cluster.cu gpu/convfirst/10y_fused_cluster_before.cu
OUT=/tmp/t timeout 260 bench/run_gpu.sh --no-bench --only 'convfirst/gpu/(10e|10y)_|convfirst: every GPU rung' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
OUT=/tmp/c CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_SHAPES='128,14,14,256,1024,256,1;128,7,7,512,2048,512,1' \
  CONVLAB_TORCH_TIMEOUT=70 CONVLAB_TORCH_BUDGET=60 CONVLAB_BENCH_TIMEOUT=45 timeout $([ -n "$TORCH" ] && echo 120 || echo 55) \
  bench/run_gpu.sh --no-tests $TORCH --only 'convfirst/gpu/(10e|10y)_' > /tmp/c/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench.json 2>/dev/null
left=$((T - SECONDS))
printf '%s\n' 'convfirst/gpu/10e_fused_cluster | N=128,H=14,C=256,dtype=f16 | convfirst_fused_cluster_kernel | 1' \
  'convfirst/gpu/10y_fused_cluster_before | N=128,H=14,C=256,dtype=f16 | convfirst_fused_cluster_kernel | 1' > /tmp/list.txt
[ $left -gt 70 ] && OUT=/tmp/p timeout $((left > 140 ? 80 : left - 50)) bench/profile_gpu.sh /tmp/list.txt > /tmp/p/ncu.log 2>&1
cp /tmp/p/profile.tar.gz $OUT/ 2>/dev/null
left=$((T - SECONDS))
[ $left -gt 35 ] && OUT=/tmp/s CONVLAB_SANITIZE_TESTS='convfirst/gpu/10e_fused_cluster' CONVLAB_SANITIZE_TIMEOUT=$((left - 15)) \
  CONVLAB_SANITIZE_TEST_TIMEOUT=$((left - 18)) CONVLAB_RACECHECK_FLOP_LIMIT=5e7 CONVLAB_SANITIZE_JOBS=4 \
  timeout $((left - 10)) bench/run_gpu.sh --sanitize-only > /tmp/s/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/ 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log t/gpu.txt c/logs.tar.gz c/run.log p/ncu.log s/run.log s/logs.tar.gz
cat /tmp/t/summary.txt /tmp/c/summary.txt; head -6 /tmp/s/sanitize.log 2>/dev/null
tar -xzOf /tmp/p/profile.tar.gz ./profile-summary.txt 2>/dev/null | grep -E "##|Duration|Registers" | cut -c1-110
python3 bench/bench_rows.py /tmp/c/bench-gpu.json
