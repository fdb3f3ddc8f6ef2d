# wave-3n call 3 (an H100, with the session's last 311 s of device time): z-late-256.patch in the
# form kept, applied to main's 10e before the call; 10y = main's 10e built beside it.
# 1. Tests of 10e, 10y and the convfirst random-shape sweep.  2. compute-sanitizer on 10e.
# 3. One bench process of 10e and 10y. Each stage's files reach $OUT when it ends.
set -x
T=${CALL_LIMIT:-250}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+z-late-256
Q=bench/results/h200/helper-runs/lead-wave3n
mkdir -p /tmp/t /tmp/c /tmp/s
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/t/gpu.txt
cp gpu/convfirst/10e_fused_cluster.cu gpu/convfirst/10y_fused_cluster_before.cu
sed 's#gpu/convfirst/10e_fused_cluster.cu#gpu/convfirst/10y_fused_cluster_before.cu#g' $Q/z-late-256.patch | git apply -R && echo 10Y-IS-MAINS-10E
sed -i 's#10e_fused_cluster#10y_fused_cluster_before#g' gpu/convfirst/10y_fused_cluster_before.cu
OUT=/tmp/t timeout $((T - 45)) bench/run_gpu.sh --no-bench --only 'convfirst/gpu/(10e|10y)_|convfirst: every GPU rung' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
left=$((T - SECONDS))
OUT=/tmp/s CONVLAB_SANITIZE_TESTS='convfirst/gpu/10e_fused_cluster' CONVLAB_SANITIZE_TIMEOUT=20 CONVLAB_SANITIZE_TEST_TIMEOUT=18 \
  CONVLAB_RACECHECK_FLOP_LIMIT=5e7 CONVLAB_SANITIZE_JOBS=4 timeout 25 bench/run_gpu.sh --sanitize-only > /tmp/s/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/ 2>/dev/null
left=$((T - SECONDS))
OUT=/tmp/c CONVLAB_BENCH_TIMEOUT=$((left - 10)) timeout $((left - 5)) bench/run_gpu.sh --no-tests --only 'convfirst/gpu/(10e|10y)_' > /tmp/c/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench.json 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log t/gpu.txt c/logs.tar.gz c/run.log s/run.log s/logs.tar.gz
cat /tmp/t/summary.txt /tmp/c/summary.txt; head -6 /tmp/s/sanitize.log 2>/dev/null
python3 bench/bench_rows.py /tmp/c/bench-gpu.json
