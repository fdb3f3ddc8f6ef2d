set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
# The two comparison copies: 11t (11c with the cta_part stream) and 11u (11h with nested steps).
# (11u only where the patch applied: without it run_store_plan has no fifth flag.)
sed 's/11c_fused_store/11t_store_cta_part/g; s/run_store_plan<false>/run_store_plan<false, false, true, true>/' gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11t_store_cta_part.cu
patch=bench/results/h200/helper-runs/lead-wave3e/nested-steps.patch
if git apply $patch 2>/dev/null || patch -p1 < $patch; then
  sed 's/11h_fused_store_wgmma/11u_store_wgmma_nested/g; s/run_store_plan<false, true>/run_store_plan<false, true, true, false, true>/' gpu/mbconv/11h_fused_store_wgmma.cu > gpu/mbconv/11u_store_wgmma_nested.cu
fi
mkdir -p /tmp/a /tmp/b /tmp/s /tmp/p
OUT=/tmp/a timeout 290 bench/run_gpu.sh --no-bench --only 'random shapes|mbconv/gpu/|convfirst/gpu/10e|conv_bias_relu_pool/gpu/|checker|gemm/gpu/03[pqr]|hopper:' > /tmp/a/run-tests.log 2>&1
OUT=/tmp/b CONVLAB_BENCH_TIMEOUT=70 CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_SHAPES='128,14,14,256,1024,256,1;128,7,7,512,2048,512,1' \
  CONVLAB_TORCH_TIMEOUT=100 CONVLAB_TORCH_BUDGET=80 timeout 190 bench/run_gpu.sh --no-tests --torch --only 'mbconv/gpu/(11c|11t|11h|11u)|convfirst/gpu/10e' > /tmp/b/run-bench.log 2>&1
OUT=/tmp/s CONVLAB_SANITIZE_TIMEOUT=60 timeout 70 bench/run_gpu.sh --sanitize-only --only 'mbconv/gpu/(11c|11t|11u)' > /tmp/s/run-sanitize.log 2>&1
for s in 0 1 2 3 4 6 8; do
  if [ $s = 0 ]; then unset CONVLAB_MBCONV_SPLITS; else export CONVLAB_MBCONV_SPLITS=$s; fi
  timeout 25 build-gpu/convlab_bench --benchmark_filter='mbconv/gpu/11c_fused_store/n128_(14x14_c80_e6_k3_s1|14x14_c112_e6_k3_s1|28x28_c40_e6_k3_s1)_' 2>&1 | grep manual_time | sed "s/^/splits=$s /" | tee -a /tmp/b/splits.txt
done; unset CONVLAB_MBCONV_SPLITS
printf '%s\n' 'mbconv/gpu/11c_fused_store | N=128,H=14,C=80,dtype=f16 | | 3' 'mbconv/gpu/11t_store_cta_part | N=128,H=14,C=112,dtype=f16 | | 3' \
  'mbconv/gpu/11h_fused_store_wgmma | N=128,H=14,C=112,dtype=f16 | | 3' 'mbconv/gpu/11u_store_wgmma_nested | N=128,H=14,C=112,dtype=f16 | | 3' \
  'mbconv/gpu/11c_fused_store | N=128,H=28,C=40,dtype=f16 | | 3' 'mbconv/gpu/11c_fused_store | N=128,H=56,C=24,dtype=f16 | | 3' > /tmp/list.txt
left=$((585 - SECONDS)); [ $left -gt 20 ] && OUT=/tmp/p CONVLAB_NCU_SET=basic timeout $left bench/profile_gpu.sh /tmp/list.txt > /tmp/p/ncu.log 2>&1
cp /tmp/p/profile.tar.gz $OUT/kernel-times.tar.gz; cp /tmp/b/bench-gpu.json $OUT/bench.json; cp /tmp/a/gpu-tests.xml $OUT/; cp /tmp/s/sanitize.log $OUT/
cat /tmp/a/summary.txt /tmp/b/summary.txt /tmp/s/summary.txt > $OUT/summaries.txt
tar -czf $OUT/logs.tar.gz -C /tmp a/logs.tar.gz b/logs.tar.gz b/results.tar.gz s/logs.tar.gz p/ncu.log a/run-tests.log b/run-bench.log b/splits.txt s/run-sanitize.log
