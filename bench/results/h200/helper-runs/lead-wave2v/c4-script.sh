#!/usr/bin/env bash
# wave-2v call 4: 10e (C = 256: five slots, conv weights through L1) vs 10x (four slots, weights
# through L1) vs 10y (a8af56f's 10e); tests and bench of 10e, 10x, 10y + PyTorch at C=128@28^2,
# C=256@14^2, C=512@7^2; sanitizers on 10e; a profile of 10e at C = 256
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
cp .scratch/10y.cu gpu/convfirst/10y_fused_cluster.cu; cp .scratch/10x.cu gpu/convfirst/10x_fused_cluster.cu
mkdir -p /tmp/a /tmp/s /tmp/p
CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_BUDGET=100 CONVLAB_TORCH_TIMEOUT=150 \
  CONVLAB_TORCH_SHAPES="128,14,14,256,1024,256,1;128,28,28,128,512,128,1;128,7,7,512,2048,512,1" \
  OUT=/tmp/a timeout 380 bench/run_gpu.sh --torch --only 'convfirst/gpu/(10e|10x|10y)' > $OUT/run.log 2>&1
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
OUT=/tmp/p timeout 100 bash bench/profile_source.sh convfirst/gpu/10e_fused_cluster N=128,H=14,C=256,dtype=f16 convfirst_fused_cluster >> $OUT/run.log 2>&1
echo "profile rc $?"; mkdir -p /tmp/pp; tar xzf /tmp/p/*.tar.gz -C /tmp/pp && cp /tmp/pp/hot.txt $OUT/hot-10e-c256.txt && cp /tmp/pp/stalls.txt $OUT/stalls-10e-c256.txt
python3 - /tmp/pp/sass.csv > $OUT/waits-10e-c256.txt <<'PY'
import csv,sys
lines=open(sys.argv[1]).read().splitlines()
if lines[0].startswith('"Kernel Name"'): lines=lines[1:]
rows=list(csv.DictReader(lines)); keys=list(rows[0].keys())
sk=[k for k in keys if k.startswith('Warp Stall Sampling (All')][0]
top=sorted(range(len(rows)), key=lambda i:-float(rows[i][sk] or 0))[:8]
for i in top:
    print('====', rows[i]['Address'], rows[i][sk])
    for r in rows[max(0,i-10):i+3]: print(r['Address'][-5:], r[sk].rjust(6), r['Source'][:90])
PY
