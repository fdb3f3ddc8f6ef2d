# The next session's first call (written in wave-3h, not run): on the H200 (the goal figures are
# H200 figures; do not file an H100's rows), the tests and bench of every store-plan rung with
# PyTorch's MBConv rows in the same run (a budget that reaches the graph mode), then 11c's three
# kernel times at C = 80 @ 14² and 28². Before it: git rev-parse --short HEAD > .scratch/rev; copy
# this file to .scratch/. About 560 s on a cold machine (build ≈ 190–220 s).
set -x
T=${CALL_LIMIT:-585}
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/b /tmp/p
# 11o: 11h with 11c's padded E (pass 1 is 11c's; a copy, measured beside 11h in the same process)
sed 's/11h_fused_store_wgmma/11o_store_wgmma_pad_e/g; s/run_store_plan<false, true>(p, a)/run_store_plan<false, true, true, false, true>(p, a)/' \
  gpu/mbconv/11h_fused_store_wgmma.cu > gpu/mbconv/11o_store_wgmma_pad_e.cu
# 11t: 11c with the stream's three-CTA form (kStreamThree) wherever one part fits 75 KB
sed 's/11c_fused_store/11t_store_stream_three/g; s/run_store_plan<false, false, true, true, true>/run_store_plan<false, false, true, true, true, true>/' \
  gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11t_store_stream_three.cu
grep -h "run_store_plan<" gpu/mbconv/11o_store_wgmma_pad_e.cu gpu/mbconv/11t_store_stream_three.cu
# 1. tests and bench of the store-plan rungs (11c: the split rule and padded E where it pays; 11b,
#    11e, 11h, 11i: the split rule), 11k and 11o, PyTorch's rows in the same run
OUT=/tmp/b CONVLAB_BENCH_TIMEOUT=130 CONVLAB_TORCH_SCRIPTS=mbconv CONVLAB_TORCH_TIMEOUT=150 CONVLAB_TORCH_BUDGET=130 \
  timeout $((T - 100)) bench/run_gpu.sh --torch --only 'random shapes|mbconv/gpu/(11b|11c|11e|11h|11i|11k|11o|11t)' > /tmp/b/run.log 2>&1
# 2. 11c's three kernels at C = 80 @ 14² and 28² (ncu basic; the L2 flush is the first kernel of each count)
printf '%s\n' 'mbconv/gpu/11c_fused_store | N=128,H=14,C=80,dtype=f16 | | 4' \
  'mbconv/gpu/11t_store_stream_three | N=128,H=14,C=80,dtype=f16 | | 4' \
  'mbconv/gpu/11t_store_stream_three | N=128,H=14,C=112,dtype=f16 | | 4' > /tmp/list.txt
left=$((T - SECONDS)); [ $left -gt 40 ] && OUT=/tmp/p CONVLAB_NCU_SET=basic timeout $((left - 10)) bench/profile_gpu.sh /tmp/list.txt > /tmp/p/ncu.log 2>&1
cp /tmp/b/bench-gpu.json $OUT/bench.json; cp /tmp/b/gpu-tests.xml $OUT/ 2>/dev/null; cp /tmp/p/profile.tar.gz $OUT/kernel-times.tar.gz 2>/dev/null
cp /tmp/b/summary.txt $OUT/summaries.txt
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read b/logs.tar.gz b/results.tar.gz b/run.log p/ncu.log
cat $OUT/summaries.txt
