# wave-3n call 2 (an H100; on an H200 call-11-file.sh runs instead): Z from x moved to y's epilogue.
# 1. wave-3k's trace-and-t-blocks.patch and conv-split-stamps.patch applied to 10e; 10z is that 10e
#    plus z-late.patch (Z starts at zero; x + b are added in step 6 from x in global memory).
# 2. Tests of 10e, 10z and the convfirst random-shape sweep; phase stamps of both at C = 256 @ 14².
# 3. One bench process with 10e and 10z (and PyTorch's rows on an H200).
# 4. With time left, compute-sanitizer on 10z.
set -x
T=${CALL_LIMIT:-585}  # FIRST_RESERVE: the seconds kept back from the build and tests (150)
export CONVLAB_GIT_REV=$(cat .scratch/rev)
P=bench/results/h200/helper-runs/lead-wave3k
Q=bench/results/h200/helper-runs/lead-wave3n
mkdir -p /tmp/b /tmp/c
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/b/gpu.txt
git apply $P/trace-and-t-blocks.patch && echo TRACE-PATCH-APPLIED
git apply $P/conv-split-stamps.patch && echo SPLIT-PATCH-APPLIED
cp gpu/convfirst/10e_fused_cluster.cu gpu/convfirst/10z_fused_cluster_zlate.cu
sed 's#gpu/convfirst/10e_fused_cluster.cu#gpu/convfirst/10z_fused_cluster_zlate.cu#g' $Q/z-late.patch | git apply && echo ZLATE-APPLIED
sed -i 's#10e_fused_cluster#10z_fused_cluster_zlate#g' gpu/convfirst/10z_fused_cluster_zlate.cu
OUT=/tmp/b timeout $((T - ${FIRST_RESERVE:-150})) bench/run_gpu.sh --no-bench --only 'convfirst/gpu/(10e|10z)|convfirst: every GPU rung' > /tmp/b/run.log 2>&1
for v in 10e_fused_cluster 10z_fused_cluster_zlate; do
  CONVLAB_PHASE_STAMPS=1 timeout 30 build-gpu/convlab run convfirst/gpu/$v --shape N=128,H=14,C=256,dtype=f16 --reps 0 >> /tmp/b/trace.txt 2>&1
done
cp /tmp/b/summary.txt $OUT/tests-summary.txt; cp /tmp/b/trace.txt /tmp/b/gpu-tests.xml $OUT/  # back even if the call is cut short
left=$((T - SECONDS))
if grep -q H200 /tmp/b/gpu.txt && [ $left -gt 200 ]; then
  OUT=/tmp/c CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_SHAPES='128,14,14,256,1024,256,1;128,7,7,512,2048,512,1' \
    CONVLAB_TORCH_TIMEOUT=120 CONVLAB_TORCH_BUDGET=100 CONVLAB_BENCH_TIMEOUT=60 timeout $((left - 15)) \
    bench/run_gpu.sh --no-tests --torch --only 'convfirst/gpu/(10e|10z)' > /tmp/c/run.log 2>&1
else
  OUT=/tmp/c CONVLAB_BENCH_TIMEOUT=60 timeout $((left - 15)) bench/run_gpu.sh --no-tests --only 'convfirst/gpu/(10e|10z)' > /tmp/c/run.log 2>&1
fi
cp /tmp/c/bench-gpu.json $OUT/bench.json 2>/dev/null
# 4. With time left: compute-sanitizer on 10z.
left=$((T - SECONDS))
if [ $left -gt 60 ]; then
  mkdir -p /tmp/s
  OUT=/tmp/s CONVLAB_SANITIZE_TESTS='convfirst/gpu/10z_fused_cluster_zlate' CONVLAB_SANITIZE_TIMEOUT=$((left - 30)) \
    CONVLAB_SANITIZE_TEST_TIMEOUT=$((left - 35)) CONVLAB_RACECHECK_FLOP_LIMIT=5e7 CONVLAB_SANITIZE_JOBS=4 \
    timeout $((left - 15)) bench/run_gpu.sh --sanitize-only > /tmp/s/run.log 2>&1
  cp /tmp/s/sanitize.log $OUT/ 2>/dev/null
fi
cp /tmp/b/trace.txt /tmp/b/gpu-tests.xml $OUT/ 2>/dev/null; cp /tmp/c/bench-gpu.json $OUT/bench.json 2>/dev/null
cat /tmp/b/summary.txt /tmp/c/summary.txt > $OUT/summaries.txt 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read b/logs.tar.gz b/run.log c/logs.tar.gz c/run.log b/gpu.txt s/run.log s/logs.tar.gz
cat $OUT/summaries.txt; grep -v "^variant" /tmp/b/trace.txt | cut -c1-600
python3 bench/bench_rows.py /tmp/c/bench-gpu.json
