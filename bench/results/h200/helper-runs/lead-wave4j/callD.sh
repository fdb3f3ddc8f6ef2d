# lead-wave4j call D: the dispatcher of this session's first tries. Tree: HEAD with
# ../lead-wave4e/gate-tail-on.patch, ../lead-wave3x/k8-tail.patch, copies 11q (the filed 11c) and
# 10y (the filed 10e), .scratch/rev. On an H200: lesson 11's filing run (callF.sh);
# callN.sh follows on the same warm machine. From try 3 on, any other card runs callT.sh (the block
# scripts' first GPU run) with a budget of 240 s. From try 8 on (899 s left: no filing fits), any
# card runs ../lead-wave4i/callS.sh, with ../lead-wave4i/tail-stamps.patch applied on the host too.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
[[ ${CALL_D_MEASURE:-0} == 1 ]] && exec bash bench/results/h200/helper-runs/lead-wave4i/callS.sh
case "$g" in *H200*) ;; *) echo "not an H200: callT.sh"; CALL_BUDGET=240 bash bench/results/h200/helper-runs/lead-wave4j/callT.sh; exit 3;; esac
bash bench/results/h200/helper-runs/lead-wave4j/callF.sh
