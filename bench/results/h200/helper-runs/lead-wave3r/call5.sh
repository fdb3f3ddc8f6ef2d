# wave-3r call 5: the conv ahead with taps once a tile and its place from a volatile move of the
# `thread` register instead of an S2R of %tid.x (10z: taps-once-place-by-mov-on-conv-ahead.patch
# on conv-ahead.patch), against main's 10e (10y = HEAD's file). 1. tests of 10z and 10y; 2. one
# bench process of both.
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)+conv-ahead
mkdir -p /tmp/t /tmp/c
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/t/gpu.txt
git show HEAD:gpu/convfirst/10e_fused_cluster.cu | sed 's#10e_fused_cluster#10y_fused_cluster_before#g' > gpu/convfirst/10y_fused_cluster_before.cu
grep -c "opaque" gpu/convfirst/10[eyz]_*.cu
OUT=/tmp/t timeout 260 bench/run_gpu.sh --no-bench --only 'convfirst/gpu/(10y|10z)_' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
OUT=/tmp/c CONVLAB_BENCH_TIMEOUT=40 timeout 50 bench/run_gpu.sh --no-tests --only 'convfirst/gpu/(10y|10z)_' > /tmp/c/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench.json 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log t/gpu.txt c/logs.tar.gz c/run.log
cat /tmp/t/summary.txt /tmp/c/summary.txt
python3 bench/bench_rows.py /tmp/c/bench-gpu.json
