set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/a /tmp/b /tmp/s
OUT=/tmp/a timeout 330 bench/run_gpu.sh --no-bench --only 'random shapes|mbconv/gpu/|convfirst/gpu/' > $OUT/run-tests.log 2>&1
OUT=/tmp/b CONVLAB_BENCH_TIMEOUT=95 timeout 105 bench/run_gpu.sh --no-tests --only 'mbconv/gpu/(11c|11d|11e|11h)' > $OUT/run-bench.log 2>&1
OUT=/tmp/s CONVLAB_SANITIZE_TIMEOUT=85 timeout 100 bench/run_gpu.sh --sanitize-only --only 'mbconv/gpu/(11c|11e)' > $OUT/run-sanitize.log 2>&1
cp /tmp/b/bench-gpu.json $OUT/bench.json; cp /tmp/a/gpu-tests.xml $OUT/gpu-tests.xml; cp /tmp/s/sanitize.log $OUT/
cat /tmp/a/summary.txt /tmp/b/summary.txt /tmp/s/summary.txt > $OUT/summaries.txt
tar -czf $OUT/logs.tar.gz -C /tmp a/logs.tar.gz b/logs.tar.gz s/logs.tar.gz 2>/dev/null
cat $OUT/summaries.txt; grep -E "FAIL|error" /tmp/s/sanitize.log | head -20
python3 - <<'PY'
import json
d=json.load(open('/tmp/b/bench-gpu.json'))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate': continue
    print(b['name'][11:90], round(b.get('real_time',0),4), b.get('noisy',''))
PY
