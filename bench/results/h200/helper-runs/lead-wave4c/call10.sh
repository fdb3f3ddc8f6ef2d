# lead-wave4c call 10 (any card): the ring with the gates a chunk ahead (ring-gates.patch: ring.patch
# without its test changes, which land in main on their own, plus the gate loads issued one chunk
# before their use), copy 11y against 11c in one process; predicted in lesson 11's NOTES (wave-4c,
# "Predicted before call 10"). Host steps: `git apply ring-gates.patch`, the copy's `sed` line of
# ../lead-wave4a/call2.sh, `.scratch/rev`. Stages: 11c's and 11y's tests (the table holds the new
# shape whose stream warps make a second and third task), the bench at C = 80 @ 14² and C = 40 @ 28²,
# the stream kernels' ncu times at C = 80 @ 14², then the sanitizers on both in the time left.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-300}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+ring-gates
CALL_GPU_ONLY='gpu/lib/|gpu/mbconv/(11c|11y)_' call_build 200 || exit 4
# CALL_FORM=least (≈ 175 s after the start): 11y's tests and the bench at C = 80 @ 14² only; the
# ncu times and the sanitizers then find no time left and say so.
if [[ ${CALL_FORM:-full} == least ]]; then
  call_stage tests 20 --no-bench --only 'mbconv/gpu/11y_'
  CONVLAB_BENCH_TIMEOUT=20 call_stage bench 30 --no-tests --only 'mbconv/gpu/(11c|11y)_.*14x14_c80_e6_k3_s1'
else
  call_stage tests 40 --no-bench --only 'mbconv/gpu/(11c|11y)_|mbconv stream'
  CONVLAB_BENCH_TIMEOUT=30 call_stage bench 40 --no-tests \
    --only 'mbconv/gpu/(11c|11y)_.*(14x14_c80_e6_k3_s1|28x28_c40_e6_k3_s1)'
fi
row=n128_14x14_c80_e6_k3_s1_se25_co80_silu_f16
for v in 11c_fused_store 11y_store_ring; do
  call_ncu_times mbconv/gpu/$v/$row mbconv_project_stream_kernel
  for f in $OUT/ncu-$row-*.csv; do [ -f "$f" ] && mv "$f" "$OUT/${v%%_*}-${f##*/}"; done
done
ls $OUT/*-ncu-*.csv > /dev/null 2>&1 && tar -czf $OUT/ncu.tar.gz -C $OUT $(cd $OUT && ls *-ncu-*.csv) && rm -f $OUT/*-ncu-*.csv
CONVLAB_RACECHECK_FLOP_LIMIT=1e8 call_sanitize 'mbconv/gpu/11c_fused_store,mbconv/gpu/11y_store_ring'
call_finish
ls -la "$OUT"
