# After call1.sh on the same warm H200 (its build-gpu/ holds the patched 10e and 11c): every goal
# shape of lessons 10 and 11 with PyTorch's rows timed with the head start (the scripts' default),
# one run_gpu.sh process per lesson, so that each lesson's ratios come from one run. Not run yet.
set -x
T=${CALL_LIMIT:-450}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+z-from-x-lean+taps-place+pad-rows
mkdir -p /tmp/r10 /tmp/r11
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/r10/gpu.txt
OUT=/tmp/r10 CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_TIMEOUT=190 CONVLAB_TORCH_BUDGET=170 \
  CONVLAB_BENCH_TIMEOUT=40 timeout $((T / 2)) \
  bench/run_gpu.sh --no-tests --torch --only 'convfirst/gpu/(10c|10e|10f)_' > /tmp/r10/run.log 2>&1
cp /tmp/r10/bench-gpu.json $OUT/bench-10-torch.json 2>/dev/null
left=$((T - SECONDS))
OUT=/tmp/r11 CONVLAB_TORCH_SCRIPTS=mbconv CONVLAB_TORCH_SHAPES='128,56,56,24,6,3,1,0.25,24;128,28,28,40,6,3,1,0.25,40;128,14,14,80,6,3,1,0.25,80;128,14,14,112,6,3,1,0.25,112;128,7,7,192,6,3,1,0.25,192' \
  CONVLAB_TORCH_TIMEOUT=$((left - 60)) CONVLAB_TORCH_BUDGET=$((left - 80)) CONVLAB_BENCH_TIMEOUT=40 timeout $((left - 15)) \
  bench/run_gpu.sh --no-tests --torch --only 'mbconv/gpu/(11c|11g|11h)_' > /tmp/r11/run.log 2>&1
cp /tmp/r11/bench-gpu.json $OUT/bench-11-torch.json 2>/dev/null
cat /tmp/r10/summary.txt /tmp/r11/summary.txt > $OUT/summaries.txt 2>/dev/null
tar -czf $OUT/logs-call2.tar.gz -C /tmp --ignore-failed-read r10/run.log r10/logs.tar.gz r11/run.log r11/logs.tar.gz
cat $OUT/summaries.txt
python3 bench/bench_rows.py $OUT/bench-10-torch.json $OUT/bench-11-torch.json
