#!/usr/bin/env bash
# wave-2r call 1: 11g's chunk trace at main's code (056f29c) and with per-warp arrivals (A.diff); bench 11f/11g at 7² for both; mbconv GPU tests with A
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/a /tmp/b /tmp/c
SH=("N=128,H=7,C=192,dtype=f16" "N=128,H=7,C=192,k=5,dtype=f16" "N=128,H=7,C=192,C_out=320,dtype=f16")
OUT=/tmp/a bench/run_gpu.sh --no-tests --only 'mbconv/gpu/11[fg].*7x7_c192' > $OUT/run.log 2>&1
cp /tmp/a/bench-gpu.json $OUT/bench-main.json; cat /tmp/a/summary.txt > $OUT/summaries.txt
for s in "${SH[@]}"; do echo "== main $s"; CONVLAB_CHUNK_TRACE=1 CONVLAB_PHASE_STAMPS=1 build-gpu/convlab run mbconv/gpu/11g_fused_image_wgmma --shape $s --reps 0 2>&1 | grep -v "^ *->"; done > $OUT/trace.txt 2>&1
git apply .scratch/A.diff && echo "A applied" >> $OUT/trace.txt
OUT=/tmp/b bench/run_gpu.sh --no-tests --only 'mbconv/gpu/11[fg].*7x7_c192' >> $OUT/run.log 2>&1
cp /tmp/b/bench-gpu.json $OUT/bench-A.json; cat /tmp/b/summary.txt >> $OUT/summaries.txt
for s in "${SH[@]}"; do echo "== A $s"; CONVLAB_CHUNK_TRACE=1 CONVLAB_PHASE_STAMPS=1 build-gpu/convlab run mbconv/gpu/11g_fused_image_wgmma --shape $s --reps 0 2>&1 | grep -v "^ *->"; done >> $OUT/trace.txt 2>&1
OUT=/tmp/c bench/run_gpu.sh --no-bench --only 'mbconv/gpu/' >> $OUT/run.log 2>&1
cp /tmp/c/gpu-tests.xml $OUT/gpu-tests-A.xml; cat /tmp/c/summary.txt >> $OUT/summaries.txt
cat $OUT/trace.txt; cat $OUT/summaries.txt
for f in bench-main bench-A; do python3 - $OUT/$f.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(sys.argv[1].split('/')[-1], b['name'], b.get('real_time'), b.get('time_unit'))
PY
done
tail -c 3000 $OUT/run.log
