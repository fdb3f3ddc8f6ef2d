# lead-wave4a call 2 (any card): lesson 11's stream with D through a per-warp cp.async ring
# (run_store_plan's kStreamRing, copy 11y_store_ring = 11c + the flag; ring.patch), against 11c in
# one process. Predicted in lesson 11's NOTES (wave-4a) before the run. Host steps: apply
# ring.patch and make the copy (the `sed` line below); `.scratch/rev` = HEAD.
# 1. the tests of 11c and 11y, the random-shape sweep of every GPU rung, the tile tests;
# 2. 11c and 11y over the 15 SE bench shapes, one process;
# 3. the three kernels' ncu times at C = 80 @ 14² and C = 24 @ 56², 11c and 11y, natural L2 and flushed;
# 4. the four sanitizers on 11y in the time left.
# The copy: sed 's#11c_fused_store#11y_store_ring#g; s#run_store_plan<false, false, true, true, true, true, true>#run_store_plan<false, false, true, true, true, true, true, true>#' gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11y_store_ring.cu
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-560}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+stream-ring
call_build 280 || exit 4
call_stage tests 90 --no-bench --only 'mbconv/gpu/(11c|11y)_|mbconv: every GPU rung|mbconv tile'
CONVLAB_BENCH_TIMEOUT=100 call_stage bench 110 --no-tests --only 'mbconv/gpu/(11c|11y)_'
k='mbconv_tile_kernel|se_gate_kernel|mbconv_project_stream_kernel'
for row in n128_14x14_c80_e6_k3_s1_se25_co80_silu_f16 n128_56x56_c24_e6_k3_s1_se25_co24_silu_f16; do
  for v in 11c 11y; do  # the CSVs are named by the row's last part: prefixed with the rung here
    call_ncu_times mbconv/gpu/${v}_$([ $v = 11c ] && echo fused_store || echo store_ring)/$row "$k"
    for f in $OUT/ncu-$row-*.csv; do [ -f "$f" ] && mv "$f" "$OUT/$v-${f##*/}"; done
  done
done
tar -czf $OUT/ncu.tar.gz -C $OUT $(cd $OUT && ls 11?-ncu-*.csv) && rm -f $OUT/11?-ncu-*.csv
call_sanitize 'mbconv/gpu/11y_store_ring'
call_finish
ls -la $OUT
