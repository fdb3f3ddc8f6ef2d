# lead-wave3x call 3 (any card; the session's last ≈ 370 s): wave-3w's k8 tail alone, as copy 10z
# against the filed 10e in one process. 10z is conv-helpers-regs.patch's 10e with kHelpers false
# and kK8Tail true (the conv's fifth k-step as an m16n8k8 from an ldmatrix.x2), its T free
# address and CONVLAB_MAX_CLUSTERS hook replaced by 0 so that it builds against main's layout
# header. Host steps: git apply conv-helpers-regs.patch; sed the copy (lesson 10's NOTES,
# wave-3x); git checkout the patched files; mkdir -p .scratch; git rev-parse --short HEAD > .scratch/rev
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)+10z-k8tail
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCONVLAB_CUDA=ON -DCONVLAB_CUDA_ARCHS=90 > $OUT/build.log 2>&1
timeout 250 ninja -C build-gpu >> $OUT/build.log 2>&1 || { echo "build did not finish"; tail -20 $OUT/build.log; exit 4; }
echo "build done at ${SECONDS}s"
mkdir -p /tmp/t /tmp/c
OUT=/tmp/t timeout 40 bench/run_gpu.sh --no-bench --only 'convfirst/gpu/10z_' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
OUT=/tmp/c CONVLAB_BENCH_TIMEOUT=50 timeout 60 bench/run_gpu.sh --no-tests --only 'convfirst/gpu/(10e|10z)_' > /tmp/c/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench-10.json 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log c/logs.tar.gz c/run.log
cat /tmp/t/summary.txt /tmp/c/summary.txt 2>/dev/null | grep -v "^  " | tee $OUT/summaries.txt
python3 bench/bench_rows.py /tmp/c/bench-gpu.json
