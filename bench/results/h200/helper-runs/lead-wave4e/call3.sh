# lead-wave4e call 3 (any card): the landed form of the gate tail (the rule gate_tail_pays, launch_stage
# returning false where it does not pay) as gate-tail-on.patch puts it in 11c, against the filed 11c
# (copy 11q), one process: tests of both and of 11e (flag off) at the whole GPU test table, the
# bench at the fifteen SE shapes, the four sanitizers on 11c in the time left.
# Host steps (the copy and the patched 11c are not committed):
#   git show HEAD:gpu/mbconv/11c_fused_store.cu | sed 's#11c_fused_store#11q_store_before#g' > gpu/mbconv/11q_store_before.cu
#   git apply bench/results/h200/helper-runs/lead-wave4e/gate-tail-on.patch
#   mkdir -p .scratch; git rev-parse --short HEAD > .scratch/rev
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-400}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+gate-tail-on
CALL_GPU_ONLY='gpu/lib/|gpu/mbconv/(11c_|11q_|11e_)' call_build 300 || exit 4
call_stage tests 40 --no-bench --only 'mbconv/gpu/(11c_|11q_|11e_)|mbconv stream|mbconv tile'
CONVLAB_BENCH_TIMEOUT=60 call_stage bench 70 --no-tests --only 'mbconv/gpu/(11c|11q)_'
CONVLAB_RACECHECK_FLOP_LIMIT=1e8 call_sanitize 'mbconv/gpu/11c_fused_store'
call_finish
ls -la "$OUT"
