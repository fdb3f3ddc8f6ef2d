# lead-wave3u call 3 (an H100 is fine): why the conv ahead lost 4 % at C = 256. A diagnostic build
# (`conv-ahead-diag.patch` on top of conv-ahead-128.patch: phase stamps per tile in their own
# instantiation, CONVLAB_CONV_AHEAD_256=1 switches the conv ahead on at C = 256). In one build:
# the phase stamps of each form at C = 256 @ 14² and C = 128 @ 28² (convlab run --reps 0, one
# launch); then 10e at its three shapes, ahead off and on, alternating, twice each.
nvidia-smi --query-gpu=name --format=csv,noheader
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)+lane-taps-10c+t-blocks-512+conv-ahead-128+diag
mkdir -p /tmp/b
OUT=/tmp/b timeout 210 bench/run_gpu.sh --no-tests --no-bench > /tmp/b/run.log 2>&1; grep -v "^  " /tmp/b/summary.txt
B=build-gpu
for run in "N=128,H=14,C=256,dtype=f16 1" "N=128,H=14,C=256,dtype=f16 0" "N=128,H=28,C=128,dtype=f16 0"; do
  set -- $run
  CONVLAB_PHASE_STAMPS=1 CONVLAB_CONV_AHEAD_256=$2 timeout 60 $B/convlab run convfirst/gpu/10e_fused_cluster --shape $1 --reps 0 2>&1 | grep -v "^variant" | tee -a $OUT/stamps.txt
done
for round in 1 2; do
  for a in 0 1; do
    CONVLAB_CONV_AHEAD_256=$a timeout 40 $B/convlab_bench --benchmark_filter='convfirst/gpu/10e_fused_cluster/' \
      --benchmark_out=$OUT/bench-ahead$a-r$round.json --benchmark_out_format=json > /dev/null 2>&1
    python3 bench/bench_rows.py $OUT/bench-ahead$a-r$round.json | sed "s/^/ahead=$a round=$round /"
  done
done
