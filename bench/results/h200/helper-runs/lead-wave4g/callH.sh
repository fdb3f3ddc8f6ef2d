# lead-wave4g call H (either card; for an H100 when no H200 comes): the stage walk (kStageWalk,
# stage-walk.patch) measured alone. Rungs: 11q (the filed 11c), 11c (wave-4e's gate tail on) and
# 11r (11c with the walk too), so 11r against 11c is the walk alone. Host steps: callA.sh's, then
#   git apply bench/results/h200/helper-runs/lead-wave4g/stage-walk.patch
#   sed 's#11c_fused_store#11r_store_walk#g; s#, false, true>,#, false, true, true>,#' gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11r_store_walk.cu
# Every lesson-11 GPU test on the three, the bench at the fifteen SE shapes (one process), then
# the stream kernel alone under ncu at C = 80 @ 14² (natural L2 and flushed) for 11c and 11r, and
# the sanitizers on 11r in the time left.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-590}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+gate-tail-on+stage-walk
CALL_GPU_ONLY='gpu/lib/|gpu/mbconv/(11c_|11q_|11r_)' call_build 400 || { call_finish; exit 4; }
call_stage tests 60 --no-bench --only 'mbconv/gpu/|mbconv: every GPU rung|mbconv tile|mbconv stream'
CONVLAB_BENCH_TIMEOUT=110 call_stage bench 120 --no-tests --only 'mbconv/gpu/(11c|11q|11r)_'
for r in 11c_fused_store 11r_store_walk; do
  call_ncu_times "mbconv/gpu/$r/n128_14x14_c80_e6_k3_s1_se25_co80_silu_f16" mbconv_project_stream
done
CONVLAB_RACECHECK_FLOP_LIMIT=1e8 call_sanitize 'mbconv/gpu/11r_store_walk'
call_finish
ls -la "$OUT"
