# lead-wave4g call AB: callA.sh and callB.sh in one call, for when the budget left no longer holds
# three calls (start, build, tests, bench; no sanitizers: callB.sh's last stage runs them on the
# same warm machine if time is left). Then ../lead-wave4e/h200-call2.sh (PyTorch's rows). Host steps
# as callA.sh's. On any other card: exit 3.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
case "$g" in *H200*) ;; *) echo "not an H200: nothing run"; exit 3;; esac
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-590}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+gate-tail-on+k8-tail
CALL_GPU_ONLY='gpu/lib/|gpu/(convfirst|mbconv)/|gpu/conv2d/(06a_|06b_|04a_|04b_|cudnn)|gpu/gemm/(03m_|03o_|cublas)' \
  call_build 440 || { call_finish; exit 4; }
call_stage tests 45 --no-bench --only 'convfirst/gpu/|convfirst: every GPU|mbconv/gpu/|mbconv: every GPU rung|mbconv tile|mbconv stream'
left=$((CALL_LIMIT - SECONDS - 10))
((left > 30)) && CONVLAB_BENCH_TIMEOUT=$((left / 2)) call_stage bench $left --no-tests --only 'mbconv/gpu/(11c|11q|11r)_|convfirst/gpu/(10e|10y)_'
call_finish
ls -la "$OUT"
