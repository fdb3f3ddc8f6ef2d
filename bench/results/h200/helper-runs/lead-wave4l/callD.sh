# lead-wave4l call D: the dispatcher of this session's tries. Tree: HEAD with
# ../lead-wave4e/gate-tail-on.patch, ../lead-wave3x/k8-tail.patch, copies 11q (the filed 11c) and
# 10y (the filed 10e), .scratch/rev. On an H200: lesson 11's filing run (../lead-wave4j/callF.sh;
# ../lead-wave4g/callN.sh follows on the same warm machine). On any other card: callR.sh (this
# folder), which applies tree-sums.patch there; CALL_BUDGET sets its limit. CALL_D_MEASURE=1 (once
# the filing chain, about 980 s with the start, no longer fits the budget): callR.sh on any card.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
[[ ${CALL_D_MEASURE:-0} == 1 ]] || case "$g" in *H200*) exec bash bench/results/h200/helper-runs/lead-wave4j/callF.sh;; esac
echo "callR.sh"
exec bash bench/results/h200/helper-runs/lead-wave4l/callR.sh
