#!/usr/bin/env bash
# wave-2w call 1: 10e with T held in registers at C = 256 (the expand's A operand, RS wgmma) against
# 10y (main's 10e) and 10x (T in registers at C = 128 too); tests, bench with PyTorch at the three
# ConvFirst shapes, sanitizers on 10e and 10x, Nsight's speed-of-light/memory/compute on 10e and 10y at C = 256
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
cp .scratch/10y.cu gpu/convfirst/10y_fused_cluster.cu
cp .scratch/10x.cu gpu/convfirst/10x_fused_cluster.cu
mkdir -p /tmp/a /tmp/s
CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_BUDGET=100 CONVLAB_TORCH_TIMEOUT=150 \
  CONVLAB_TORCH_SHAPES="128,14,14,256,1024,256,1;128,28,28,128,512,128,1;128,7,7,512,2048,512,1" \
  OUT=/tmp/a timeout 400 bench/run_gpu.sh --torch --only 'convfirst/gpu/(10e|10x|10y)' > $OUT/run.log 2>&1
cp /tmp/a/bench-gpu.json $OUT/bench-torch.json; cp /tmp/a/gpu-tests.xml $OUT/gpu-tests.xml; cat /tmp/a/summary.txt > $OUT/summaries.txt
CONVLAB_SANITIZE_TIMEOUT=60 OUT=/tmp/s timeout 140 bench/run_gpu.sh --sanitize-only --only 'convfirst/gpu/(10e|10x)' >> $OUT/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/sanitize.log; cat /tmp/s/summary.txt >> $OUT/summaries.txt
cat $OUT/summaries.txt; head -8 $OUT/sanitize.log
python3 - $OUT/bench-torch.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(b['name'], round(b.get('real_time'),4), b.get('time_unit'), 'cv', round(b.get('cv',0) or 0,3), 'noisy', b.get('noisy'))
PY
grep -iE "fail|error|timed out" $OUT/run.log | grep -v "0 failed" | head -20
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for v in 10e 10y; do
  timeout 45 $ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
    --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum \
    --clock-control none -k regex:convfirst_fused_cluster -c 1 \
    build-gpu/convlab run convfirst/gpu/${v}_fused_cluster --shape N=128,H=14,C=256,dtype=f16 --reps 0 > $OUT/ncu-$v-c256.txt 2>&1
  echo "ncu $v rc $?"
done
grep -iE "Duration|Shared|L1/TEX Cache Throughput|gmma|Compute \(SM\)|Issue Slots|inst_executed" $OUT/ncu-1*.txt | head -40
