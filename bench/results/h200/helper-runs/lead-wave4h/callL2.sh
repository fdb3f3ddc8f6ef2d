# lead-wave4h call L2: right after callL.sh on the same warm H200 (its build-gpu/): PyTorch's rows at
# lesson 10's five goal shapes beside 10c, 10e, 10f and 10y, one run_gpu.sh process (the lesson-10
# half of ../lead-wave4d/call2.sh). On any other card: exit 3.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
case "$g" in *H200*) ;; *) echo "not an H200: nothing run"; exit 3;; esac
[[ -d build-gpu ]] || { echo "no build-gpu/: callL.sh did not run on this machine"; exit 4; }
T=${CALL_BUDGET:-420}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+k8-tail
mkdir -p /tmp/r10
OUT=/tmp/r10 CONVLAB_TORCH_SCRIPTS=convfirst \
  CONVLAB_TORCH_SHAPES='128,56,56,64,256,64,1;128,56,56,64,256,128,2;128,28,28,128,512,128,1;128,14,14,256,1024,256,1;128,7,7,512,2048,512,1' \
  CONVLAB_TORCH_TIMEOUT=$((T - 60)) CONVLAB_TORCH_BUDGET=$((T - 80)) CONVLAB_BENCH_TIMEOUT=40 timeout $((T - 15)) \
  bench/run_gpu.sh --no-tests --torch --only 'convfirst/gpu/(10c|10e|10f|10y)_' > /tmp/r10/run.log 2>&1
cp /tmp/r10/bench-gpu.json $OUT/bench-10-torch.json 2>/dev/null
cp /tmp/r10/summary.txt $OUT/summary.txt 2>/dev/null
tar -czf $OUT/logs-callL2.tar.gz -C /tmp --ignore-failed-read r10/run.log r10/logs.tar.gz
cat $OUT/summary.txt
python3 bench/bench_rows.py $OUT/bench-10-torch.json
