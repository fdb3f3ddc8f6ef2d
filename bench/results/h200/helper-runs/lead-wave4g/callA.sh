# lead-wave4g call A: lead-wave4e/h200-call1.sh split in two so that no stage is cut short: the
# build (a fresh machine: ≈ 300 s for 11c with the gate tail alone, wave-4e) and the GPU tests of
# lessons 10 and 11 here; bench and sanitizers in callB.sh on the same warm machine. Tree: HEAD with
# lead-wave4e/gate-tail-on.patch and lead-wave3x/k8-tail.patch, copies 11q (the filed 11c) and 10y
# (the filed 10e); host steps in lead-wave4e/h200-call1.sh's header. The regexes below also take a
# copy 11r (callH.sh's stage walk), which this session measured and dropped: leave it out. On any
# other card: exit 3.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
case "$g" in *H200*) ;; *) echo "not an H200: nothing run"; exit 3;; esac
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-585}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+gate-tail-on+k8-tail
CALL_GPU_ONLY='gpu/lib/|gpu/(convfirst|mbconv)/|gpu/conv2d/(06a_|06b_|04a_|04b_|cudnn)|gpu/gemm/(03m_|03o_|cublas)' \
  call_build 500 || exit 4
left=$((CALL_LIMIT - SECONDS - 10))
((left > 30)) && call_stage tests $left --no-bench --only 'convfirst/gpu/|convfirst: every GPU|mbconv/gpu/|mbconv: every GPU rung|mbconv tile|mbconv stream'
call_finish
ls -la "$OUT"
