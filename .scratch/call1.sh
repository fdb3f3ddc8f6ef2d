# The next session's first call (written in wave-3f, not run). Before it, here:
#   git apply bench/results/h200/helper-runs/lead-wave3f/split-waves.patch   (split_tile's wave count)
#   build, run the host tests ([lesson11]), commit; then git rev-parse --short HEAD > .scratch/rev
#   and copy this file to .scratch/. About 560 s with the start on a cold machine.
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/a /tmp/b /tmp/s /tmp/c
# 1. every mbconv GPU test (the split changes the grid of 11b, 11c, 11e, 11h, 11i) and the sweeps
OUT=/tmp/a timeout 260 bench/run_gpu.sh --no-bench --only 'random shapes|mbconv/gpu/' > /tmp/a/run-tests.log 2>&1
build-gpu/convlab_tests 'mbconv tile:*' > /tmp/a/host-tile-tests.log 2>&1; tail -3 /tmp/a/host-tile-tests.log
# 2. the rungs the split and 11c's cta_part stream change, with PyTorch's MBConv rows in the same run
OUT=/tmp/b CONVLAB_BENCH_TIMEOUT=90 CONVLAB_TORCH_SCRIPTS=mbconv CONVLAB_TORCH_TIMEOUT=110 CONVLAB_TORCH_BUDGET=90 \
  timeout 220 bench/run_gpu.sh --no-tests --torch --only 'mbconv/gpu/(11b|11c|11e|11h|11i)' > /tmp/b/run-bench.log 2>&1
# 3. the old split as the same run's baseline at the shapes it changes (one process per setting)
for s in 5 3 2; do
  CONVLAB_MBCONV_SPLITS=$s timeout 15 build-gpu/convlab_bench --benchmark_filter='mbconv/gpu/11c_fused_store/n128_(14x14_c80_e6_k3_s1|14x14_c112_e6_k3_s1|14x14_c112_e6_k5_s1)_' 2>&1 | grep manual_time | sed "s/^/splits=$s /" | tee -a /tmp/b/splits.txt
done
# 3b. lesson 10's pair: 10e and PyTorch's ConvFirst at C256@14² and C512@7² in the same run (#14)
OUT=/tmp/c CONVLAB_BENCH_TIMEOUT=50 CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_SHAPES='128,14,14,256,1024,256,1;128,7,7,512,2048,512,1' \
  CONVLAB_TORCH_TIMEOUT=80 CONVLAB_TORCH_BUDGET=60 timeout 120 bench/run_gpu.sh --no-tests --torch --only 'convfirst/gpu/10e' > /tmp/c/run-bench.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench-convfirst.json
# 4. racecheck alone on 11c (call 1's four tools in 60 s: racecheck ran out of time)
left=$((585 - SECONDS)); [ $left -gt 40 ] && OUT=/tmp/s CONVLAB_SANITIZE_TOOLS=racecheck CONVLAB_SANITIZE_TIMEOUT=$((left - 15)) \
  timeout $left bench/run_gpu.sh --sanitize-only --only 'mbconv/gpu/11c' > /tmp/s/run-sanitize.log 2>&1
cp /tmp/b/bench-gpu.json $OUT/bench.json; cp /tmp/a/gpu-tests.xml $OUT/; cp /tmp/s/sanitize.log $OUT/ 2>/dev/null
cat /tmp/a/summary.txt /tmp/b/summary.txt /tmp/c/summary.txt /tmp/s/summary.txt > $OUT/summaries.txt 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp a/logs.tar.gz b/logs.tar.gz b/results.tar.gz s/logs.tar.gz a/run-tests.log a/host-tile-tests.log b/run-bench.log b/splits.txt c/run-bench.log c/logs.tar.gz s/run-sanitize.log
cat $OUT/summaries.txt
