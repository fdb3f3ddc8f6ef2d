# The next H200 call (written in wave-3s, not run on an H200): lane-taps-10c.patch, measured on an
# H100 in call 5, against the filed 10c and 10e, with PyTorch at the five ConvFirst goal shapes.
# Before it, on the host (the device's git may hold an older HEAD than yours, so make the
# comparison copies here, from your HEAD, not with `git show` on the device):
#   git show HEAD:gpu/convfirst/10c_fused_wgmma.cu | sed 's#10c_fused_wgmma#10x_fused_wgmma_before#g' > gpu/convfirst/10x_fused_wgmma_before.cu
#   git show HEAD:gpu/convfirst/10e_fused_cluster.cu | sed 's#10e_fused_cluster#10y_fused_cluster_before#g' > gpu/convfirst/10y_fused_cluster_before.cu
#   git apply bench/results/h200/helper-runs/lead-wave3s/lane-taps-10c.patch
#   mkdir -p .scratch; git rev-parse --short HEAD > .scratch/rev; cp this file .scratch/call.sh
# and run `bash .scratch/call.sh 2>&1`. 1. tests (10c, 10x, 10e, 10y, the convfirst sweep, the host
# hopper tests); 2. one bench process of 10c, 10x, 10e, 10y, 10f with PyTorch; 3. with the time
# left, the four sanitizers on 10c. File 10c, 10e, 10f and PyTorch's rows if every test passed
# and their cv ≤ 5 % (not 10x or 10y), and remove the two copies before committing.
set -x
T=${CALL_LIMIT:-400}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+lane-taps-10c
mkdir -p /tmp/t /tmp/c /tmp/s
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/t/gpu.txt
grep -c "lane_taps\|tap_place" gpu/convfirst/10[cexy]_*.cu
OUT=/tmp/t timeout $((T - 150)) bench/run_gpu.sh --no-bench --only 'random shapes|hopper|convfirst/gpu/(10c|10x|10e|10y)_' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
left=$((T - SECONDS))
OUT=/tmp/c CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_TIMEOUT=$((left - 60)) CONVLAB_TORCH_BUDGET=$((left - 80)) \
  CONVLAB_BENCH_TIMEOUT=40 timeout $((left - 25)) \
  bench/run_gpu.sh --no-tests --torch --only 'convfirst/gpu/(10c|10x|10e|10y|10f)_' > /tmp/c/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench-torch.json 2>/dev/null
left=$((T - SECONDS))
[ $left -gt 30 ] && OUT=/tmp/s CONVLAB_SANITIZE_TESTS='convfirst/gpu/10c_fused_wgmma' CONVLAB_SANITIZE_TIMEOUT=$((left - 12)) \
  CONVLAB_SANITIZE_TEST_TIMEOUT=$((left - 15)) CONVLAB_RACECHECK_FLOP_LIMIT=5e7 CONVLAB_SANITIZE_JOBS=4 \
  timeout $((left - 8)) bench/run_gpu.sh --sanitize-only > /tmp/s/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/ 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log t/gpu.txt c/logs.tar.gz c/run.log s/run.log s/logs.tar.gz
cat /tmp/t/summary.txt /tmp/c/summary.txt | grep -v "^  "; grep -E "^(memcheck|racecheck|synccheck|initcheck) " /tmp/s/sanitize.log 2>/dev/null
python3 bench/bench_rows.py /tmp/c/bench-gpu.json
