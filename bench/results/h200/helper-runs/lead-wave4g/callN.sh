# lead-wave4g call N: right after callM.sh on the same warm H200 (its build-gpu/ holds 11c with the
# gate tail and 11q): PyTorch's rows at lesson 11's five goal shapes beside 11c and 11q, one
# run_gpu.sh process (the lesson-11 half of ../lead-wave4d/call2.sh). On any other card: exit 3.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
case "$g" in *H200*) ;; *) echo "not an H200: nothing run"; exit 3;; esac
[[ -d build-gpu ]] || { echo "no build-gpu/: callM.sh did not run on this machine"; exit 4; }
T=${CALL_BUDGET:-300}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+gate-tail-on
mkdir -p /tmp/r11
OUT=/tmp/r11 CONVLAB_TORCH_SCRIPTS=mbconv \
  CONVLAB_TORCH_SHAPES='128,56,56,24,6,3,1,0.25,24;128,28,28,40,6,3,1,0.25,40;128,14,14,80,6,3,1,0.25,80;128,14,14,112,6,3,1,0.25,112;128,7,7,192,6,3,1,0.25,192' \
  CONVLAB_TORCH_TIMEOUT=$((T - 60)) CONVLAB_TORCH_BUDGET=$((T - 80)) CONVLAB_BENCH_TIMEOUT=40 timeout $((T - 15)) \
  bench/run_gpu.sh --no-tests --torch --only 'mbconv/gpu/(11c|11q)_.*(56x56_c24_e6_k3_s1_se25_co24|28x28_c40_e6_k3_s1_se25_co40|14x14_c80_e6_k3_s1_se25_co80|14x14_c112_e6_k3_s1_se25_co112|7x7_c192_e6_k3_s1_se25_co192)_' > /tmp/r11/run.log 2>&1
cp /tmp/r11/bench-gpu.json $OUT/bench-11-torch.json 2>/dev/null
cp /tmp/r11/summary.txt $OUT/summary.txt 2>/dev/null
tar -czf $OUT/logs-callN.tar.gz -C /tmp --ignore-failed-read r11/run.log r11/logs.tar.gz
cat $OUT/summary.txt
python3 bench/bench_rows.py $OUT/bench-11-torch.json
