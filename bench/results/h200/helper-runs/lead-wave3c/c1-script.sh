set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/a /tmp/b
OUT=/tmp/a timeout 340 bench/run_gpu.sh --no-bench --only 'hopper|random shapes|mbconv/gpu/|convfirst/gpu/' > $OUT/run-tests.log 2>&1
OUT=/tmp/b CONVLAB_BENCH_TIMEOUT=190 timeout 205 bench/run_gpu.sh --no-tests --only 'convfirst/gpu/(10e|10x)|mbconv/gpu/(11c|11d|11h|11l|11m|11s|11g|11x|11y|11j|11w)' > $OUT/run-bench.log 2>&1
cp /tmp/b/bench-gpu.json $OUT/bench.json; cp /tmp/a/gpu-tests.xml $OUT/gpu-tests.xml
cat /tmp/a/summary.txt /tmp/b/summary.txt > $OUT/summaries.txt
tar -czf $OUT/logs.tar.gz -C /tmp a/logs.tar.gz b/logs.tar.gz a/environment.txt 2>/dev/null
cat $OUT/summaries.txt
python3 - <<'PY'
import json
d=json.load(open('/tmp/b/bench-gpu.json'))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate': continue
    print(b['name'][:95], round(b.get('real_time',0),4), b.get('time_unit'), b.get('noisy',''))
PY
