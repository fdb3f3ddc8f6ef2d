# lead-wave3w call 3 (any card; call 2 made lean for the last of the budget: tests of the lesson-10 copies and the one-cluster test only): 10e's conv helpers at C = 256 (the producer warpgroup's three
# idle warps make conv groups 12-15 of every tile, under the previous tile's drain; the consumers
# make groups 0-11), against copy 10y = HEAD's 10e in one process; copy 10z = this 10e with the
# conv's last k-step as an m16n8k8 (kK8Tail, every C); copy 10x = this 10e with the helpers making
# six groups (10-15) and the consumers ten (kHelperGroups = 6). Tests (the lesson-10 rungs and
# the copy, the random-shape sweeps, the hopper library, and the new one-cluster table test that
# walks many tiles per pair), the bench shapes C = 128 / 256 / 512 (with PyTorch's rows on an
# H200), then compute-sanitizer's four tools on 10e and the one-cluster test. Before it, on the host:
#   git show HEAD:gpu/convfirst/10e_fused_cluster.cu | sed 's#10e_fused_cluster#10y_fused_cluster_before#g' > gpu/convfirst/10y_fused_cluster_before.cu
#   sed 's#10e_fused_cluster#10z_fused_cluster_k8#g; s#constexpr bool kK8Tail = false;#constexpr bool kK8Tail = true;#' gpu/convfirst/10e_fused_cluster.cu > gpu/convfirst/10z_fused_cluster_k8.cu
#   sed 's#10e_fused_cluster#10x_fused_cluster_helpers6#g; s#constexpr int kHelperGroups = 4, kHelperGroup0#constexpr int kHelperGroups = 6, kHelperGroup0#' gpu/convfirst/10e_fused_cluster.cu > gpu/convfirst/10x_fused_cluster_helpers6.cu
#   mkdir -p .scratch; git rev-parse --short HEAD > .scratch/rev
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
TORCH=; STAGE2=70
case "$g" in *H200*) TORCH=--torch; STAGE2=150;; esac
set -x
T=${CALL_LIMIT:-480}
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/t /tmp/c /tmp/s
OUT=/tmp/t timeout 200 bench/run_gpu.sh --no-bench --only 'one cluster|convfirst/gpu/(10e|10x|10y|10z)_' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
OUT=/tmp/c CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_SHAPES='128,14,14,256,1024,256,1;128,7,7,512,2048,512,1' \
  CONVLAB_TORCH_TIMEOUT=80 CONVLAB_TORCH_BUDGET=70 CONVLAB_BENCH_TIMEOUT=40 timeout $STAGE2 \
  bench/run_gpu.sh --no-tests $TORCH --only 'convfirst/gpu/(10e|10x|10y|10z)_' > /tmp/c/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench-10.json 2>/dev/null
left=$((T - SECONDS))
if [ $left -gt 40 ]; then
  OUT=/tmp/s CONVLAB_SANITIZE_TESTS='convfirst/gpu/10e_fused_cluster,*one cluster*' CONVLAB_SANITIZE_TIMEOUT=$((left - 15)) \
    CONVLAB_SANITIZE_TEST_TIMEOUT=$((left - 20)) CONVLAB_RACECHECK_FLOP_LIMIT=5e7 CONVLAB_SANITIZE_JOBS=6 \
    timeout $((left - 8)) bench/run_gpu.sh --sanitize-only > /tmp/s/run.log 2>&1
  cp /tmp/s/sanitize.log $OUT/ 2>/dev/null
fi
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log c/logs.tar.gz c/run.log s/run.log s/logs.tar.gz
cat /tmp/t/summary.txt /tmp/c/summary.txt 2>/dev/null | grep -v "^  " | tee $OUT/summaries.txt
grep -E "^(memcheck|racecheck|synccheck|initcheck) " /tmp/s/sanitize.log 2>/dev/null
python3 bench/bench_rows.py /tmp/c/bench-gpu.json
