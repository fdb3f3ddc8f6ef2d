# lead-wave3t call 3 (a warm H100, after call 2's check stopped on it): t-blocks-512.patch on
# today's 10e and lane-taps-10c.patch, tested and benchmarked against the host-made copies 10x and
# 10y (tree as call2.sh's header says), no PyTorch; the four sanitizers on 10e.
set -x
T=${CALL_LIMIT:-330}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+lane-taps-10c+t-blocks-512
mkdir -p /tmp/t /tmp/c /tmp/s
nvidia-smi --query-gpu=name --format=csv,noheader
OUT=/tmp/t timeout $((T - 100)) bench/run_gpu.sh --no-bench --only 'random shapes|hopper|convfirst/gpu/(10c|10x|10e|10y)_' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
left=$((T - SECONDS))
OUT=/tmp/c CONVLAB_BENCH_TIMEOUT=40 timeout $((left - 45)) \
  bench/run_gpu.sh --no-tests --only 'convfirst/gpu/(10c|10x|10e|10y)_' > /tmp/c/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench.json 2>/dev/null
left=$((T - SECONDS))
[ $left -gt 30 ] && OUT=/tmp/s CONVLAB_SANITIZE_TESTS='convfirst/gpu/10e_fused_cluster' CONVLAB_SANITIZE_TIMEOUT=$((left - 12)) \
  CONVLAB_SANITIZE_TEST_TIMEOUT=$((left - 15)) CONVLAB_RACECHECK_FLOP_LIMIT=5e7 CONVLAB_SANITIZE_JOBS=4 \
  timeout $((left - 8)) bench/run_gpu.sh --sanitize-only > /tmp/s/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/ 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log c/logs.tar.gz c/run.log s/run.log s/logs.tar.gz
cat /tmp/t/summary.txt /tmp/c/summary.txt | grep -v "^  "; grep -E "^(memcheck|racecheck|synccheck|initcheck) " /tmp/s/sanitize.log 2>/dev/null
python3 bench/bench_rows.py /tmp/c/bench-gpu.json
