# Call 3 (wave-3i): 11c now takes the stream's three-CTA form where stream_three_pays, 11h padded E.
# 11q = the old 11c (two CTAs everywhere), the same-run baseline. On an H200: the filing run (every
# store-plan rung, PyTorch's rows in the same run). On an H100: tests and bench of 11c, 11h, 11q,
# then the source profile of 11c's pass 1 at C = 80 @ 14².
set -x
T=${CALL_LIMIT:-510}
export CONVLAB_GIT_REV=$(cat .scratch/rev3)
mkdir -p /tmp/b /tmp/p
sed 's/11c_fused_store/11q_store_two_ctas/g; s/run_store_plan<false, false, true, true, true, true>/run_store_plan<false, false, true, true, true>/' \
  gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11q_store_two_ctas.cu
grep -h "run_store_plan<" gpu/mbconv/11q_store_two_ctas.cu gpu/mbconv/11c_fused_store.cu gpu/mbconv/11h_fused_store_wgmma.cu
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/b/gpu.txt
if grep -q H200 /tmp/b/gpu.txt; then
  OUT=/tmp/b CONVLAB_BENCH_TIMEOUT=110 CONVLAB_TORCH_SCRIPTS=mbconv CONVLAB_TORCH_TIMEOUT=130 CONVLAB_TORCH_BUDGET=110 \
    timeout $((T - SECONDS - 15)) bench/run_gpu.sh --torch --only 'random shapes|mbconv/gpu/(11b|11c|11e|11h|11i|11q)' > /tmp/b/run.log 2>&1
else
  OUT=/tmp/b CONVLAB_BENCH_TIMEOUT=100 timeout $((T - SECONDS - 110)) bench/run_gpu.sh --only 'random shapes|mbconv/gpu/(11c|11h|11q)' > /tmp/b/run.log 2>&1
  left=$((T - SECONDS)); [ $left -gt 50 ] && OUT=/tmp/p timeout $((left - 10)) \
    bench/profile_source.sh mbconv/gpu/11c_fused_store N=128,H=14,C=80,dtype=f16 mbconv_tile_kernel > /tmp/p/pass1.log 2>&1
fi
cp /tmp/b/bench-gpu.json $OUT/bench.json; cp /tmp/b/gpu-tests.xml $OUT/ 2>/dev/null; cp /tmp/b/summary.txt $OUT/summaries.txt
cp /tmp/p/source-*.tar.gz $OUT/ 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read b/logs.tar.gz b/run.log b/gpu.txt p/pass1.log
cat $OUT/summaries.txt; for f in /tmp/p/source-*.tar.gz; do tar -xzOf $f ./stalls.txt | head -14; tar -xzOf $f ./hot.txt | head -40; done
