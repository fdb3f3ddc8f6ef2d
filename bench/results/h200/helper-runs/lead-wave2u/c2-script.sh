#!/usr/bin/env bash
# wave-2u call 2: 10g with V in column pieces; tests + bench of 10e and 10g; sanitizers on 10g; profile of 10g at C=256
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/a /tmp/s /tmp/p
OUT=/tmp/a timeout 330 bench/run_gpu.sh --only 'convfirst/gpu/(10e|10g)' > $OUT/run.log 2>&1
cp /tmp/a/bench-gpu.json $OUT/bench.json; cp /tmp/a/gpu-tests.xml $OUT/gpu-tests.xml; cat /tmp/a/summary.txt > $OUT/summaries.txt
CONVLAB_SANITIZE_TIMEOUT=80 OUT=/tmp/s timeout 100 bench/run_gpu.sh --sanitize-only --only 'convfirst/gpu/10g' >> $OUT/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/sanitize.log; cat /tmp/s/summary.txt >> $OUT/summaries.txt
OUT=/tmp/p timeout 150 bench/profile_source.sh convfirst/gpu/10g_fused_cluster_split_hidden "N=128,H=14,C=256,dtype=f16" convfirst_split_hidden >> $OUT/run.log 2>&1
cp /tmp/p/source-*.tar.gz $OUT/source-10g-c256.tar.gz
cat $OUT/summaries.txt; head -7 $OUT/sanitize.log
python3 - $OUT/bench.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(b['name'], round(b.get('real_time'),4), b.get('time_unit'), 'cv', round(b.get('cv',0) or 0,3), 'noisy', b.get('noisy'))
PY
grep -iE "fail|error" $OUT/run.log | grep -v "0 failed" | head -20
