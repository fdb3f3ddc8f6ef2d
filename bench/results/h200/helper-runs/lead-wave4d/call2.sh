# lead-wave4d call 2: only on an H200, right after call1.sh on the same warm machine (its build-gpu/
# holds lessons 10's and 11's GPU files with the k8 tail in 10e and copies 10y and 11y). Every goal
# shape of both lessons with PyTorch's rows, one run_gpu.sh process a lesson, as
# ../lead-wave3s/call4-torch.sh: the filing run if call 1 keeps the k8 tail (10e) or the ring (11y).
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
case "$g" in *H200*) ;; *) echo "not an H200: nothing run"; exit 3;; esac
[[ -d build-gpu ]] || { echo "no build-gpu/: call1.sh did not run on this machine"; exit 4; }
T=${CALL_BUDGET:-540}
# CALL2_TREE (the revision's suffix) and CALL2_MBCONV (lesson 11's rungs) let a later session's
# H200 call reuse this one (lead-wave4e/h200-call2.sh); the defaults are this session's.
export CONVLAB_GIT_REV=$(cat .scratch/rev)+${CALL2_TREE:-ring-gates+k8-tail}
mkdir -p /tmp/r10 /tmp/r11
OUT=/tmp/r10 CONVLAB_TORCH_SCRIPTS=convfirst \
  CONVLAB_TORCH_SHAPES='128,56,56,64,256,64,1;128,56,56,64,256,128,2;128,28,28,128,512,128,1;128,14,14,256,1024,256,1;128,7,7,512,2048,512,1' \
  CONVLAB_TORCH_TIMEOUT=190 CONVLAB_TORCH_BUDGET=170 CONVLAB_BENCH_TIMEOUT=40 timeout $((T / 2)) \
  bench/run_gpu.sh --no-tests --torch --only 'convfirst/gpu/(10c|10e|10f|10y)_' > /tmp/r10/run.log 2>&1
cp /tmp/r10/bench-gpu.json $OUT/bench-10-torch.json 2>/dev/null
left=$((T - SECONDS))
OUT=/tmp/r11 CONVLAB_TORCH_SCRIPTS=mbconv \
  CONVLAB_TORCH_SHAPES='128,56,56,24,6,3,1,0.25,24;128,28,28,40,6,3,1,0.25,40;128,14,14,80,6,3,1,0.25,80;128,14,14,112,6,3,1,0.25,112;128,7,7,192,6,3,1,0.25,192' \
  CONVLAB_TORCH_TIMEOUT=$((left - 60)) CONVLAB_TORCH_BUDGET=$((left - 80)) CONVLAB_BENCH_TIMEOUT=40 timeout $((left - 15)) \
  bench/run_gpu.sh --no-tests --torch --only "mbconv/gpu/(${CALL2_MBCONV:-11c|11g|11h|11y})_.*("'56x56_c24_e6_k3_s1_se25_co24|28x28_c40_e6_k3_s1_se25_co40|14x14_c80_e6_k3_s1_se25_co80|14x14_c112_e6_k3_s1_se25_co112|7x7_c192_e6_k3_s1_se25_co192)_' > /tmp/r11/run.log 2>&1
cp /tmp/r11/bench-gpu.json $OUT/bench-11-torch.json 2>/dev/null
cat /tmp/r10/summary.txt /tmp/r11/summary.txt > $OUT/summaries.txt 2>/dev/null
tar -czf $OUT/logs-call2.tar.gz -C /tmp --ignore-failed-read r10/run.log r10/logs.tar.gz r11/run.log r11/logs.tar.gz
cat $OUT/summaries.txt
python3 bench/bench_rows.py $OUT/bench-10-torch.json $OUT/bench-11-torch.json
