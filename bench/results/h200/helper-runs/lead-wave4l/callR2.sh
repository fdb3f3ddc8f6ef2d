# lead-wave4l call R2 (any card): callR.sh cut to about 400 s of budget: 11s (the shorter tail with
# FC1 read flat, tree-sums.patch at kGateTail = 3) against 11c (the tail as filed-to-be) only. A
# build of the two, every lesson-11 GPU test on 11s, the bench of both at the 14² inputs in one
# process, then 11s and 11c under ncu at C = 80 @ 14² in the time left. With CALL_BUDGET under
# 380 (callR3.sh: 310) the build gets 250 s and the tests are 11s's own rows only.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
P=bench/results/h200/helper-runs/lead-wave4l/tree-sums.patch
git apply "$P" 2>/dev/null || patch -p1 < "$P" || { echo "tree-sums.patch did not apply"; exit 5; }
sed 's#11c_fused_store#11s_flat_fc1#g; s#, false, true>,#, false, 3>,#' gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11s_flat_fc1.cu
grep -q ", false, 3>," gpu/mbconv/11s_flat_fc1.cu || { echo "11s: kGateTail not set"; exit 5; }
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-400}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+gate-tail-on+tree-sums
build=340 tests=40 bench=45 only='mbconv/gpu/11s_|mbconv: every GPU rung|mbconv tile|mbconv stream'
((CALL_LIMIT < 380)) && build=250 tests=25 bench=30 only='mbconv/gpu/11s_'
CALL_GPU_ONLY='gpu/mbconv/(11c_|11s_)' call_build $build || { call_finish; exit 4; }
call_stage tests $tests --no-bench --only "$only"
CONVLAB_BENCH_TIMEOUT=$((bench - 2)) call_stage bench $bench --no-tests --only 'mbconv/gpu/(11c|11s)_[a-z0-9_]+/n128_14x14_'
for r in 11s_flat_fc1 11c_fused_store; do
  call_ncu_times "mbconv/gpu/$r/n128_14x14_c80_e6_k3_s1_se25_co80_silu_f16" mbconv_store_gate_kernel
done
ls $OUT/ncu-*.csv > /dev/null 2>&1 && tar -czf $OUT/ncu.tar.gz -C $OUT $(cd $OUT && ls ncu-*.csv) && rm -f $OUT/ncu-*.csv
call_finish
ls -la "$OUT"
