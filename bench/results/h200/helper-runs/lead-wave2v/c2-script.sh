#!/usr/bin/env bash
# wave-2v call 2: 10e (late peer, the peer V piece now waited for) vs 10y (main's 10e before it);
# tests and bench of 10a, 10e, 10y, cudnn + PyTorch at C=128@28^2, C=256@14^2, C=512@7^2;
# sanitizers on 10e; a profile of 10e at C = 256
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
cp .scratch/10y.cu gpu/convfirst/10y_fused_cluster.cu
mkdir -p /tmp/a /tmp/s /tmp/p
CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_BUDGET=100 CONVLAB_TORCH_TIMEOUT=150 \
  CONVLAB_TORCH_SHAPES="128,14,14,256,1024,256,1;128,28,28,128,512,128,1;128,7,7,512,2048,512,1" \
  OUT=/tmp/a timeout 380 bench/run_gpu.sh --torch --only 'convfirst/gpu/(10a|10e|10y|cudnn)' > $OUT/run.log 2>&1
cp /tmp/a/bench-gpu.json $OUT/bench-torch.json; cp /tmp/a/gpu-tests.xml $OUT/gpu-tests.xml; cat /tmp/a/summary.txt > $OUT/summaries.txt
CONVLAB_SANITIZE_TIMEOUT=70 OUT=/tmp/s timeout 85 bench/run_gpu.sh --sanitize-only --only 'convfirst/gpu/10e' >> $OUT/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/sanitize.log; cat /tmp/s/summary.txt >> $OUT/summaries.txt
cat $OUT/summaries.txt; head -7 $OUT/sanitize.log
python3 - $OUT/bench-torch.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(b['name'], round(b.get('real_time'),4), b.get('time_unit'), 'cv', round(b.get('cv',0) or 0,3), 'noisy', b.get('noisy'))
PY
grep -iE "fail|error|timed out" $OUT/run.log | grep -v "0 failed" | head -20
OUT=/tmp/p timeout 110 bash bench/profile_source.sh convfirst/gpu/10e_fused_cluster N=128,H=14,C=256,dtype=f16 convfirst_fused_cluster >> $OUT/run.log 2>&1
echo "profile rc $?"; ls /tmp/p; for f in /tmp/p/*; do cp $f $OUT/prof-$(basename $f); done
