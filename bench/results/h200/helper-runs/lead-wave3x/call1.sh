# lead-wave3x call 1 (any card): 10e's conv helpers at C = 256 after the hang of wave-3w's call 4.
# That call hung every C = 256 launch: the helpers' setmaxnreg 48 plus the consumers' 2 x 232 is
# 65 536 registers, 1 024 more than the CTA's launch pool (168 x 384), so the consumers' inc waited
# for ever (register_budget_fits now checks the pool). Here 10e's helpers run passes of two
# groups at 40 registers (consumers keep 232); copy 10x runs passes of four at 48 (consumers 224);
# copy 10y is the filed 10e. Host steps before it:
#   git apply bench/results/h200/helper-runs/lead-wave3w/conv-helpers.patch, then the wave-3x edit
#   (kHelperPassGroups) in gpu/convfirst/10e_fused_cluster.cu;
#   10x: sed 's#10e_fused_cluster#10x_fused_cluster_pass4#g; s/kHelperPassGroups = 2;/kHelperPassGroups = 4;/'
#   10y: git show <filed>:gpu/convfirst/10e_fused_cluster.cu | sed 's#10e_fused_cluster#10y_fused_cluster_before#g'
#   mkdir -p .scratch; git rev-parse --short HEAD > .scratch/rev
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
TORCH=; STAGE2=100
case "$g" in *H200*) TORCH=--torch; STAGE2=170;; esac
set -x
T=${CALL_LIMIT:-560}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+conv-helpers
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCONVLAB_CUDA=ON -DCONVLAB_CUDA_ARCHS=90 > $OUT/build.log 2>&1
timeout 330 ninja -C build-gpu >> $OUT/build.log 2>&1 || { echo "build did not finish"; tail -20 $OUT/build.log; exit 4; }
echo "build done at ${SECONDS}s"
mkdir -p /tmp/t /tmp/c /tmp/s
OUT=/tmp/t timeout 120 bench/run_gpu.sh --no-bench --only '10e with one cluster|convfirst/gpu/(10e|10x|10y)_' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
OUT=/tmp/c CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_SHAPES='128,14,14,256,1024,256,1;128,7,7,512,2048,512,1' \
  CONVLAB_TORCH_TIMEOUT=80 CONVLAB_TORCH_BUDGET=70 CONVLAB_BENCH_TIMEOUT=80 timeout $STAGE2 \
  bench/run_gpu.sh --no-tests $TORCH --only 'convfirst/gpu/(10e|10x|10y)_' > /tmp/c/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench-10.json 2>/dev/null
left=$((T - SECONDS))
if [ $left -gt 40 ]; then
  OUT=/tmp/s CONVLAB_SANITIZE_TESTS='convfirst/gpu/10e_fused_cluster,*10e with one cluster*' CONVLAB_SANITIZE_TIMEOUT=$((left - 15)) \
    CONVLAB_SANITIZE_TEST_TIMEOUT=$((left - 20)) CONVLAB_RACECHECK_FLOP_LIMIT=5e7 CONVLAB_SANITIZE_JOBS=6 \
    timeout $((left - 8)) bench/run_gpu.sh --sanitize-only > /tmp/s/run.log 2>&1
  cp /tmp/s/sanitize.log $OUT/ 2>/dev/null
fi
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log c/logs.tar.gz c/run.log s/run.log s/logs.tar.gz
cat /tmp/t/summary.txt /tmp/c/summary.txt 2>/dev/null | grep -v "^  " | tee $OUT/summaries.txt
grep -E "^(memcheck|racecheck|synccheck|initcheck) " /tmp/s/sanitize.log 2>/dev/null
python3 bench/bench_rows.py /tmp/c/bench-gpu.json
