# lead-wave4a call 2 (any card): lesson 11's stream with D through a per-warp cp.async ring
# (run_store_plan's kStreamRing, copy 11y_store_ring = 11c + the flag; ring.patch), against 11c in
# one process. Predicted in lesson 11's NOTES (wave-4a) before the run. Host steps: apply
# ring.patch and make the copy (the `sed` line below); `.scratch/rev` = HEAD.
# The copy: sed 's#11c_fused_store#11y_store_ring#g; s#run_store_plan<false, false, true, true, true, true, true>#run_store_plan<false, false, true, true, true, true, true, true>#' gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11y_store_ring.cu
# Three forms (CALL_FORM), the same stages cut to the device time left:
#   full   (≈ 560 s) the tests of 11c and 11y, the random-shape sweep of every GPU rung, the tile
#          tests; 11c and 11y over the 15 SE bench shapes, one process; the three kernels' ncu times
#          at C = 80 @ 14² and C = 24 @ 56², natural L2 and flushed; the sanitizers on 11y.
#   cut    (≈ 470 s, call3.sh) the same with the bench at five shapes the stream's forms take
#          (C = 80 @ 14², 28², 56², e = 1 @ 112², C = 112 @ 14²) and ncu at C = 80 @ 14² only.
#   least  (≈ 380 s, call4.sh) the bench at C = 80 @ 14² and 28² first (each row's output is checked
#          after timing), then 11y's tests, then the stream kernel alone under ncu at C = 80 @ 14².
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
form=${CALL_FORM:-full}
case $form in
  full) CALL_LIMIT=${CALL_BUDGET:-560} build=280 tests=90 wait=100 bench=110
        only_tests='mbconv/gpu/(11c|11y)_|mbconv: every GPU rung|mbconv tile' only_bench='mbconv/gpu/(11c|11y)_'
        rows='n128_14x14_c80_e6_k3_s1_se25_co80_silu_f16 n128_56x56_c24_e6_k3_s1_se25_co24_silu_f16'
        kernels='mbconv_tile_kernel|se_gate_kernel|mbconv_project_stream_kernel' ;;
  cut)  CALL_LIMIT=${CALL_BUDGET:-470} build=280 tests=75 wait=60 bench=70
        only_tests='mbconv/gpu/(11c|11y)_|mbconv: every GPU rung'
        only_bench='mbconv/gpu/(11c|11y)_.*(14x14_c80_e6_k3_s1|28x28_c40_e6_k3_s1|56x56_c24_e6_k3_s1|112x112_c32|14x14_c112_e6_k3_s1)'
        rows=n128_14x14_c80_e6_k3_s1_se25_co80_silu_f16
        kernels='mbconv_tile_kernel|se_gate_kernel|mbconv_project_stream_kernel' ;;
  least) CALL_LIMIT=${CALL_BUDGET:-380} build=260 tests=50 wait=40 bench=45
        only_tests='mbconv/gpu/11y_' only_bench='mbconv/gpu/(11c|11y)_.*(14x14_c80_e6_k3_s1|28x28_c40_e6_k3_s1)'
        rows=n128_14x14_c80_e6_k3_s1_se25_co80_silu_f16 kernels='mbconv_project_stream_kernel' ;;
  *) echo "CALL_FORM: full, cut or least, not '$form'"; exit 2 ;;
esac
export CONVLAB_GIT_REV=$(cat .scratch/rev)+stream-ring
call_build $build || exit 4
run_tests() { call_stage tests $tests --no-bench --only "$only_tests"; }
[ $form = least ] || run_tests
CONVLAB_BENCH_TIMEOUT=$wait call_stage bench $bench --no-tests --only "$only_bench"
[ $form = least ] && run_tests
for row in $rows; do
  for v in 11c_fused_store 11y_store_ring; do  # the CSVs are named by the row's last part: prefixed with the rung here
    call_ncu_times mbconv/gpu/$v/$row "$kernels"
    for f in $OUT/ncu-$row-*.csv; do [ -f "$f" ] && mv "$f" "$OUT/${v%%_*}-${f##*/}"; done
  done
done
ls $OUT/*-ncu-*.csv > /dev/null 2>&1 && tar -czf $OUT/ncu.tar.gz -C $OUT $(cd $OUT && ls *-ncu-*.csv) && rm -f $OUT/*-ncu-*.csv
[ $form = least ] || call_sanitize 'mbconv/gpu/11y_store_ring'
call_finish
ls -la $OUT
