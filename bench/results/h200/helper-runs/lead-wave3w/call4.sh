# lead-wave3w call 4, for the next session (any card): the first question of call 2 (10e's conv
# helpers at C = 256 against copy 10y, HEAD's 10e), with the build as a stage of its own and no
# other copy, so that one call on a cold machine has room for the tests, the bench and the
# sanitizers; call 5 asks call 2's other two questions (10z, 10x). Call 3 ran the build inside
# three stages, each under `timeout` around bench/run_gpu.sh: a timeout killed the script but
# not its ninja (bench/run_gpu.sh now stops it), the next stage's ninja
# ran beside the orphan in the same build directory, and 392 s went by without a finished build
# or a log. Here ninja runs once, directly under its own timeout, with its log in $OUT.
# Before it, on the host (main is the filed code; the change is a patch):
#   git apply bench/results/h200/helper-runs/lead-wave3w/conv-helpers.patch
#   git show HEAD:gpu/convfirst/10e_fused_cluster.cu | sed 's#10e_fused_cluster#10y_fused_cluster_before#g' > gpu/convfirst/10y_fused_cluster_before.cu
#   mkdir -p .scratch; git rev-parse --short HEAD > .scratch/rev
# File 10e's rows (not 10y's) only from an H200, only if every test passed and the
# sanitizers are clean, rows with cv ≤ 5 %; the patch lands with that filing.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
TORCH=; STAGE2=70
case "$g" in *H200*) TORCH=--torch; STAGE2=150;; esac
set -x
T=${CALL_LIMIT:-540}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+conv-helpers
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCONVLAB_CUDA=ON -DCONVLAB_CUDA_ARCHS=90 > $OUT/build.log 2>&1
timeout 330 ninja -C build-gpu >> $OUT/build.log 2>&1 || { echo "build did not finish"; tail -20 $OUT/build.log; exit 4; }
echo "build done at ${SECONDS}s"
mkdir -p /tmp/t /tmp/c /tmp/s
OUT=/tmp/t timeout 150 bench/run_gpu.sh --no-bench --only 'one cluster|convfirst/gpu/(10e|10y)_' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
OUT=/tmp/c CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_SHAPES='128,14,14,256,1024,256,1;128,7,7,512,2048,512,1' \
  CONVLAB_TORCH_TIMEOUT=80 CONVLAB_TORCH_BUDGET=70 CONVLAB_BENCH_TIMEOUT=40 timeout $STAGE2 \
  bench/run_gpu.sh --no-tests $TORCH --only 'convfirst/gpu/(10e|10y)_' > /tmp/c/run.log 2>&1
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
