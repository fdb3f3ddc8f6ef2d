# lead-wave4h call L: lesson 10 alone, for a budget that no longer holds ../lead-wave4g/callA.sh +
# callB.sh + callC.sh: the k8 tail's H200 filing run (../lead-wave3x/k8-tail.patch in 10e) against
# copy 10y (the filed 10e; host steps in ../lead-wave4e/h200-call1.sh's header, the 11c lines left
# out). Build lesson 10's GPU files, every lesson-10 GPU test, the bench of every convfirst rung that
# lesson 10's tables show plus 10y, one process; the four sanitizers on 10e in the time left.
# PyTorch's rows follow in callL2.sh on the same warm machine. On any other card: exit 3.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
case "$g" in *H200*) ;; *) echo "not an H200: nothing run"; exit 3;; esac
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-585}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+k8-tail
CALL_GPU_ONLY='gpu/lib/|gpu/convfirst/|gpu/conv2d/(06a_|06b_|04a_|04b_|cudnn)|gpu/gemm/(03m_|03o_|cublas)' \
  call_build 330 || { call_finish; exit 4; }
call_stage tests 60 --no-bench --only 'convfirst/gpu/|convfirst: every GPU'
CONVLAB_BENCH_TIMEOUT=40 call_stage bench 120 --no-tests --only 'convfirst/gpu/'
CONVLAB_RACECHECK_FLOP_LIMIT=1e8 call_sanitize 'convfirst/gpu/10e_fused_cluster'
call_finish
ls -la "$OUT"
