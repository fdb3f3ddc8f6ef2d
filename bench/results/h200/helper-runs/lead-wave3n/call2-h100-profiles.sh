# wave-3n call 2 when the device is an H100 (no rows can be filed): the tests of the final lesson 11
# code (11c with kPadRows, 11q without), then two source profiles for the next changes:
#   10e at C = 256 @ 14² (the conv and T phase: 4.10 µs of conv passes and 1.02 of Z from x a tile),
#   11c's pass 1 (mbconv_tile_kernel) at C = 80 @ 14² with zero rows in E.
set -x
T=${CALL_LIMIT:-585}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+pad-rows-on
mkdir -p /tmp/t /tmp/p
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/t/gpu.txt
sed "s/11c_fused_store/11q_store_columns/g; s/run_store_plan<false, false, true, true, true, true, true>/run_store_plan<false, false, true, true, true, true>/" \
  gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11q_store_columns.cu
OUT=/tmp/t timeout $((T - 260)) bench/run_gpu.sh --no-bench --only 'mbconv/gpu/(11c|11q)_|mbconv tile' > /tmp/t/run.log 2>&1
cp /tmp/t/gpu-tests.xml /tmp/t/summary.txt $OUT/ 2>/dev/null
left=$((T - SECONDS))
OUT=$OUT timeout $(( (left - 20) / 2 )) bench/profile_source.sh convfirst/gpu/10e_fused_cluster N=128,H=14,C=256,dtype=f16 convfirst_fused_cluster_kernel > /tmp/p/10e.log 2>&1
left=$((T - SECONDS))
OUT=$OUT timeout $((left - 15)) bench/profile_source.sh mbconv/gpu/11c_fused_store N=128,H=14,C=80,dtype=f16 mbconv_tile_kernel > /tmp/p/11c.log 2>&1
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log t/gpu.txt p
cat $OUT/summary.txt; tail -3 /tmp/p/*.log; ls -la $OUT
