# Lesson 11's filing call (wave-3n; never ran: no H200 started). Run it with pad-rows-on.patch applied
# (kPadRows on in 11c). 11q is 11c with the flag off (the code of the filed 11c rows), built beside it.
# 1. Tests of 11c, 11q, the host tile tests and the random-shape sweep.
# 2. One bench process of 11c and 11q (the 15 SE bench shapes each).
# 3. compute-sanitizer (memcheck, racecheck, synccheck, initcheck) on 11c.
set -x
T=${CALL_LIMIT:-585}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+pad-rows-on
mkdir -p /tmp/b /tmp/t
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/b/gpu.txt
sed "s/11c_fused_store/11q_store_columns/g; s/run_store_plan<false, false, true, true, true, true, true>/run_store_plan<false, false, true, true, true, true>/" \
  gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11q_store_columns.cu
grep -h "run_store_plan<" gpu/mbconv/11[cq]_*.cu
OUT=/tmp/t timeout $((T - 300)) bench/run_gpu.sh --no-bench --only 'random shapes|mbconv/gpu/(11c|11q)_|mbconv tile' > /tmp/t/run.log 2>&1
cp /tmp/t/gpu-tests.xml /tmp/b/tests.xml 2>/dev/null; cp /tmp/t/summary.txt /tmp/b/tests-summary.txt 2>/dev/null
OUT=/tmp/b CONVLAB_BENCH_TIMEOUT=100 timeout 110 bench/run_gpu.sh --no-tests --only 'mbconv/gpu/(11c|11q)_' > /tmp/b/run.log 2>&1
left=$((T - SECONDS))
if [ $left -gt 60 ]; then
  mkdir -p /tmp/s
  OUT=/tmp/s CONVLAB_SANITIZE_TESTS='mbconv/gpu/11c_fused_store' CONVLAB_SANITIZE_TIMEOUT=$((left - 30)) \
    CONVLAB_SANITIZE_TEST_TIMEOUT=$((left - 35)) CONVLAB_RACECHECK_FLOP_LIMIT=5e7 CONVLAB_SANITIZE_JOBS=4 \
    timeout $((left - 15)) bench/run_gpu.sh --sanitize-only > /tmp/s/run.log 2>&1
  cp /tmp/s/sanitize.log $OUT/ 2>/dev/null
fi
cp /tmp/b/bench-gpu.json $OUT/bench.json; cp /tmp/b/tests.xml $OUT/gpu-tests.xml 2>/dev/null
cat /tmp/b/tests-summary.txt /tmp/b/summary.txt > $OUT/summaries.txt
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log b/logs.tar.gz b/run.log b/gpu.txt s/run.log s/logs.tar.gz
cat $OUT/summaries.txt; tail -5 $OUT/sanitize.log 2>/dev/null
python3 bench/bench_rows.py /tmp/b/bench-gpu.json
