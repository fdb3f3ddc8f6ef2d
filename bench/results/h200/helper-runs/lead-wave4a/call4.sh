# lead-wave4a call 4 (any card): the least of call 3 that measures the ring, for ≈ 390 s of wall
# time: the build; 11c and 11y in one bench process at C = 80 @ 14² and 28² (the bench checks each
# row's output after timing); 11y's tests (the GPU test table, with the shape past one stream task a
# warp); in what is left, the three kernels'
# ncu times at C = 80 @ 14² for both. Host steps and prediction: call2.sh's.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-380}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+stream-ring
call_build 260 || exit 4
CONVLAB_BENCH_TIMEOUT=40 call_stage bench 45 --no-tests \
  --only 'mbconv/gpu/(11c|11y)_.*(14x14_c80_e6_k3_s1|28x28_c40_e6_k3_s1)'
call_stage tests 50 --no-bench --only 'mbconv/gpu/11y_'
row=n128_14x14_c80_e6_k3_s1_se25_co80_silu_f16
for v in 11y_store_ring 11c_fused_store; do  # the CSVs are named by the row's last part: prefixed here
  call_ncu_times mbconv/gpu/$v/$row 'mbconv_project_stream_kernel'
  for f in $OUT/ncu-$row-*.csv; do [ -f "$f" ] && mv "$f" "$OUT/${v%%_*}-${f##*/}"; done
done
ls $OUT/*-ncu-*.csv > /dev/null 2>&1 && tar -czf $OUT/ncu.tar.gz -C $OUT $(cd $OUT && ls *-ncu-*.csv) && rm -f $OUT/*-ncu-*.csv
call_finish
ls -la $OUT
