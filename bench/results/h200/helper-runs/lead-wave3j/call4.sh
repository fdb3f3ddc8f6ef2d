# Call 4 (wave-3j, 2474fd7; calls 4 and 5 as one after a refused start): against 11c in one process,
# 11x = 11c + kGateStaged (the gate's weights in shared memory before its wait), 11v = 11c +
# kStreamPrefetchL2 (each stream task asks L2 for its D and x first), 11t = 11c + kTileLean (pass 1
# stages the x tile and We's slices by stage_walk), 11u = 11c with all four and kStreamLean. Tests of every mbconv GPU rung first (se_gate's kernel changed its
# parameters), then the bench of the four, then Nsight Compute's kernel times at C = 80 @ 14² (11c, 11u).
set -x
T=${CALL_LIMIT:-585}
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/b4 /tmp/c4 /tmp/p4
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/b4/gpu.txt
for v in "x_store_gate_staged:true, false, false, false" "v_store_prefetch_l2:false, false, true, false" "t_store_tile_lean:false, false, false, true" "u_store_all_cuts:true, true, true, true"; do n=${v%%:*}; f=${v#*:}
  sed "s/11c_fused_store/11${n}/g; s/run_store_plan<false, false, true, true, true, true>/run_store_plan<false, false, true, true, true, true, $f>/" \
    gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11${n}.cu; done
grep -h "run_store_plan<" gpu/mbconv/11[xuvt]_*.cu
OUT=/tmp/b4 timeout $((T - 150)) bench/run_gpu.sh --no-bench --only 'random shapes|mbconv/gpu/' > /tmp/b4/run.log 2>&1
left=$((T - SECONDS)); OUT=/tmp/c4 CONVLAB_BENCH_TIMEOUT=115 timeout $((left > 170 ? 125 : left - 45)) \
  bench/run_gpu.sh --no-tests --only 'mbconv/gpu/(11c|11x|11v|11t|11u)_' > /tmp/c4/run.log 2>&1
printf '%s\n' 'mbconv/gpu/11c_fused_store | N=128,H=14,C=80,dtype=f16 | | 4' \
  'mbconv/gpu/11u_store_all_cuts | N=128,H=14,C=80,dtype=f16 | | 4' > /tmp/list4.txt
left=$((T - SECONDS)); [ $left -gt 40 ] && OUT=/tmp/p4 CONVLAB_NCU_SET=basic timeout $((left - 12)) bench/profile_gpu.sh /tmp/list4.txt > /tmp/p4/ncu.log 2>&1
cp /tmp/c4/bench-gpu.json $OUT/bench.json; cp /tmp/b4/gpu-tests.xml $OUT/ 2>/dev/null
cat /tmp/b4/summary.txt /tmp/c4/summary.txt > $OUT/summaries.txt
cp /tmp/p4/profile.tar.gz $OUT/kernel-times.tar.gz 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read b4/logs.tar.gz b4/run.log b4/gpu.txt c4/logs.tar.gz c4/run.log p4/ncu.log
cat $OUT/summaries.txt; grep -hE "Duration|Context" /tmp/p4/*.txt 2>/dev/null | grep -v PROF | cut -c1-120 | head -24
