# The next session's first call (written at the end of wave-3k, not run). Before it:
#   git rev-parse --short HEAD > .scratch/rev; cp this file .scratch/call.sh
# 1. trace-and-t-blocks.patch applied (10e's trace instantiation, and C = 512's T in 16-byte blocks:
#    both have run only on an H100), then the tests of 10e and the convfirst random-shape sweep.
#    If they pass on the H200 and the rows are filed, commit the patch's files to main.
# 2. conv-split-stamps.patch applied after the tests (it changes only 10e's trace instantiation; every
#    measured kernel keeps its instructions, checked with cuobjdump): the phase stamps at
#    C = 256 @ 14² split each tile's "conv and T" (5.1 µs a tile on the H100) into the conv's passes,
#    Z from x, and the wait for the peer's T.
# 3. On an H200: 10e's bench with PyTorch's ConvFirst rows at C = 256 @ 14² and C = 512 @ 7² in the
#    same run (file the rows that are not noisy: 10e at C = 512 differs from its filed row).
#    On an H100: 10e's bench alone.
set -x
T=${CALL_LIMIT:-585}
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/b /tmp/c
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/b/gpu.txt
git apply bench/results/h200/helper-runs/lead-wave3k/trace-and-t-blocks.patch && echo TRACE-PATCH-APPLIED
OUT=/tmp/b timeout $((T - 250)) bench/run_gpu.sh --no-bench --only 'convfirst/gpu/10e|convfirst: every GPU rung' > /tmp/b/run.log 2>&1
git apply bench/results/h200/helper-runs/lead-wave3k/conv-split-stamps.patch && echo PATCH-APPLIED
timeout 150 ninja -C build-gpu convlab > /tmp/b/rebuild.log 2>&1
CONVLAB_PHASE_STAMPS=1 timeout 30 build-gpu/convlab run convfirst/gpu/10e_fused_cluster --shape N=128,H=14,C=256,dtype=f16 --reps 0 > /tmp/b/trace.txt 2>&1
git apply -R bench/results/h200/helper-runs/lead-wave3k/conv-split-stamps.patch && timeout 150 ninja -C build-gpu convlab >> /tmp/b/rebuild.log 2>&1
left=$((T - SECONDS))
if grep -q H200 /tmp/b/gpu.txt && [ $left -gt 200 ]; then
  OUT=/tmp/c CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_SHAPES='128,14,14,256,1024,256,1;128,7,7,512,2048,512,1' \
    CONVLAB_TORCH_TIMEOUT=120 CONVLAB_TORCH_BUDGET=100 CONVLAB_BENCH_TIMEOUT=60 timeout $((left - 15)) \
    bench/run_gpu.sh --no-tests --torch --only 'convfirst/gpu/10e' > /tmp/c/run.log 2>&1
else
  OUT=/tmp/c CONVLAB_BENCH_TIMEOUT=60 timeout $((left - 15)) bench/run_gpu.sh --no-tests --only 'convfirst/gpu/10e' > /tmp/c/run.log 2>&1
fi
cp /tmp/b/trace.txt /tmp/b/gpu-tests.xml $OUT/ 2>/dev/null; cp /tmp/c/bench-gpu.json $OUT/bench.json 2>/dev/null
cat /tmp/b/summary.txt /tmp/c/summary.txt > $OUT/summaries.txt 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read b/logs.tar.gz b/run.log b/rebuild.log c/logs.tar.gz c/run.log b/gpu.txt
cat $OUT/summaries.txt; grep -v "^variant" /tmp/b/trace.txt | cut -c1-900
