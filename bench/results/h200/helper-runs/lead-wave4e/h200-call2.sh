# lead-wave4e h200-call2 (not run here): only on an H200, right after h200-call1.sh on the same warm
# machine (its build-gpu/ holds lessons 10's and 11's GPU files with the k8 tail in 10e, the gate
# tail in 11c, copies 10y and 11q). Every goal shape of both lessons with PyTorch's rows, one
# run_gpu.sh process a lesson: wave-4d's call2.sh with this tree's name and 11q for 11y.
CALL2_TREE=gate-tail-on+k8-tail CALL2_MBCONV='11c|11g|11h|11q' \
  bash bench/results/h200/helper-runs/lead-wave4d/call2.sh
