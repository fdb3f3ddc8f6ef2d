# lead-wave4j call F: ../lead-wave4g/callM.sh (lesson 11's filing run of the gate tail: build, every
# lesson-11 GPU test, the bench of 11c against 11q at the fifteen SE shapes, the sanitizers on 11c)
# with one change: the build takes lesson 10's files too (../lead-wave4h/callL.sh's filter), so
# that lesson 10's filing run (the k8 tail against copy 10y) can follow on the same warm machine
# without a build of its own. 11c's unit with the gate tail (about four minutes) is the build's
# longest; lesson 10's units compile beside it. PyTorch's rows for lesson 11 follow in
# ../lead-wave4g/callN.sh. On any other card: exit 3.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
case "$g" in *H200*) ;; *) echo "not an H200: nothing run"; exit 3;; esac
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-590}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+gate-tail-on+k8-tail
CALL_GPU_ONLY='gpu/mbconv/(11c_|11q_)|gpu/convfirst/|gpu/conv2d/(06a_|06b_|04a_|04b_|cudnn)|gpu/gemm/(03m_|03o_|cublas)' \
  call_build 420 || { call_finish; exit 4; }
call_stage tests 50 --no-bench --only 'mbconv/gpu/|mbconv: every GPU rung|mbconv tile|mbconv stream'
CONVLAB_BENCH_TIMEOUT=90 call_stage bench 100 --no-tests --only 'mbconv/gpu/(11c|11q)_'
CONVLAB_SANITIZE_JOBS=4 CONVLAB_RACECHECK_FLOP_LIMIT=1e8 call_sanitize 'mbconv/gpu/11c_fused_store'
call_finish
ls -la "$OUT"
