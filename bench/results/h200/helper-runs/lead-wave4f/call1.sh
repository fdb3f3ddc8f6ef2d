# lead-wave4f call 1 (any card): the new rung 11l (pass 2 one CTA an image, the SE gate in its
# prologue, D by bulk copies: gpu/lib/mbconv_project_image.cuh) against 11c, one process. The GPU
# tests of both at the whole table (and the random-shape rung test), the bench at every SE shape,
# Nsight Compute's kernel times of 11l and 11c at C = 80 @ 14², the four sanitizers on 11l in the
# time left. Host steps: mkdir -p .scratch; git rev-parse --short HEAD > .scratch/rev
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-570}
export CONVLAB_GIT_REV=$(cat .scratch/rev)
CALL_GPU_ONLY='gpu/lib/|gpu/mbconv/(11c_|11l_)' call_build 400 || exit 4
call_stage tests 60 --no-bench --only 'mbconv/gpu/(11c_|11l_)|mbconv: every GPU rung|mbconv stream|mbconv tile|mbconv image pass 2'
CONVLAB_BENCH_TIMEOUT=100 call_stage bench 110 --no-tests --only 'mbconv/gpu/(11c|11l)_'
row=mbconv/gpu/11l_fused_store_image/n128_14x14_c80_e6_k3_s1_se25_co80_silu_f16
call_ncu_times "$row" 'mbconv_(tile|project_image)_kernel'
CONVLAB_RACECHECK_FLOP_LIMIT=1e8 call_sanitize 'mbconv/gpu/11l_fused_store_image'
call_finish
ls -la "$OUT"
