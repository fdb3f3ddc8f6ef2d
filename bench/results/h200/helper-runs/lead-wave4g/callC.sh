# lead-wave4g call C: PyTorch's rows at every goal shape of both lessons, right after callA/B (or AB)
# on the same warm H200 (its build-gpu/): ../lead-wave4e/h200-call2.sh with 11r (the stage walk,
# callH.sh's host steps) beside 11c and 11q. On any other card: exit 3.
CALL2_TREE=gate-tail-on+k8-tail+stage-walk CALL2_MBCONV='11c|11g|11h|11q|11r' \
  bash bench/results/h200/helper-runs/lead-wave4d/call2.sh
