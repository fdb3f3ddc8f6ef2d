# lead-wave4d call 1 (any card). On every card: ring-gates (copy 11y) against 11c in one process,
# as ../lead-wave4c/call10.sh. On an H200 also the k8 tail (10e with ../lead-wave3x/k8-tail.patch
# against copy 10y = the filed 10e) and every lesson-10 and lesson-11 GPU test, which puts wave-4c's
# new test shape (a stream warp's second and third task) on the H200. PyTorch is left to a second,
# warm call. Host steps: ../lead-wave4c/call10.sh's (ring-gates.patch, the 11y copy), then
#   git show HEAD:gpu/convfirst/10e_fused_cluster.cu | sed 's#10e_fused_cluster#10y_fused_cluster_before#g' > gpu/convfirst/10y_fused_cluster_before.cu
#   git apply bench/results/h200/helper-runs/lead-wave3x/k8-tail.patch
#   mkdir -p .scratch; git rev-parse --short HEAD > .scratch/rev
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-540}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+ring-gates+k8-tail
rows='14x14_c80_e6_k3_s1|28x28_c40_e6_k3_s1|56x56_c24_e6_k3_s1'
case "$g" in
  *H200*)
    CALL_GPU_ONLY='gpu/lib/|gpu/(convfirst|mbconv)/|gpu/conv2d/(06a_|06b_|04a_|04b_|cudnn)|gpu/gemm/(03m_|03o_|cublas)' \
      call_build 280 || exit 4
    call_stage tests 70 --no-bench --only 'convfirst/gpu/|convfirst: every GPU|mbconv/gpu/|mbconv: every GPU rung|mbconv tile|mbconv stream'
    CONVLAB_BENCH_TIMEOUT=30 call_stage bench 90 --no-tests \
      --only "mbconv/gpu/(11c|11y)_.*($rows)|convfirst/gpu/(10e|10y)_"
    sanitized='mbconv/gpu/11c_fused_store,mbconv/gpu/11y_store_ring,mbconv/gpu/11e_fused_store_tc,convfirst/gpu/10e_fused_cluster' ;;
  *)
    # 11a without lessons 06's and 03's rungs: its test should now skip with the reason (tests/support.cpp).
    CALL_GPU_ONLY='gpu/lib/|gpu/mbconv/(11a_|11c|11y)_' call_build 220 || exit 4
    call_stage tests 40 --no-bench --only 'mbconv/gpu/(11a_|11c|11y)_|mbconv stream'
    CONVLAB_BENCH_TIMEOUT=30 call_stage bench 60 --no-tests --only "mbconv/gpu/(11c|11y)_.*($rows)"
    sanitized='mbconv/gpu/11c_fused_store,mbconv/gpu/11y_store_ring' ;;
esac
row=n128_14x14_c80_e6_k3_s1_se25_co80_silu_f16
for v in 11c_fused_store 11y_store_ring; do
  call_ncu_times mbconv/gpu/$v/$row mbconv_project_stream_kernel
  for f in $OUT/ncu-$row-*.csv; do [ -f "$f" ] && mv "$f" "$OUT/${v%%_*}-${f##*/}"; done
done
ls $OUT/*-ncu-*.csv > /dev/null 2>&1 && tar -czf $OUT/ncu.tar.gz -C $OUT $(cd $OUT && ls *-ncu-*.csv) && rm -f $OUT/*-ncu-*.csv
CONVLAB_RACECHECK_FLOP_LIMIT=1e8 call_sanitize "$sanitized"
call_finish
ls -la "$OUT"
