# lead-wave3v call 3 (H200 only; the session's last 355 s of device time): PyTorch at the two goal
# shapes call 2 did not time (C = 64 @ 56², and the stride-2 block C = 64 @ 56² -> C = 128 @ 28²)
# beside 10c and 10f in one process, at main's code (b6c46a5, the filed rows' code), so that
# those two ratios come from one run as well. No tests (call 2 ran them on this code).
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
case "$g" in *H200*) ;; *) echo "not an H200: stopping"; exit 3;; esac
set -x
export CONVLAB_GIT_REV=${CONVLAB_GIT_REV:-b6c46a5}  # the device's own git HEAD may be older than the tree it gets
mkdir -p /tmp/c
OUT=/tmp/c CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_SHAPES='128,56,56,64,256,64,1;128,56,56,64,256,128,2' \
  CONVLAB_TORCH_TIMEOUT=70 CONVLAB_TORCH_BUDGET=50 CONVLAB_BENCH_TIMEOUT=30 timeout 300 \
  bench/run_gpu.sh --no-tests --torch --only 'convfirst/gpu/(10c|10f)_' > /tmp/c/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench-10.json 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read c/logs.tar.gz c/run.log
grep -v "^  " /tmp/c/summary.txt | tee $OUT/summaries.txt
python3 bench/bench_rows.py /tmp/c/bench-gpu.json
