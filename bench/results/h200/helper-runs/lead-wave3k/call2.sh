# wave-3k call 2: compute-sanitizer (memcheck, racecheck, synccheck, initcheck) on the store-plan rungs
# and the cluster rung at main's GPU code (fe99678 = 6e4203b's GPU code, the filed H200 rows): racecheck
# of 11c and 11k never finished inside its earlier limits (60 s, 31 s). Here the whole call is the stage.
set -x
T=${CALL_LIMIT:-585}
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/s
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee /tmp/s/gpu.txt
start=$SECONDS
OUT=/tmp/s CONVLAB_SANITIZE_TESTS='mbconv/gpu/11c_fused_store,mbconv/gpu/11k_fused_block_cluster,mbconv/gpu/11e_fused_store_tc,mbconv/gpu/11h_fused_store_wgmma,mbconv/gpu/11i_fused_store_tc_wgmma' \
  CONVLAB_SANITIZE_TIMEOUT=$((T - 215)) CONVLAB_SANITIZE_TEST_TIMEOUT=$((T - 220)) CONVLAB_RACECHECK_FLOP_LIMIT=5e7 \
  CONVLAB_SANITIZE_JOBS=10 timeout $((T - 8)) bench/run_gpu.sh --sanitize-only > /tmp/s/run.log 2>&1
echo "run_gpu rc $? after $((SECONDS - start)) s"
cp /tmp/s/sanitize.log /tmp/s/summary.txt /tmp/s/gpu.txt $OUT/ 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read s/run.log s/logs.tar.gz
cat /tmp/s/summary.txt; grep -E "^(memcheck|racecheck|synccheck|initcheck)|^---- every" -A 24 /tmp/s/sanitize.log | head -60
