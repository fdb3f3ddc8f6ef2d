# lead-wave3y call 4: call3.sh's filing run reordered for a budget of ≈ 550 s: the sanitizers run
# right after the tests (≈ 30 s on an H100 in call 1), and the bench with PyTorch takes the time
# left, at most 240 s. Stops before building on any card but an H200. Host steps: as
# ../lead-wave3x/call4.sh's header.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
case "$g" in *H200*) ;; *) echo "not an H200: nothing run"; exit 3;; esac
source bench/call_stages.sh
export CONVLAB_GIT_REV=$(cat .scratch/rev)+k8-tail
LIMIT=${CALL_BUDGET:-520}
call_build 300 || exit 4
call_stage tests 60 --no-bench --only 'convfirst/gpu/(10e|10y)_'
CALL_LIMIT=$((SECONDS + 50)) call_sanitize 'convfirst/gpu/10e_fused_cluster'
left=$((LIMIT - SECONDS - 10)); ((left > 240)) && left=240
echo "bench limit: ${left}s"
CONVLAB_TORCH_SCRIPTS=convfirst \
  CONVLAB_TORCH_SHAPES='128,56,56,64,256,64,1;128,56,56,64,256,128,2;128,28,28,128,512,128,1;128,14,14,256,1024,256,1;128,7,7,512,2048,512,1' \
  CONVLAB_TORCH_TIMEOUT=$((left - 70)) CONVLAB_TORCH_BUDGET=$((left - 90)) CONVLAB_BENCH_TIMEOUT=50 \
  call_stage bench $left --no-tests --torch --only 'convfirst/gpu/(10c|10e|10f|10y)_'
call_finish
