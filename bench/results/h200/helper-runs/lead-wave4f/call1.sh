# lead-wave4f call 1 (any card): the new rung 11l (pass 2 one CTA an image, the SE gate in its
# prologue, D by bulk copies: gpu/lib/mbconv_project_image.cuh) against 11c, one process. The GPU
# tests of both at the whole table (and the random-shape rung test), the bench at every SE shape,
# Nsight Compute's kernel times of 11l and 11c at C = 80 @ 14², the four sanitizers on 11l in the
# time left. Copy 11m: 11l with pass 1's split tiles in part-major order (kPartMajor), so that an
# SM's two pass-1 CTAs end apart and 11l's CTA (which fits beside one of them) starts early.
# Host steps (the patch and the copy are not committed):
#   git apply bench/results/h200/helper-runs/lead-wave4f/image-pass.patch
#   sed 's#11l_fused_store_image#11m_store_image_part_major#g; s#true, true, true, false, false, true>#true, true, true, true, false, true>#' gpu/mbconv/11l_fused_store_image.cu > gpu/mbconv/11m_store_image_part_major.cu
#   mkdir -p .scratch; git rev-parse --short HEAD > .scratch/rev
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-570}
export CONVLAB_GIT_REV=$(cat .scratch/rev)
CALL_GPU_ONLY='gpu/lib/|gpu/mbconv/(11c_|11l_|11m_)' call_build 400 || exit 4
call_stage tests 60 --no-bench --only 'mbconv/gpu/(11c_|11l_|11m_)|mbconv: every GPU rung|mbconv stream|mbconv tile|mbconv image pass 2'
CONVLAB_BENCH_TIMEOUT=100 call_stage bench 110 --no-tests --only 'mbconv/gpu/(11c|11l|11m)_'
row=mbconv/gpu/11l_fused_store_image/n128_14x14_c80_e6_k3_s1_se25_co80_silu_f16
call_ncu_times "$row" 'mbconv_(tile|project_image)_kernel'
CONVLAB_RACECHECK_FLOP_LIMIT=1e8 call_sanitize 'mbconv/gpu/11l_fused_store_image,mbconv/gpu/11m_store_image_part_major'
call_finish
ls -la "$OUT"
