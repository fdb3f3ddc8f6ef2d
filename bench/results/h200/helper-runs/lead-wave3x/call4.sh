# lead-wave3x call 4, for the next session (any card; on an H200 also the filing run): 10e with
# the k8 tail (k8-tail.patch: the conv's last k-step as an m16n8k8 from an ldmatrix.x2) against
# copy 10y = the filed 10e, and on an H200 PyTorch at all five ConvFirst goal shapes beside 10c,
# 10e and 10f in one process (this takes up ../lead-wave3v/call3.sh, so that every ratio comes
# from one process again). Tests of 10e and 10y, compute-sanitizer's four tools on 10e.
# Host steps before it:
#   git show HEAD:gpu/convfirst/10e_fused_cluster.cu | sed 's#10e_fused_cluster#10y_fused_cluster_before#g' > gpu/convfirst/10y_fused_cluster_before.cu
#   git apply bench/results/h200/helper-runs/lead-wave3x/k8-tail.patch
#   mkdir -p .scratch; git rev-parse --short HEAD > .scratch/rev
# File only from an H200, only if every test passed and the sanitizers are clean, rows with
# cv ≤ 5 %: 10c, 10f and PyTorch's rows always (their code is the filed code); 10e's rows only if
# the k8 tail is kept (then the patch lands with them); never 10y's.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
TORCH=; STAGE2=60
case "$g" in *H200*) TORCH=--torch; STAGE2=240;; esac
set -x
T=${CALL_LIMIT:-570}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+k8-tail
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCONVLAB_CUDA=ON -DCONVLAB_CUDA_ARCHS=90 > $OUT/build.log 2>&1
timeout 300 ninja -C build-gpu >> $OUT/build.log 2>&1 || { echo "build did not finish"; tail -20 $OUT/build.log; exit 4; }
echo "build done at ${SECONDS}s"
mkdir -p /tmp/t /tmp/c /tmp/s
OUT=/tmp/t timeout 60 bench/run_gpu.sh --no-bench --only 'convfirst/gpu/(10e|10y)_' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
OUT=/tmp/c CONVLAB_TORCH_SCRIPTS=convfirst \
  CONVLAB_TORCH_SHAPES='128,56,56,64,256,64,1;128,56,56,64,256,128,2;128,28,28,128,512,128,1;128,14,14,256,1024,256,1;128,7,7,512,2048,512,1' \
  CONVLAB_TORCH_TIMEOUT=170 CONVLAB_TORCH_BUDGET=150 CONVLAB_BENCH_TIMEOUT=50 timeout $STAGE2 \
  bench/run_gpu.sh --no-tests $TORCH --only 'convfirst/gpu/(10c|10e|10f|10y)_' > /tmp/c/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench-10.json 2>/dev/null
left=$((T - SECONDS))
if [ $left -gt 40 ]; then
  OUT=/tmp/s CONVLAB_SANITIZE_TESTS='convfirst/gpu/10e_fused_cluster' CONVLAB_SANITIZE_TIMEOUT=$((left - 15)) \
    CONVLAB_SANITIZE_TEST_TIMEOUT=$((left - 20)) CONVLAB_RACECHECK_FLOP_LIMIT=5e7 CONVLAB_SANITIZE_JOBS=6 \
    timeout $((left - 8)) bench/run_gpu.sh --sanitize-only > /tmp/s/run.log 2>&1
  cp /tmp/s/sanitize.log $OUT/ 2>/dev/null
fi
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log c/logs.tar.gz c/run.log s/run.log s/logs.tar.gz
cat /tmp/t/summary.txt /tmp/c/summary.txt 2>/dev/null | grep -v "^  " | tee $OUT/summaries.txt
grep -E "^(memcheck|racecheck|synccheck|initcheck) " /tmp/s/sanitize.log 2>/dev/null
python3 bench/bench_rows.py /tmp/c/bench-gpu.json
