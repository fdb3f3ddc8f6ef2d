# wave-3r call 3: the conv ahead with its taps made once a tile (piece 0) instead of once a piece.
# Tree: main + conv-ahead.patch (10e); 10z = 10e + taps-once-on-conv-ahead.patch, made before the
# call; 10y = HEAD's 10e (made here). 1. tests of the three; 2. one bench process; 3. with the time
# left, compute-sanitizer's four tools on 10z.
set -x
T=${CALL_LIMIT:-330}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+conv-ahead
mkdir -p /tmp/t /tmp/c /tmp/s
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/t/gpu.txt
git show HEAD:gpu/convfirst/10e_fused_cluster.cu | sed 's#10e_fused_cluster#10y_fused_cluster_before#g' > gpu/convfirst/10y_fused_cluster_before.cu
grep -c "kConvAhead\|tap_next" gpu/convfirst/10[eyz]_*.cu
OUT=/tmp/t timeout 260 bench/run_gpu.sh --no-bench --only 'convfirst/gpu/(10e|10y|10z)_' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
OUT=/tmp/c CONVLAB_BENCH_TIMEOUT=45 timeout 55 bench/run_gpu.sh --no-tests --only 'convfirst/gpu/(10e|10y|10z)_' > /tmp/c/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench.json 2>/dev/null
left=$((T - SECONDS))
[ $left -gt 30 ] && OUT=/tmp/s CONVLAB_SANITIZE_TESTS='convfirst/gpu/10z_fused_cluster_taps_once' CONVLAB_SANITIZE_TIMEOUT=$((left - 12)) \
  CONVLAB_SANITIZE_TEST_TIMEOUT=$((left - 15)) CONVLAB_RACECHECK_FLOP_LIMIT=5e7 CONVLAB_SANITIZE_JOBS=4 \
  timeout $((left - 8)) bench/run_gpu.sh --sanitize-only > /tmp/s/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/ 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log t/gpu.txt c/logs.tar.gz c/run.log s/run.log s/logs.tar.gz
cat /tmp/t/summary.txt /tmp/c/summary.txt; head -6 /tmp/s/sanitize.log 2>/dev/null
python3 bench/bench_rows.py /tmp/c/bench-gpu.json
