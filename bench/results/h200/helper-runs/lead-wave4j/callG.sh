# lead-wave4j call G: ../lead-wave4h/callL.sh (lesson 10's filing run of the k8 tail against copy
# 10y: every lesson-10 GPU test, the bench of every convfirst rung, the sanitizers on 10e) on the
# warm H200 that ran callF.sh, whose build it reuses (the same filter, so nothing is rebuilt).
# PyTorch's rows for lesson 10 follow in ../lead-wave4h/callL2.sh. On any other card: exit 3.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
case "$g" in *H200*) ;; *) echo "not an H200: nothing run"; exit 3;; esac
[[ -d build-gpu ]] || { echo "no build-gpu/: callF.sh did not run on this machine"; exit 4; }
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-585}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+gate-tail-on+k8-tail
CALL_GPU_ONLY='gpu/mbconv/(11c_|11q_)|gpu/convfirst/|gpu/conv2d/(06a_|06b_|04a_|04b_|cudnn)|gpu/gemm/(03m_|03o_|cublas)' \
  call_build 120 || { call_finish; exit 4; }
call_stage tests 60 --no-bench --only 'convfirst/gpu/|convfirst: every GPU'
CONVLAB_BENCH_TIMEOUT=40 call_stage bench 120 --no-tests --only 'convfirst/gpu/'
CONVLAB_RACECHECK_FLOP_LIMIT=1e8 call_sanitize 'convfirst/gpu/10e_fused_cluster'
call_finish
ls -la "$OUT"
