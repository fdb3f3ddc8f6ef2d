# lead-wave3v call 1 (any card). Lesson 10: the filing form of lead-wave3u/call2.sh (10e = the two
# waiting patches + conv-ahead-128; copies 10x = HEAD's 10c, 10y = HEAD's 10e, 10z = 10e with the
# two patches only), with PyTorch at the three large-C goal shapes on an H200 (the filing run);
# on another card lesson 10's bench is skipped (four H100 calls measured it). Lesson 11: 11c with
# padded E's places from a table made once a CTA (kPlaceTable) against copy 11q = HEAD's 11c.
# One process each: 1. tests of all of them, the host tile and hopper tests, the random-shape
# sweeps; 2. lesson 10's bench; 3. 11c and 11q over the SE bench shapes; 4. the four sanitizers on
# 10e, 10c and 11c. Host steps: lead-wave3u/call2.sh's header, then the 11q copy:
#   git show HEAD:gpu/mbconv/11c_fused_store.cu | sed 's#11c_fused_store#11q_fused_store_before#g' > gpu/mbconv/11q_fused_store_before.cu
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
H200=0; case "$g" in *H200*) H200=1;; esac
set -x
T=${CALL_LIMIT:-570}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+lane-taps-10c+t-blocks-512+conv-ahead-128+place-table
mkdir -p /tmp/t /tmp/c /tmp/b /tmp/s
OUT=/tmp/t timeout 270 bench/run_gpu.sh --no-bench \
  --only 'random shapes|hopper|convfirst/gpu/(10c|10x|10e|10y|10z)_|mbconv/gpu/(11c|11q)_|mbconv tile' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
if [ $H200 = 1 ]; then
  OUT=/tmp/c CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_SHAPES='128,28,28,128,512,128,1;128,14,14,256,1024,256,1;128,7,7,512,2048,512,1' \
    CONVLAB_TORCH_TIMEOUT=80 CONVLAB_TORCH_BUDGET=70 CONVLAB_BENCH_TIMEOUT=40 timeout 150 \
    bench/run_gpu.sh --no-tests --torch --only 'convfirst/gpu/(10c|10x|10e|10y|10z|10f)_' > /tmp/c/run.log 2>&1
  cp /tmp/c/bench-gpu.json $OUT/bench-10.json 2>/dev/null
fi
left=$((T - SECONDS))
OUT=/tmp/b CONVLAB_BENCH_TIMEOUT=$((left > 200 ? 100 : left - 100)) timeout $((left > 200 ? 110 : left - 90)) \
  bench/run_gpu.sh --no-tests --only 'mbconv/gpu/(11c|11q)_' > /tmp/b/run.log 2>&1
cp /tmp/b/bench-gpu.json $OUT/bench-11.json 2>/dev/null
left=$((T - SECONDS))
if [ $left -gt 50 ]; then
  OUT=/tmp/s CONVLAB_SANITIZE_TESTS='convfirst/gpu/10e_fused_cluster,convfirst/gpu/10c_fused_wgmma,mbconv/gpu/11c_fused_store' \
    CONVLAB_SANITIZE_TIMEOUT=$((left - 20)) CONVLAB_SANITIZE_TEST_TIMEOUT=$((left - 25)) CONVLAB_RACECHECK_FLOP_LIMIT=5e7 \
    CONVLAB_SANITIZE_JOBS=8 timeout $((left - 10)) bench/run_gpu.sh --sanitize-only > /tmp/s/run.log 2>&1
  cp /tmp/s/sanitize.log $OUT/ 2>/dev/null
fi
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log c/logs.tar.gz c/run.log b/logs.tar.gz b/run.log s/run.log s/logs.tar.gz
cat /tmp/t/summary.txt /tmp/c/summary.txt /tmp/b/summary.txt 2>/dev/null | grep -v "^  " | tee $OUT/summaries.txt
grep -E "^(memcheck|racecheck|synccheck|initcheck) " /tmp/s/sanitize.log 2>/dev/null
python3 bench/bench_rows.py /tmp/c/bench-gpu.json 2>/dev/null; python3 bench/bench_rows.py /tmp/b/bench-gpu.json
