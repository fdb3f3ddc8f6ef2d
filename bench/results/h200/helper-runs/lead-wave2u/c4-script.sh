#!/usr/bin/env bash
# wave-2u call 4: 10e and 10g after the shared header; every convfirst GPU test; bench 10a, 10e, 10g, cudnn
# + PyTorch at C=128@28^2, C=256@14^2, C=512@7^2; sanitizers on 10e and 10g
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/a /tmp/s
CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_BUDGET=100 CONVLAB_TORCH_TIMEOUT=160 \
  CONVLAB_TORCH_SHAPES="128,14,14,256,1024,256,1;128,28,28,128,512,128,1;128,7,7,512,2048,512,1" \
  OUT=/tmp/a timeout 420 bench/run_gpu.sh --torch --only 'convfirst/gpu/(10a|10e|10g|cudnn)' > $OUT/run.log 2>&1
cp /tmp/a/bench-gpu.json $OUT/bench-torch.json; cp /tmp/a/gpu-tests.xml $OUT/gpu-tests.xml; cat /tmp/a/summary.txt > $OUT/summaries.txt
CONVLAB_SANITIZE_TIMEOUT=100 OUT=/tmp/s timeout 120 bench/run_gpu.sh --sanitize-only --only 'convfirst/gpu/(10e|10g)' >> $OUT/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/sanitize.log; cat /tmp/s/summary.txt >> $OUT/summaries.txt
cat $OUT/summaries.txt; head -14 $OUT/sanitize.log
python3 - $OUT/bench-torch.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(b['name'], round(b.get('real_time'),4), b.get('time_unit'), 'cv', round(b.get('cv',0) or 0,3), 'noisy', b.get('noisy'))
PY
grep -iE "fail|error" $OUT/run.log | grep -v "0 failed" | head -20
