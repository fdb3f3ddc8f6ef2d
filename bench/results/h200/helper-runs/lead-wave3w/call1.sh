# lead-wave3w call 1 (H200 only): wave-3v's call 3 (PyTorch at C = 64 @ 56² and the stride-2 block
# beside 10c and 10f in one process), with C = 256 @ 14² added on both sides (10e and PyTorch), so
# that the C = 256 ratio has a third same-process sample on the filed code. Main's code is the
# filed rows' code (b2ace45: comment-only commits since b6c46a5). No tests: wave-3v call 2 ran
# them on this code.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
case "$g" in *H200*) ;; *) echo "not an H200: stopping"; exit 3;; esac
set -x
export CONVLAB_GIT_REV=${CONVLAB_GIT_REV:-b2ace45}  # the device's own git HEAD may be older than the tree it gets
mkdir -p /tmp/c
OUT=/tmp/c CONVLAB_TORCH_SCRIPTS=convfirst \
  CONVLAB_TORCH_SHAPES='128,56,56,64,256,64,1;128,56,56,64,256,128,2;128,14,14,256,1024,256,1' \
  CONVLAB_TORCH_TIMEOUT=110 CONVLAB_TORCH_BUDGET=80 CONVLAB_BENCH_TIMEOUT=40 timeout 420 \
  bench/run_gpu.sh --no-tests --torch --only 'convfirst/gpu/(10c|10e|10f)_' > /tmp/c/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench-10.json 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read c/logs.tar.gz c/run.log
grep -v "^  " /tmp/c/summary.txt | tee $OUT/summaries.txt
python3 bench/bench_rows.py /tmp/c/bench-gpu.json
