# lead-wave3t call 2: the H200 filing call. lane-taps-10c.patch (10c; 10e routed through the same
# helper) and C = 512's T in 16-byte blocks (`t-blocks-512.patch`, wave-3k's form on today's 10e),
# against HEAD's 10c and 10e copied on the host as 10x and 10y, with PyTorch at the five ConvFirst
# goal shapes. Before it, on the host:
#   git show HEAD:gpu/convfirst/10c_fused_wgmma.cu | sed 's#10c_fused_wgmma#10x_fused_wgmma_before#g' > gpu/convfirst/10x_fused_wgmma_before.cu
#   git show HEAD:gpu/convfirst/10e_fused_cluster.cu | sed 's#10e_fused_cluster#10y_fused_cluster_before#g' > gpu/convfirst/10y_fused_cluster_before.cu
#   git apply bench/results/h200/helper-runs/lead-wave3s/lane-taps-10c.patch bench/results/h200/helper-runs/lead-wave3t/t-blocks-512.patch
#   mkdir -p .scratch; git rev-parse --short HEAD > .scratch/rev; cp this file .scratch/call.sh
# It stops at once on any card but an H200 (the patches have their H100 runs). File 10c, 10e, 10f
# and PyTorch's rows if every test passed and their cv ≤ 5 % (not 10x or 10y).
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
case "$g" in *H200*) ;; *) echo "not an H200: stopping before the build"; exit 3;; esac
set -x
T=${CALL_LIMIT:-360}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+lane-taps-10c+t-blocks-512
mkdir -p /tmp/t /tmp/c /tmp/s
grep -c "lane_taps\|kTBlocks" gpu/convfirst/10[cexy]_*.cu
OUT=/tmp/t timeout 215 bench/run_gpu.sh --no-bench --only 'random shapes|hopper|convfirst/gpu/(10c|10x|10e|10y)_' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
left=$((T - SECONDS))
OUT=/tmp/c CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_TIMEOUT=$((left - 45)) CONVLAB_TORCH_BUDGET=$((left - 60)) \
  CONVLAB_BENCH_TIMEOUT=40 timeout $((left - 15)) \
  bench/run_gpu.sh --no-tests --torch --only 'convfirst/gpu/(10c|10x|10e|10y|10f)_' > /tmp/c/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench-torch.json 2>/dev/null
left=$((T - SECONDS))
[ $left -gt 30 ] && OUT=/tmp/s CONVLAB_SANITIZE_TESTS='convfirst/gpu/10c_fused_wgmma,convfirst/gpu/10e_fused_cluster' CONVLAB_SANITIZE_TIMEOUT=$((left - 12)) \
  CONVLAB_SANITIZE_TEST_TIMEOUT=$((left - 15)) CONVLAB_RACECHECK_FLOP_LIMIT=5e7 CONVLAB_SANITIZE_JOBS=4 \
  timeout $((left - 8)) bench/run_gpu.sh --sanitize-only > /tmp/s/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/ 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log c/logs.tar.gz c/run.log s/run.log s/logs.tar.gz
cat /tmp/t/summary.txt /tmp/c/summary.txt | grep -v "^  "; grep -E "^(memcheck|racecheck|synccheck|initcheck) " /tmp/s/sanitize.log 2>/dev/null
python3 bench/bench_rows.py /tmp/c/bench-gpu.json
