# wave-3k call 3: 10e's chunk trace at C = 256 @ 14² (the kTrace instantiation; the measured kernels'
# SASS is main's before it, checked with cuobjdump), after 10e's tests; then 10e's bench, and on an
# H200 PyTorch's ConvFirst rows at C = 256 @ 14² in the same run.
set -x
T=${CALL_LIMIT:-585}
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/b /tmp/c
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/b/gpu.txt
OUT=/tmp/b timeout $((T - 200)) bench/run_gpu.sh --no-bench --only 'convfirst/gpu/10e|convfirst: every GPU rung' > /tmp/b/run.log 2>&1
for shape in N=128,H=14,C=256,dtype=f16 N=128,H=28,C=256,dtype=f16; do
  echo "== $shape" >> /tmp/b/trace.txt
  CONVLAB_CHUNK_TRACE=1 timeout 60 build-gpu/convlab run convfirst/gpu/10e_fused_cluster --shape $shape --reps 0 >> /tmp/b/trace.txt 2>&1
done
left=$((T - SECONDS))
if grep -q H200 /tmp/b/gpu.txt; then
  OUT=/tmp/c CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_SHAPES='128,14,14,256,1024,256,1' CONVLAB_TORCH_TIMEOUT=100 \
    CONVLAB_TORCH_BUDGET=80 CONVLAB_BENCH_TIMEOUT=60 timeout $((left - 15)) bench/run_gpu.sh --no-tests --torch --only 'convfirst/gpu/10e' > /tmp/c/run.log 2>&1
else
  OUT=/tmp/c CONVLAB_BENCH_TIMEOUT=60 timeout $((left - 15)) bench/run_gpu.sh --no-tests --only 'convfirst/gpu/10e' > /tmp/c/run.log 2>&1
fi
cp /tmp/b/trace.txt /tmp/b/gpu-tests.xml $OUT/ 2>/dev/null; cp /tmp/c/bench-gpu.json $OUT/bench.json 2>/dev/null
cat /tmp/b/summary.txt /tmp/c/summary.txt > $OUT/summaries.txt 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read b/logs.tar.gz b/run.log c/logs.tar.gz c/run.log b/gpu.txt
cat $OUT/summaries.txt; cat /tmp/b/trace.txt | cut -c1-150 | head -80
