#!/usr/bin/env bash
# wave-2t call 5: gpu::stage_biases with batched loads (10c, 10e): tests and bench of
# 10c and 10e with PyTorch at C=256@14^2 and C=512@7^2; sanitizers on 10c and 10e
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/a /tmp/s
CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_BUDGET=60 CONVLAB_TORCH_TIMEOUT=100 \
  CONVLAB_TORCH_SHAPES="128,14,14,256,1024,256,1;128,7,7,512,2048,512,1" \
  OUT=/tmp/a timeout 250 bench/run_gpu.sh --torch --only 'convfirst/gpu/(10c|10e)' > $OUT/run.log 2>&1
cp /tmp/a/bench-gpu.json $OUT/bench-torch.json; cp /tmp/a/gpu-tests.xml $OUT/gpu-tests.xml; cat /tmp/a/summary.txt > $OUT/summaries.txt
CONVLAB_SANITIZE_TIMEOUT=40 OUT=/tmp/s timeout 55 bench/run_gpu.sh --sanitize-only --only 'convfirst/gpu/(10c|10e)' >> $OUT/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/sanitize.log; cat /tmp/s/summary.txt >> $OUT/summaries.txt
cat $OUT/summaries.txt; head -16 $OUT/sanitize.log
python3 - $OUT/bench-torch.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(b['name'], round(b.get('real_time'),4), b.get('time_unit'), 'cv', round(b.get('cv',0) or 0,3), 'noisy', b.get('noisy'))
PY
