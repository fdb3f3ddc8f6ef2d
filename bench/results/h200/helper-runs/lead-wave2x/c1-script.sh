#!/usr/bin/env bash
# wave-2x call 1: the store plan's gate and pass 2 as programmatic dependents (11c, 11h) against
# copies launched serially (11x = 11c, 11y = 11h), and 11w (11h with 11e's tensor-core depthwise);
# tests over the mbconv table, bench with PyTorch at 14² and 28², sanitizers on 11c and 11h.
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
cp .scratch/11x.cu gpu/mbconv/11x_store_serial_launch.cu
cp .scratch/11y.cu gpu/mbconv/11y_store_wgmma_serial_launch.cu
cp .scratch/11w.cu gpu/mbconv/11w_store_wgmma_tc_dw.cu
mkdir -p /tmp/a /tmp/b /tmp/s
OUT=/tmp/a timeout 330 bench/run_gpu.sh --no-bench --only 'mbconv/gpu/(11c|11e|11h|11w|11x|11y)' > $OUT/run.log 2>&1
cp /tmp/a/gpu-tests.xml $OUT/gpu-tests.xml; cat /tmp/a/summary.txt > $OUT/summaries.txt
CONVLAB_TORCH_SCRIPTS=mbconv CONVLAB_TORCH_BUDGET=50 CONVLAB_TORCH_TIMEOUT=90 \
  CONVLAB_TORCH_SHAPES="128,14,14,80,6,3,1,0.25,80;128,14,14,112,6,3,1,0.25,112;128,28,28,40,6,3,1,0.25,40" \
  OUT=/tmp/b timeout 200 bench/run_gpu.sh --no-tests --torch --only 'mbconv/gpu/(11c|11h|11w|11x|11y)_[a-z_]*/n128_(14x14|28x28|56x56_c24_e6_k3_s1|112x112)' >> $OUT/run.log 2>&1
cp /tmp/b/bench-gpu.json $OUT/bench-torch.json; cat /tmp/b/summary.txt >> $OUT/summaries.txt
CONVLAB_SANITIZE_TIMEOUT=45 OUT=/tmp/s timeout 100 bench/run_gpu.sh --sanitize-only --only 'mbconv/gpu/(11c|11h)' >> $OUT/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/sanitize.log; cat /tmp/s/summary.txt >> $OUT/summaries.txt
cat $OUT/summaries.txt; head -8 $OUT/sanitize.log
python3 - $OUT/bench-torch.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(b['name'].replace('/manual_time',''), round(b.get('real_time'),4), 'cv', round(b.get('cv',0) or 0,3))
PY
grep -iE "fail|error|timed out|warning" $OUT/run.log | grep -v "0 failed" | head -12
