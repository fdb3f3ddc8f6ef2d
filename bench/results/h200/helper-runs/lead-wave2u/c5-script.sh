#!/usr/bin/env bash
# wave-2u call 5: 10e with turn-taking expands vs 10y (HEAD~1's 10e) in one process; tests; sanitizers on 10e
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
cp .scratch/10y.cu gpu/convfirst/10y_fused_cluster.cu
mkdir -p /tmp/a /tmp/s
OUT=/tmp/a timeout 250 bench/run_gpu.sh --only 'convfirst/gpu/(10e|10y)' > $OUT/run.log 2>&1
cp /tmp/a/bench-gpu.json $OUT/bench.json; cp /tmp/a/gpu-tests.xml $OUT/gpu-tests.xml; cat /tmp/a/summary.txt > $OUT/summaries.txt
CONVLAB_SANITIZE_TIMEOUT=50 OUT=/tmp/s timeout 60 bench/run_gpu.sh --sanitize-only --only 'convfirst/gpu/10e' >> $OUT/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/sanitize.log; cat /tmp/s/summary.txt >> $OUT/summaries.txt
cat $OUT/summaries.txt; head -7 $OUT/sanitize.log
python3 - $OUT/bench.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(b['name'], round(b.get('real_time'),4), b.get('time_unit'), 'cv', round(b.get('cv',0) or 0,3), 'noisy', b.get('noisy'))
PY
grep -iE "fail|error|timed out" $OUT/run.log | grep -v "0 failed" | head -20
