# lead-wave3z call 1 (any card). On an H200: the k8 tail's filing run (../lead-wave3y/call4.sh;
# host steps: ../lead-wave3x/call4.sh's header). On any other card: lesson 11's stream under
# Nsight Compute with the L2 as the block leaves it, which wave-3y's NOTES ask for before any
# change to it:
#   1. the source profile of 11c's stream at C = 80 @ 14² (CONVLAB_NCU_CACHE=none; its first run
#      on a device);
#   2. the three kernels' times at C = 24 @ 56², natural L2 and flushed (wave-3y's call 5 ran out
#      of budget before this shape);
#   3. in the time left, the same profile flushed, to read where the stall samples move.
# Lesson 11's NOTES (wave-3z) has the prediction.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
# The filing run needs ≈ 480 s (a cold build, the sanitizers, PyTorch's modes); with less, the profile.
case "$g" in *H200*) ((${CALL_BUDGET:-560} >= 480)) && exec bash bench/results/h200/helper-runs/lead-wave3y/call4.sh;; esac
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-560}
call_build 250 || exit 4
shape=N=128,H=14,C=80,dtype=f16
profile() {  # $1: none or all
  local cc=$1 left=$((CALL_LIMIT - SECONDS - 10))
  ((left < 60)) && { echo "skipped the $cc profile: ${left}s left"; return; }
  ((left > 150)) && left=150
  CONVLAB_NCU_CACHE=$cc timeout $left bench/profile_source.sh mbconv/gpu/11c_fused_store $shape mbconv_project_stream_kernel
  echo "profile $cc: status $?"  # source-…-cache-none.tar.gz and source-….tar.gz (flushed)
}
profile none
call_ncu_times mbconv/gpu/11c_fused_store/n128_56x56_c24_e6_k3_s1_se25_co24_silu_f16 \
  'mbconv_tile_kernel|se_gate_kernel|mbconv_project_stream_kernel'
profile all
ls -la "$OUT"
