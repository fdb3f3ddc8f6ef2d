# The next session's filing call, for an H200 (written in wave-3p, not run). It is wave-3o's call1.sh (removed)
# with lesson 10's patch replaced and a third lesson-10 copy. NO_TORCH=1 leaves PyTorch out and gives
# the tests the time, for about 280 s of call. Before it, on main:
#   git apply bench/results/h200/helper-runs/lead-wave3p/y-staged.patch     (lesson 10: 10e at C = 256 with Z late,
#                                                                           x by cp.async, y by TMA stores)
#   git apply bench/results/h200/helper-runs/lead-wave3n/pad-rows-on.patch  (lesson 11: zero rows in E, on in 11c)
#   mkdir -p .scratch; git rev-parse --short HEAD > .scratch/rev; cp this file .scratch/call.sh
# The call builds, beside each change: 10y = main's 10e (the filed rows' code), 10z = main's 10e with
# z-late-early-x.patch (Z late, x loaded into registers before the last chunk's waits), 11q = 11c with
# kPadRows off. Then, one process each:
# 1. tests of 10e, 10y, 10z, 11c, 11q, the host tile tests and the random-shape sweeps;
# 2. 10e, 10y and 10z with PyTorch's rows at C = 256 @ 14² and C = 512 @ 7²;
# 3. 11c and 11q over the 15 SE bench shapes;
# 4. with time left, compute-sanitizer on 10e, then 11c.
# Each stage's files reach $OUT when it ends. On an H100 nothing can be filed: run it only for the tests.
set -x
T=${CALL_LIMIT:-450}
if [ -n "${NO_TORCH:-}" ]; then TESTS_LEAVE=95 STAGE2=45 TORCH=; else TESTS_LEAVE=240 STAGE2=105 TORCH=--torch; fi
export CONVLAB_GIT_REV=$(cat .scratch/rev)+y-staged+pad-rows
Q=bench/results/h200/helper-runs/lead-wave3n P=bench/results/h200/helper-runs/lead-wave3p
mkdir -p /tmp/t /tmp/c /tmp/b /tmp/s
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/t/gpu.txt
cp gpu/convfirst/10e_fused_cluster.cu gpu/convfirst/10y_fused_cluster_before.cu
sed 's#gpu/convfirst/10e_fused_cluster.cu#gpu/convfirst/10y_fused_cluster_before.cu#g' $P/y-staged.patch |
  git apply -R --include=gpu/convfirst/10y_fused_cluster_before.cu && echo 10Y-IS-THE-FILED-10E
cp gpu/convfirst/10y_fused_cluster_before.cu gpu/convfirst/10z_fused_cluster_zlate.cu
sed 's#gpu/convfirst/10e_fused_cluster.cu#gpu/convfirst/10z_fused_cluster_zlate.cu#g' $P/z-late-early-x.patch | git apply && echo 10Z-IS-Z-LATE-EARLY-X
sed -i 's#10e_fused_cluster#10y_fused_cluster_before#g' gpu/convfirst/10y_fused_cluster_before.cu
sed -i 's#10e_fused_cluster#10z_fused_cluster_zlate#g' gpu/convfirst/10z_fused_cluster_zlate.cu
sed "s/11c_fused_store/11q_store_columns/g; s/run_store_plan<false, false, true, true, true, true, true>/run_store_plan<false, false, true, true, true, true>/" \
  gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11q_store_columns.cu
grep -h "run_store_plan<" gpu/mbconv/11[cq]_*.cu
OUT=/tmp/t timeout $((T - TESTS_LEAVE)) bench/run_gpu.sh --no-bench \
  --only 'random shapes|convfirst/gpu/(10e|10y|10z)_|mbconv/gpu/(11c|11q)_|mbconv tile' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
OUT=/tmp/c CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_SHAPES='128,14,14,256,1024,256,1;128,7,7,512,2048,512,1' \
  CONVLAB_TORCH_TIMEOUT=70 CONVLAB_TORCH_BUDGET=60 CONVLAB_BENCH_TIMEOUT=35 timeout $STAGE2 \
  bench/run_gpu.sh --no-tests $TORCH --only 'convfirst/gpu/(10e|10y|10z)_' > /tmp/c/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench-10.json 2>/dev/null
left=$((T - SECONDS))
OUT=/tmp/b CONVLAB_BENCH_TIMEOUT=$((left > 130 ? 100 : left - 30)) timeout $((left > 130 ? 110 : left - 20)) \
  bench/run_gpu.sh --no-tests --only 'mbconv/gpu/(11c|11q)_' > /tmp/b/run.log 2>&1
cp /tmp/b/bench-gpu.json $OUT/bench-11.json 2>/dev/null
left=$((T - SECONDS))
if [ $left -gt 60 ]; then
  OUT=/tmp/s CONVLAB_SANITIZE_TESTS='convfirst/gpu/10e_fused_cluster,mbconv/gpu/11c_fused_store' CONVLAB_SANITIZE_TIMEOUT=$((left - 30)) \
    CONVLAB_SANITIZE_TEST_TIMEOUT=$((left - 35)) CONVLAB_RACECHECK_FLOP_LIMIT=5e7 CONVLAB_SANITIZE_JOBS=4 \
    timeout $((left - 15)) bench/run_gpu.sh --sanitize-only > /tmp/s/run.log 2>&1
  cp /tmp/s/sanitize.log $OUT/ 2>/dev/null
fi
cat /tmp/t/summary.txt /tmp/c/summary.txt /tmp/b/summary.txt > $OUT/summaries.txt 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log t/gpu.txt c/logs.tar.gz c/run.log b/logs.tar.gz b/run.log s/run.log s/logs.tar.gz
cat $OUT/summaries.txt; tail -5 $OUT/sanitize.log 2>/dev/null
python3 bench/bench_rows.py /tmp/c/bench-gpu.json /tmp/b/bench-gpu.json
