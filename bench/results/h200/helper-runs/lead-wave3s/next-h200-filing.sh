# The filing call for the next H200 (written in wave-3s): wave-3r's next-h200-filing.sh with
# lesson 10's taps-place patch added on top of z-from-x-lean. NO_TORCH=1 leaves PyTorch out (on an
# H100, for the tests only: nothing from an H100 is filed). Before it, on main:
#   git apply bench/results/h200/helper-runs/lead-wave3q/z-from-x-lean.patch  (lesson 10: Z from x without divisions)
#   git apply bench/results/h200/helper-runs/lead-wave3s/taps-place-on-z-from-x-lean.patch  (lesson 10: conv taps from one division pair)
#   git apply bench/results/h200/helper-runs/lead-wave3n/pad-rows-on.patch    (lesson 11: zero rows in E, on in 11c)
#   mkdir -p .scratch; git rev-parse --short HEAD > .scratch/rev; cp this file .scratch/call.sh
# and run it as `bash .scratch/call.sh 2>&1`. Beside each change it builds 10y = HEAD's 10e (the
# filed rows' code) and 11q = 11c with kPadRows off. Then, one process each:
# 1. tests of 10e, 10y, 11c, 11q, the host tile and hopper tests and the random-shape sweeps;
# 2. 10e and 10y with PyTorch's rows at C = 128 @ 28², C = 256 @ 14² and C = 512 @ 7²;
# 3. 11c and 11q over the 15 SE bench shapes;
# 4. with time left, compute-sanitizer on 10e, then 11c.
# File only if every test passed and the rows to file have cv ≤ 5 % (bench/merge_bench_json.py,
# leaving out the 10y and 11q rows). lead-wave3p/call2-torch.sh (its rev label set to this
# call's), on the same warm H200, then times every goal shape of both lessons with PyTorch in one
# process per lesson.
set -x
T=${CALL_LIMIT:-450}
if [ -n "${NO_TORCH:-}" ]; then TESTS_LEAVE=95 STAGE2=45 TORCH=; else TESTS_LEAVE=240 STAGE2=115 TORCH=--torch; fi
export CONVLAB_GIT_REV=$(cat .scratch/rev)+z-from-x-lean+taps-place+pad-rows
mkdir -p /tmp/t /tmp/c /tmp/b /tmp/s
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/t/gpu.txt
git show HEAD:gpu/convfirst/10e_fused_cluster.cu | sed 's#10e_fused_cluster#10y_fused_cluster_before#g' > gpu/convfirst/10y_fused_cluster_before.cu
git show HEAD:gpu/mbconv/11c_fused_store.cu | sed 's#11c_fused_store#11q_store_no_pad_rows#g' > gpu/mbconv/11q_store_no_pad_rows.cu
grep -h "run_store_plan<" gpu/mbconv/11[cq]_*.cu; grep -c "staged0" gpu/convfirst/10[ey]_*.cu
OUT=/tmp/t timeout $((T - TESTS_LEAVE)) bench/run_gpu.sh --no-bench \
  --only 'random shapes|hopper|convfirst/gpu/(10e|10y)_|mbconv/gpu/(11c|11q)_|mbconv tile' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
OUT=/tmp/c CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_SHAPES='128,28,28,128,512,128,1;128,14,14,256,1024,256,1;128,7,7,512,2048,512,1' \
  CONVLAB_TORCH_TIMEOUT=80 CONVLAB_TORCH_BUDGET=70 CONVLAB_BENCH_TIMEOUT=35 timeout $STAGE2 \
  bench/run_gpu.sh --no-tests $TORCH --only 'convfirst/gpu/(10e|10y)_' > /tmp/c/run.log 2>&1
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
