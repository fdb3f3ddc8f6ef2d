# lead-wave4e, for the next session with an H200 (not run here): the filing run of what waits for the
# H200. Lesson 11: gate-tail-on.patch (11c takes the gate in pass 1's tail where gate_tail_pays)
# against copy 11q (the filed 11c). Lesson 10: ../lead-wave3x/k8-tail.patch (10e) against copy 10y
# (the filed 10e). Every lesson-10 and lesson-11 GPU test, the bench at every shape of both
# lessons' tables for the four, the sanitizers in the time left; PyTorch in h200-call2.sh on the same
# warm machine (its build-gpu/ is this call's). On any other card: exit 3, nothing run.
# Host steps (nothing of them committed):
#   git apply bench/results/h200/helper-runs/lead-wave4e/gate-tail-on.patch bench/results/h200/helper-runs/lead-wave3x/k8-tail.patch
#   git show HEAD:gpu/mbconv/11c_fused_store.cu | sed 's#11c_fused_store#11q_store_before#g' > gpu/mbconv/11q_store_before.cu
#   git show HEAD:gpu/convfirst/10e_fused_cluster.cu | sed 's#10e_fused_cluster#10y_fused_cluster_before#g' > gpu/convfirst/10y_fused_cluster_before.cu
#   mkdir -p .scratch; git rev-parse --short HEAD > .scratch/rev
# 11c with the tail compiles pass 1 twice: ≈ 300 s alone on the lent machine (wave-4e), so the
# build gets 420 s; a build cut short resumes on the same warm machine (`call_build` again).
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
case "$g" in *H200*) ;; *) echo "not an H200: nothing run"; exit 3;; esac
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-580}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+gate-tail-on+k8-tail
CALL_GPU_ONLY='gpu/lib/|gpu/(convfirst|mbconv)/|gpu/conv2d/(06a_|06b_|04a_|04b_|cudnn)|gpu/gemm/(03m_|03o_|cublas)' \
  call_build 420 || exit 4
call_stage tests 60 --no-bench --only 'convfirst/gpu/|convfirst: every GPU|mbconv/gpu/|mbconv: every GPU rung|mbconv tile|mbconv stream'
CONVLAB_BENCH_TIMEOUT=45 call_stage bench 100 --no-tests --only 'mbconv/gpu/(11c|11q)_|convfirst/gpu/(10e|10y)_'
CONVLAB_RACECHECK_FLOP_LIMIT=1e8 call_sanitize 'mbconv/gpu/11c_fused_store,convfirst/gpu/10e_fused_cluster'
call_finish
ls -la "$OUT"
