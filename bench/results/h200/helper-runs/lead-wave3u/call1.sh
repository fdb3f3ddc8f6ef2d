# lead-wave3u call 1 (any card). Lesson 10: 10e with the next tile's conv under the last projects
# (kConvAhead, pairs only) on top of the two waiting patches (lane-taps-10c, t-blocks-512).
# Lesson 11: 11c with pass 1's φ from halved sums (kSiluHalf). Host-made copies: 10x = HEAD's 10c,
# 10y = HEAD's 10e, 10z = 10e with the two patches only, 11q = HEAD's 11c (flag off). One process
# each: 1. tests of all of them, the host tile and hopper tests, the random-shape sweeps;
# 2. the lesson-10 rungs and copies (with PyTorch at the three large-C goal shapes on an H200);
# 3. 11c and 11q over the SE bench shapes; 4. compute-sanitizer's four tools on 10e, then 11c.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
TORCH=; STAGE2=70; case "$g" in *H200*) TORCH=--torch; STAGE2=150;; esac
set -x
T=${CALL_LIMIT:-560}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+lane-taps-10c+t-blocks-512+conv-ahead+silu-half
mkdir -p /tmp/t /tmp/c /tmp/b /tmp/s
OUT=/tmp/t timeout 260 bench/run_gpu.sh --no-bench \
  --only 'random shapes|hopper|convfirst/gpu/(10c|10x|10e|10y|10z)_|mbconv/gpu/(11c|11q)_|mbconv tile' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
OUT=/tmp/c CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_SHAPES='128,28,28,128,512,128,1;128,14,14,256,1024,256,1;128,7,7,512,2048,512,1' \
  CONVLAB_TORCH_TIMEOUT=80 CONVLAB_TORCH_BUDGET=70 CONVLAB_BENCH_TIMEOUT=40 timeout $STAGE2 \
  bench/run_gpu.sh --no-tests $TORCH --only 'convfirst/gpu/(10c|10x|10e|10y|10z)_' > /tmp/c/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench-10.json 2>/dev/null
left=$((T - SECONDS))
OUT=/tmp/b CONVLAB_BENCH_TIMEOUT=$((left > 190 ? 100 : left - 90)) timeout $((left > 190 ? 110 : left - 80)) \
  bench/run_gpu.sh --no-tests --only 'mbconv/gpu/(11c|11q)_' > /tmp/b/run.log 2>&1
cp /tmp/b/bench-gpu.json $OUT/bench-11.json 2>/dev/null
left=$((T - SECONDS))
if [ $left -gt 50 ]; then
  OUT=/tmp/s CONVLAB_SANITIZE_TESTS='convfirst/gpu/10e_fused_cluster,mbconv/gpu/11c_fused_store' CONVLAB_SANITIZE_TIMEOUT=$((left - 20)) \
    CONVLAB_SANITIZE_TEST_TIMEOUT=$((left - 25)) CONVLAB_RACECHECK_FLOP_LIMIT=5e7 CONVLAB_SANITIZE_JOBS=6 \
    timeout $((left - 10)) bench/run_gpu.sh --sanitize-only > /tmp/s/run.log 2>&1
  cp /tmp/s/sanitize.log $OUT/ 2>/dev/null
fi
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log c/logs.tar.gz c/run.log b/logs.tar.gz b/run.log s/run.log s/logs.tar.gz
cat /tmp/t/summary.txt /tmp/c/summary.txt /tmp/b/summary.txt 2>/dev/null | grep -v "^  " | tee $OUT/summaries.txt
grep -E "^(memcheck|racecheck|synccheck|initcheck) " /tmp/s/sanitize.log 2>/dev/null
python3 bench/bench_rows.py /tmp/c/bench-gpu.json; python3 bench/bench_rows.py /tmp/b/bench-gpu.json
