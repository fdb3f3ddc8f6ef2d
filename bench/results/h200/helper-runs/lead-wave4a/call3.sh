# lead-wave4a call 3 (any card): call 2 cut to what ≈ 490 s of device time holds, in order of
# need: the build; the tests of 11c and 11y (and the random-shape sweep of every GPU rung); 11c and
# 11y in one bench process at the five shapes the stream's forms take (C = 80 @ 14², 28², 56²,
# e = 1 @ 112², C = 112 @ 14²); the three kernels' ncu times at C = 80 @ 14² for both, natural L2
# and flushed; the sanitizers on 11y in what is left. Host steps and prediction: call2.sh's.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-470}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+stream-ring
call_build 280 || exit 4
call_stage tests 75 --no-bench --only 'mbconv/gpu/(11c|11y)_|mbconv: every GPU rung'
CONVLAB_BENCH_TIMEOUT=60 call_stage bench 70 --no-tests \
  --only 'mbconv/gpu/(11c|11y)_.*(14x14_c80_e6_k3_s1|28x28_c40_e6_k3_s1|56x56_c24_e6_k3_s1|112x112_c32|14x14_c112_e6_k3_s1)'
row=n128_14x14_c80_e6_k3_s1_se25_co80_silu_f16
for v in 11c_fused_store 11y_store_ring; do  # the CSVs are named by the row's last part: prefixed here
  call_ncu_times mbconv/gpu/$v/$row 'mbconv_tile_kernel|se_gate_kernel|mbconv_project_stream_kernel'
  for f in $OUT/ncu-$row-*.csv; do [ -f "$f" ] && mv "$f" "$OUT/${v%%_*}-${f##*/}"; done
done
ls $OUT/*-ncu-*.csv > /dev/null 2>&1 && tar -czf $OUT/ncu.tar.gz -C $OUT $(cd $OUT && ls *-ncu-*.csv) && rm -f $OUT/*-ncu-*.csv
call_sanitize 'mbconv/gpu/11y_store_ring'
call_finish
ls -la $OUT
