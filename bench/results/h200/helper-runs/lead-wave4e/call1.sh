# lead-wave4e call 1 (any card): the SE gate in pass 1's tail (run_store_plan's kGateTail, off in every
# rung on main) against 11c, one process. Copies: 11x = 11c with kGateTail; 11w = 11c with kGateTail
# and kPartMajor. Tests of the three at the whole GPU test table; the bench at every SE shape of the
# table (fifteen); the four sanitizers on 11x and 11w. Prediction: lesson 11's NOTES, wave-4e.
# Host steps (the copies are not committed):
#   for c in "11x_store_gate_tail:false, true" "11w_store_tail_part_major:true, true"; do
#     n=${c%%:*}; f=${c#*:}; sed "s#11c_fused_store#$n#g; s#run_store_plan<false, false, true, true, true, true, true>#run_store_plan<false, false, true, true, true, true, true, $f>#" gpu/mbconv/11c_fused_store.cu > gpu/mbconv/$n.cu; done
#   mkdir -p .scratch; git rev-parse --short HEAD > .scratch/rev
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-540}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+gate-tail
CALL_GPU_ONLY='gpu/lib/|gpu/mbconv/(11c_|11x_|11w_)' call_build 240 || exit 4
call_stage tests 60 --no-bench --only 'mbconv/gpu/(11c_|11x_|11w_)|mbconv stream|mbconv tile'
CONVLAB_BENCH_TIMEOUT=30 call_stage bench 170 --no-tests --only 'mbconv/gpu/(11c|11x|11w)_'
CONVLAB_RACECHECK_FLOP_LIMIT=1e8 call_sanitize 'mbconv/gpu/11x_store_gate_tail,mbconv/gpu/11w_store_tail_part_major'
call_finish
ls -la "$OUT"
