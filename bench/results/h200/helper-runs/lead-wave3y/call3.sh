# lead-wave3y call 3: the H200 filing run, or nothing. The same stages as ../lead-wave3x/call4.sh
# (10e with the k8 tail against copy 10y, PyTorch at the five ConvFirst goal shapes beside 10c, 10e
# and 10f, the four sanitizers on 10e), but it stops before building on any card but an H200: the
# k8 tail has its H100 runs (calls 1 and 2), and only an H200 run can file it. Host steps: as
# call4.sh's header.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
case "$g" in *H200*) ;; *) echo "not an H200: nothing run"; exit 3;; esac
exec bash bench/results/h200/helper-runs/lead-wave3x/call4.sh
