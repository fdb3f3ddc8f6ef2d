# lead-wave4h call T (either card; an H100 when no H200 comes): the tail's staged SE weights
# (kGateTail = 2: on main at 48b4297, where this call ran; since then only tail-staged.patch) measured
# against the tail as wave-4e measured it. Not kept (README.md).
# Host steps (on main after this session): git apply tail-staged.patch and ../lead-wave4e/gate-tail-on.patch, then
#   sed 's#11c_fused_store#11r_store_tail_l2#g' gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11r_store_tail_l2.cu
#   sed -i 's#, false, true>,#, false, 2>,#' gpu/mbconv/11c_fused_store.cu
#   git show HEAD:gpu/mbconv/11c_fused_store.cu | sed 's#11c_fused_store#11q_store_before#g' > gpu/mbconv/11q_store_before.cu
# Rungs: 11c (the tail, weights staged), 11r (the tail, weights from L2), 11q (the filed 11c, no
# tail). 11c and 11r launch the same kernels (w_off is a launch argument). Every lesson-11 GPU test
# on the three, the bench at the fifteen SE shapes (one process), pass 1 with its tail alone under
# ncu at C = 80 @ 14² for 11c and 11r, the sanitizers on 11c in the time left.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-590}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+gate-tail-staged
CALL_GPU_ONLY='gpu/lib/|gpu/mbconv/(11c_|11q_|11r_)' call_build 400 || { call_finish; exit 4; }
call_stage tests 60 --no-bench --only 'mbconv/gpu/|mbconv: every GPU rung|mbconv tile|mbconv stream'
CONVLAB_BENCH_TIMEOUT=110 call_stage bench 120 --no-tests --only 'mbconv/gpu/(11c|11q|11r)_'
for r in 11c_fused_store 11r_store_tail_l2; do
  call_ncu_times "mbconv/gpu/$r/n128_14x14_c80_e6_k3_s1_se25_co80_silu_f16" mbconv_store_gate_kernel
done
CONVLAB_RACECHECK_FLOP_LIMIT=1e8 call_sanitize 'mbconv/gpu/11c_fused_store'
call_finish
ls -la "$OUT"
