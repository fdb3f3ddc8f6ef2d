# lead-wave4e call 2 (any card): the gate tail's second form (one thread fences, the counts left
# zero by every launch) against 11c, one process: 11x (GateAt::tail: counts in the workspace, a
# memset before pass 1), 11v (GateAt::tail_static: the module's counts, no memset). Tests at the
# whole GPU test table, the bench at the fifteen SE shapes, then the four sanitizers on both copies
# in the time left. Host steps (the copies are not committed):
#   for c in "11x_store_gate_tail:false, GateAt::tail" "11v_store_gate_static:false, GateAt::tail_static"; do
#     n=${c%%:*}; f=${c#*:}; sed "s#11c_fused_store#$n#g; s#run_store_plan<false, false, true, true, true, true, true>#run_store_plan<false, false, true, true, true, true, true, $f>#" gpu/mbconv/11c_fused_store.cu > gpu/mbconv/$n.cu; done
#   mkdir -p .scratch; git rev-parse --short HEAD > .scratch/rev
# A copy compiles pass 1 with and without the tail: ≈ 300 s a file on the lent machine (call 1).
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-560}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+gate-tail-2
CALL_GPU_ONLY='gpu/lib/|gpu/mbconv/(11c_|11x_|11v_)' call_build 420 || exit 4
call_stage tests 50 --no-bench --only 'mbconv/gpu/(11c_|11x_|11v_)|mbconv stream|mbconv tile'
CONVLAB_BENCH_TIMEOUT=100 call_stage bench 110 --no-tests --only 'mbconv/gpu/(11c|11x|11v)_'
CONVLAB_RACECHECK_FLOP_LIMIT=1e8 call_sanitize 'mbconv/gpu/11x_store_gate_tail,mbconv/gpu/11v_store_gate_static'
call_finish
ls -la "$OUT"
