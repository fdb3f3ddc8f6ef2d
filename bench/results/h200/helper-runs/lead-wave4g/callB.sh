# lead-wave4g call B: right after callA.sh on the same warm machine (its build-gpu/). The bench of
# 11c (gate tail on) against 11q and of 10e (k8 tail) against 10y at every shape of both lessons'
# tables, one process; then the sanitizers on 11c and 10e in the time left. A build that call A
# left unfinished resumes here first. On any other card: exit 3.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
case "$g" in *H200*) ;; *) echo "not an H200: nothing run"; exit 3;; esac
[[ -d build-gpu ]] || { echo "no build-gpu/: callA.sh did not run on this machine"; exit 4; }
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-585}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+gate-tail-on+k8-tail
CALL_GPU_ONLY='gpu/lib/|gpu/(convfirst|mbconv)/|gpu/conv2d/(06a_|06b_|04a_|04b_|cudnn)|gpu/gemm/(03m_|03o_|cublas)' \
  call_build 300 || exit 4
[[ -n $CALLB_TESTS ]] && call_stage tests 90 --no-bench --only 'convfirst/gpu/|convfirst: every GPU|mbconv/gpu/|mbconv: every GPU rung|mbconv tile|mbconv stream'
CONVLAB_BENCH_TIMEOUT=120 call_stage bench 250 --no-tests --only 'mbconv/gpu/(11c|11q|11r)_|convfirst/gpu/(10e|10y)_'
CONVLAB_RACECHECK_FLOP_LIMIT=1e8 call_sanitize 'mbconv/gpu/11c_fused_store,convfirst/gpu/10e_fused_cluster'
call_finish
ls -la "$OUT"
