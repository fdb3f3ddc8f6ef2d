#!/usr/bin/env bash
# wave-2y call 3: the project's epilogue loads issued before its stores (11g and 11j). Tests of 11g and
# 11j, bench 11g, 11j and 11i at 14² in one process, PyTorch at the three 7² shapes, phase stamps,
# sanitizers on 11g and 11j.
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/a /tmp/s
CONVLAB_TORCH_SCRIPTS=mbconv CONVLAB_TORCH_BUDGET=50 CONVLAB_TORCH_SHAPES="128,7,7,192,6,3,1,0.25,192;128,7,7,192,6,5,1,0.25,192;128,7,7,192,6,3,1,0.25,320" \
OUT=/tmp/a timeout 430 bench/run_gpu.sh --torch --only 'mbconv/gpu/(11g|11j|11i_[a-z_]*/n128_14x14)' > $OUT/run.log 2>&1
cp /tmp/a/bench-gpu.json $OUT/bench.json; cp /tmp/a/gpu-tests.xml $OUT/gpu-tests.xml; cat /tmp/a/summary.txt > $OUT/summaries.txt
python3 - $OUT/bench.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(b['name'].replace('/manual_time','').replace('mbconv/gpu/',''), round(b.get('real_time'),4), 'cv', round(b.get('cv',0) or 0,3))
PY
{ CONVLAB_PHASE_STAMPS=1 timeout 30 build-gpu/convlab run mbconv/gpu/11j_fused_image_cluster --shape N=128,H=14,C=80,dtype=f16 --reps 0
  CONVLAB_PHASE_STAMPS=1 timeout 30 build-gpu/convlab run mbconv/gpu/11g_fused_image_wgmma --shape N=128,H=7,C=192,dtype=f16 --reps 0
  CONVLAB_CHUNK_TRACE=1 timeout 30 build-gpu/convlab run mbconv/gpu/11j_fused_image_cluster --shape N=128,H=14,C=80,dtype=f16 --reps 0
} > $OUT/trace.txt 2>&1
grep -E "phases" $OUT/trace.txt | cut -c1-300
CONVLAB_SANITIZE_TIMEOUT=45 OUT=/tmp/s timeout 130 bench/run_gpu.sh --sanitize-only --only 'mbconv/gpu/(11g|11j)' >> $OUT/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/sanitize.log; cat /tmp/s/summary.txt >> $OUT/summaries.txt
cat $OUT/summaries.txt | grep -v "^  \|files in"
grep -iE "fail|error|timed out" $OUT/run.log | grep -v "0 failed\|0 sanitizer errors" | head -8
