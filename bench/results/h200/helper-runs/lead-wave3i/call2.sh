# Call 2 (wave-3i). Copies: 11t (11c + kStreamThree), 11u (+ kStreamEager), 11v (both).
# On an H200: tests and bench of every store-plan rung and the copies, PyTorch's MBConv rows in the
# same run (the filing). On an H100: tests and bench of 11c and the copies, ncu kernel times at
# C = 80 @ 14², then source profiles (11c's pass 1, 11u's stream).
set -x
T=${CALL_LIMIT:-585}
export CONVLAB_GIT_REV=$(cat .scratch/rev2)
mkdir -p /tmp/b /tmp/p
for v in "t:true, false" "u:false, true" "v:true, true"; do n=${v%%:*}; f=${v#*:}
  sed "s/11c_fused_store/11${n}_store_stream_${n}/g; s/run_store_plan<false, false, true, true, true>/run_store_plan<false, false, true, true, true, $f>/" \
    gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11${n}_store_stream_${n}.cu; done
grep -h "run_store_plan<" gpu/mbconv/11[tuv]_store_stream_*.cu
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/b/gpu.txt
if grep -q H200 /tmp/b/gpu.txt; then
  sed 's/11h_fused_store_wgmma/11o_store_wgmma_pad_e/g; s/run_store_plan<false, true>(p, a)/run_store_plan<false, true, true, false, true>(p, a)/' \
    gpu/mbconv/11h_fused_store_wgmma.cu > gpu/mbconv/11o_store_wgmma_pad_e.cu
  OUT=/tmp/b CONVLAB_BENCH_TIMEOUT=130 CONVLAB_TORCH_SCRIPTS=mbconv CONVLAB_TORCH_TIMEOUT=150 CONVLAB_TORCH_BUDGET=130 \
    timeout $((T - 40)) bench/run_gpu.sh --torch --only 'random shapes|mbconv/gpu/(11b|11c|11e|11h|11i|11o|11t|11u|11v)' > /tmp/b/run.log 2>&1
else
  OUT=/tmp/b CONVLAB_BENCH_TIMEOUT=120 timeout $((T - 200)) bench/run_gpu.sh --only 'random shapes|mbconv/gpu/(11c|11t|11u|11v)' > /tmp/b/run.log 2>&1
  printf '%s\n' 'mbconv/gpu/11c_fused_store | N=128,H=14,C=80,dtype=f16 | | 4' \
    'mbconv/gpu/11u_store_stream_u | N=128,H=14,C=80,dtype=f16 | | 4' \
    'mbconv/gpu/11v_store_stream_v | N=128,H=14,C=80,dtype=f16 | | 4' > /tmp/list.txt
  left=$((T - SECONDS)); [ $left -gt 60 ] && OUT=/tmp/p CONVLAB_NCU_SET=basic timeout $((left > 150 ? 100 : left - 10)) bench/profile_gpu.sh /tmp/list.txt > /tmp/p/ncu.log 2>&1
  for spec in "11c_fused_store mbconv_tile_kernel" "11u_store_stream_u mbconv_project_stream_kernel"; do set -- $spec
    left=$((T - SECONDS)); [ $left -gt 80 ] && OUT=/tmp/p timeout $((left > 130 ? 120 : left - 10)) \
      bench/profile_source.sh mbconv/gpu/$1 N=128,H=14,C=80,dtype=f16 $2 > /tmp/p/$1.log 2>&1
  done
fi
cp /tmp/b/bench-gpu.json $OUT/bench.json; cp /tmp/b/gpu-tests.xml $OUT/ 2>/dev/null; cp /tmp/b/summary.txt $OUT/summaries.txt
cp /tmp/p/profile.tar.gz $OUT/kernel-times.tar.gz 2>/dev/null; cp /tmp/p/source-*.tar.gz $OUT/ 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read b/logs.tar.gz b/results.tar.gz b/run.log b/gpu.txt p/ncu.log p/11c_fused_store.log p/11u_store_stream_u.log
cat $OUT/summaries.txt; for f in /tmp/p/source-*.tar.gz; do tar -xzOf $f ./stalls.txt | head -12; tar -xzOf $f ./lines.txt | head -30; done
