# lead-wave3u call 2 (any card): the form to file. 10e = the two waiting patches
# (lead-wave3s/lane-taps-10c.patch, lead-wave3t/t-blocks-512.patch) + conv-ahead-128.patch (the
# next tile's conv under the last projects at C = 128 only; at C = 256 call 1 measured it slower).
# Host-made copies: 10x = HEAD's 10c, 10y = HEAD's 10e, 10z = 10e with the two patches only.
# Tests, the lesson-10 rungs and copies (with PyTorch at the three large-C goal shapes on an
# H200: the filing run), compute-sanitizer's four tools on 10e and 10c. Before it, on the host:
#   git show HEAD:gpu/convfirst/10c_fused_wgmma.cu | sed 's#10c_fused_wgmma#10x_fused_wgmma_before#g' > gpu/convfirst/10x_fused_wgmma_before.cu
#   git show HEAD:gpu/convfirst/10e_fused_cluster.cu | sed 's#10e_fused_cluster#10y_fused_cluster_before#g' > gpu/convfirst/10y_fused_cluster_before.cu
#   git apply bench/results/h200/helper-runs/lead-wave3s/lane-taps-10c.patch bench/results/h200/helper-runs/lead-wave3t/t-blocks-512.patch
#   sed 's#10e_fused_cluster#10z_fused_cluster_patched#g' gpu/convfirst/10e_fused_cluster.cu > gpu/convfirst/10z_fused_cluster_patched.cu
#   git apply bench/results/h200/helper-runs/lead-wave3u/conv-ahead-128.patch
#   mkdir -p .scratch; git rev-parse --short HEAD > .scratch/rev; cp this file .scratch/call.sh
# File 10c, 10e, 10f and PyTorch's rows (not 10x, 10y, 10z) only from an H200, only if every test
# passed and the sanitizers are clean, rows with cv ≤ 5 %.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
# On any other card it stops before the build (call 1 measured the change on an H100), unless
# ANY_CARD=1 (then without PyTorch).
TORCH=; STAGE2=60
case "$g" in *H200*) TORCH=--torch; STAGE2=150;; *) [ -n "${ANY_CARD:-}" ] || { echo "not an H200: stopping"; exit 3; };; esac
set -x
T=${CALL_LIMIT:-400}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+lane-taps-10c+t-blocks-512+conv-ahead-128
mkdir -p /tmp/t /tmp/c /tmp/s
OUT=/tmp/t timeout 230 bench/run_gpu.sh --no-bench --only 'random shapes|hopper|convfirst/gpu/(10c|10x|10e|10y|10z)_' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
OUT=/tmp/c CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_SHAPES='128,28,28,128,512,128,1;128,14,14,256,1024,256,1;128,7,7,512,2048,512,1' \
  CONVLAB_TORCH_TIMEOUT=80 CONVLAB_TORCH_BUDGET=70 CONVLAB_BENCH_TIMEOUT=40 timeout $STAGE2 \
  bench/run_gpu.sh --no-tests $TORCH --only 'convfirst/gpu/(10c|10x|10e|10y|10z|10f)_' > /tmp/c/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench-10.json 2>/dev/null
left=$((T - SECONDS))
if [ $left -gt 40 ]; then
  OUT=/tmp/s CONVLAB_SANITIZE_TESTS='convfirst/gpu/10e_fused_cluster,convfirst/gpu/10c_fused_wgmma' CONVLAB_SANITIZE_TIMEOUT=$((left - 15)) \
    CONVLAB_SANITIZE_TEST_TIMEOUT=$((left - 20)) CONVLAB_RACECHECK_FLOP_LIMIT=5e7 CONVLAB_SANITIZE_JOBS=6 \
    timeout $((left - 8)) bench/run_gpu.sh --sanitize-only > /tmp/s/run.log 2>&1
  cp /tmp/s/sanitize.log $OUT/ 2>/dev/null
fi
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log c/logs.tar.gz c/run.log s/run.log s/logs.tar.gz
cat /tmp/t/summary.txt /tmp/c/summary.txt 2>/dev/null | grep -v "^  " | tee $OUT/summaries.txt
grep -E "^(memcheck|racecheck|synccheck|initcheck) " /tmp/s/sanitize.log 2>/dev/null
python3 bench/bench_rows.py /tmp/c/bench-gpu.json
