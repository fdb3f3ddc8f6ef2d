#!/usr/bin/env bash
# wave-2v call 5: the final code (10e = a8af56f's cubin) under the four sanitizers with the
# quad_transpose test; Nsight Compute's speed-of-light, memory and compute sections for 10e at
# C = 256 @ 14^2 and C = 512 @ 7^2: is the weight stream from L2 the limit?
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/s
CONVLAB_SANITIZE_TIMEOUT=70 OUT=/tmp/s timeout 200 bench/run_gpu.sh --sanitize-only --only 'convfirst/gpu/10e|quad_transpose' > $OUT/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/sanitize.log; cat /tmp/s/summary.txt > $OUT/summaries.txt
cat $OUT/summaries.txt; head -8 $OUT/sanitize.log
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for shape in N=128,H=14,C=256,dtype=f16 N=128,H=7,C=512,dtype=f16; do
  tag=$(echo $shape | cut -d, -f3 | tr -d '=')
  timeout 70 $ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
    --metrics lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sector_hit_rate.pct,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_tensor_op_gmma.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum \
    --clock-control none -k regex:convfirst_fused_cluster -c 1 \
    build-gpu/convlab run convfirst/gpu/10e_fused_cluster --shape $shape --reps 0 > $OUT/ncu-10e-$tag.txt 2>&1
  echo "ncu $tag rc $?"
done
grep -iE "L2 Cache Throughput|DRAM Throughput|Memory Throughput|Duration|lts__|gmma|Compute \(SM\)|L1/TEX Hit|L2 Hit" $OUT/ncu-10e-*.txt | head -40
