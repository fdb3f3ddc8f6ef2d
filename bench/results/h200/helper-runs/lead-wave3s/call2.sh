# wave-3s call 2: 10e's conv taps from one division pair a tile (tap_place / tap_at) on top of
# z-from-x-lean. Tree: main + lead-wave3q/z-from-x-lean.patch + taps-place.patch; 10y = the
# z-from-x-lean 10e (made before the call, untracked). 1. tests of both, the convfirst sweep and
# the host hopper tests; 2. two bench processes; 3. compute-sanitizer's four tools on 10e.
set -x
T=${CALL_LIMIT:-400}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+z-from-x-lean+taps-place
mkdir -p /tmp/t /tmp/c /tmp/d /tmp/s
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/t/gpu.txt
grep -c "tap_place" gpu/convfirst/10[ey]_*.cu
OUT=/tmp/t timeout 280 bench/run_gpu.sh --no-bench --only 'random shapes|hopper|convfirst/gpu/(10e|10y)_' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
OUT=/tmp/c CONVLAB_BENCH_TIMEOUT=45 timeout 55 bench/run_gpu.sh --no-tests --only 'convfirst/gpu/(10e|10y)_' > /tmp/c/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench-a.json 2>/dev/null
OUT=/tmp/d CONVLAB_BENCH_TIMEOUT=45 timeout 55 bench/run_gpu.sh --no-tests --only 'convfirst/gpu/(10y|10e)_' > /tmp/d/run.log 2>&1
cp /tmp/d/bench-gpu.json $OUT/bench-b.json 2>/dev/null
left=$((T - SECONDS))
[ $left -gt 30 ] && OUT=/tmp/s CONVLAB_SANITIZE_TESTS='convfirst/gpu/10e_fused_cluster' CONVLAB_SANITIZE_TIMEOUT=$((left - 12)) \
  CONVLAB_SANITIZE_TEST_TIMEOUT=$((left - 15)) CONVLAB_RACECHECK_FLOP_LIMIT=5e7 CONVLAB_SANITIZE_JOBS=4 \
  timeout $((left - 8)) bench/run_gpu.sh --sanitize-only > /tmp/s/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/ 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log t/gpu.txt c/logs.tar.gz c/run.log d/logs.tar.gz d/run.log s/run.log s/logs.tar.gz
cat /tmp/t/summary.txt /tmp/c/summary.txt /tmp/d/summary.txt | grep -v "^  "; grep -E "^(memcheck|racecheck|synccheck|initcheck) " /tmp/s/sanitize.log 2>/dev/null
python3 bench/bench_rows.py /tmp/c/bench-gpu.json /tmp/d/bench-gpu.json
