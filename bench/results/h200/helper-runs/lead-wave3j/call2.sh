# Call 2 (wave-3j, warm machine after the filing run): the SE gate in pass 2's prologue (the wave-3i
# patch, kStreamGate) as 11w against 11c: tests of every store-plan rung with the patch applied, bench
# of 11c and 11w; ncu kernel times at C = 80 @ 14²; then the stream kernel's source profile (11c).
set -x
T=${CALL_LIMIT:-585}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+gate
mkdir -p /tmp/b2 /tmp/p2
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/b2/gpu.txt
git apply bench/results/h200/helper-runs/lead-wave3i/gate-prologue.patch && echo PATCH-APPLIED
sed 's/11c_fused_store/11w_store_gate_prologue/g; s/run_store_plan<false, false, true, true, true, true>/run_store_plan<false, false, true, true, true, true, true>/' \
  gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11w_store_gate_prologue.cu
grep -h "run_store_plan<" gpu/mbconv/11w_store_gate_prologue.cu gpu/mbconv/11c_fused_store.cu
OUT=/tmp/b2 CONVLAB_BENCH_TIMEOUT=110 timeout $((T - 230)) bench/run_gpu.sh --only 'random shapes|mbconv/gpu/(11c|11e|11h|11i|11k|11w)' > /tmp/b2/run.log 2>&1
printf '%s\n' 'mbconv/gpu/11c_fused_store | N=128,H=14,C=80,dtype=f16 | | 4' \
  'mbconv/gpu/11w_store_gate_prologue | N=128,H=14,C=80,dtype=f16 | | 4' > /tmp/list.txt
left=$((T - SECONDS)); [ $left -gt 60 ] && OUT=/tmp/p2 CONVLAB_NCU_SET=basic timeout $((left > 180 ? 90 : left - 10)) bench/profile_gpu.sh /tmp/list.txt > /tmp/p2/ncu.log 2>&1
left=$((T - SECONDS)); [ $left -gt 70 ] && OUT=/tmp/p2 timeout $((left - 12)) \
  bench/profile_source.sh mbconv/gpu/11c_fused_store N=128,H=14,C=80,dtype=f16 mbconv_project_stream_kernel > /tmp/p2/stream.log 2>&1
cp /tmp/b2/bench-gpu.json $OUT/bench.json; cp /tmp/b2/gpu-tests.xml $OUT/ 2>/dev/null; cp /tmp/b2/summary.txt $OUT/summaries.txt
cp /tmp/p2/profile.tar.gz $OUT/kernel-times.tar.gz 2>/dev/null; cp /tmp/p2/source-*.tar.gz $OUT/ 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read b2/logs.tar.gz b2/results.tar.gz b2/run.log b2/gpu.txt p2/ncu.log p2/stream.log
cat $OUT/summaries.txt; tail -30 /tmp/p2/ncu.log; for f in /tmp/p2/source-*.tar.gz; do tar -xzOf $f ./stalls.txt | head -12; tar -xzOf $f ./lines.txt | head -40; done
