# lead-wave4g call M: the gate tail's H200 filing run for lesson 11 alone, in one call, for a
# budget that no longer holds callA.sh + callB.sh + callC.sh (lesson 10's k8 tail, level at
# C = 256 on an H100 twice, waits). Tree: HEAD with ../lead-wave4e/gate-tail-on.patch and copy 11q
# (the filed 11c; host steps in ../lead-wave4e/h200-call1.sh's header, the 10e lines left out).
# Build, every lesson-11 GPU test, the bench of 11c against 11q at the fifteen SE shapes, the
# four sanitizers on 11c; PyTorch's rows at the five goal shapes follow in callN.sh on the same
# warm machine. On any other card: exit 3.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
case "$g" in *H200*) ;; *) echo "not an H200: nothing run"; exit 3;; esac
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-590}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+gate-tail-on
# wave-4i: the build's limit raised from 360 to 420 s before any run: 11c's unit with the gate tail
# compiles for about four minutes, and a cold partial build did not finish in 260 s on an H200
# (../lead-wave4i/README.md, try 20).
CALL_GPU_ONLY='gpu/lib/|gpu/mbconv/(11c_|11q_)' call_build 420 || { call_finish; exit 4; }
call_stage tests 50 --no-bench --only 'mbconv/gpu/|mbconv: every GPU rung|mbconv tile|mbconv stream'
CONVLAB_BENCH_TIMEOUT=90 call_stage bench 100 --no-tests --only 'mbconv/gpu/(11c|11q)_'
CONVLAB_SANITIZE_JOBS=4 CONVLAB_RACECHECK_FLOP_LIMIT=1e8 call_sanitize 'mbconv/gpu/11c_fused_store'
call_finish
ls -la "$OUT"
