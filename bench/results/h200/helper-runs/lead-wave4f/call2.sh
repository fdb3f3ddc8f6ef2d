# lead-wave4f call 2 (any card): where 11l's pass 2 spends its 36–38 µs at C = 80 @ 14² (call 1,
# ncu; predicted 9–13). If the ring of four 7 KB slices is latency-bound (its slots wait for bulk
# copies more than for the warps), sixteen slots take most of it off: Nsight Compute's kernel times
# at 16 and 8 slots (CONVLAB_MBCONV_IMAGE_STAGES; call 1 has 4), then the source profile of the kernel at 4 with
# the L2 as pass 1 leaves it, in the time left. Host steps as call1.sh's (image-pass.patch as of
# this call: the ring's slots a run-time count); only 11l and the library are built.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-420}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+image-pass
CALL_GPU_ONLY='gpu/lib/|gpu/mbconv/11l_' call_build 240 || exit 4
row=mbconv/gpu/11l_fused_store_image/n128_14x14_c80_e6_k3_s1_se25_co80_silu_f16
for st in 16 8; do  # call 1 measured 4
  CONVLAB_MBCONV_IMAGE_STAGES=$st call_ncu_times "$row" 'mbconv_project_image_kernel'
  for f in "$OUT"/ncu-n128_14x14_c80*-{none,all}.csv; do [[ -f $f ]] && mv "$f" "${f%.csv}-stages$st.csv"; done
done
left=$((CALL_LIMIT - SECONDS - 10)); ((left > 150)) && left=150
if ((left >= 60)); then
  CONVLAB_NCU_CACHE=none timeout $left bench/profile_source.sh mbconv/gpu/11l_fused_store_image N=128,H=14,C=80,dtype=f16 \
    mbconv_project_image_kernel
  echo "profile: status $?"
else
  echo "profile skipped: ${left}s left"
fi
call_finish
ls -la "$OUT"
