#!/usr/bin/env bash
# wave-2x call 3: 11h's pass 2 with each block's residual loaded at its first step (11h and 11i);
# tests over the mbconv table, bench 11c/11h/11i at every shape, sanitizers on 11h and 11i, and
# source-level stall profiles: 11h's pass 2 on the e = 1 block at 112² (where it loses to 11c's) and
# its pass 1 at C = 80 @ 14² (two thirds of the block there).
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/a /tmp/s /tmp/p
OUT=/tmp/a timeout 380 bench/run_gpu.sh --only 'mbconv/gpu/(11c|11h|11i)' > $OUT/run.log 2>&1
cp /tmp/a/bench-gpu.json $OUT/bench.json; cp /tmp/a/gpu-tests.xml $OUT/gpu-tests.xml; cat /tmp/a/summary.txt > $OUT/summaries.txt
CONVLAB_SANITIZE_TIMEOUT=45 OUT=/tmp/s timeout 80 bench/run_gpu.sh --sanitize-only --only 'mbconv/gpu/(11h|11i)' >> $OUT/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/sanitize.log; cat /tmp/s/summary.txt >> $OUT/summaries.txt
cat $OUT/summaries.txt; head -6 $OUT/sanitize.log
python3 - $OUT/bench.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(b['name'].replace('/manual_time','').replace('mbconv/gpu/',''), round(b.get('real_time'),4), 'cv', round(b.get('cv',0) or 0,3))
PY
OUT=/tmp/p timeout 75 bash bench/profile_source.sh mbconv/gpu/11h_fused_store_wgmma N=128,H=112,C=32,e=1,C_out=16,dtype=f16 project_wgmma >> $OUT/run.log 2>&1; echo "profile 1 rc $?"
OUT=/tmp/p timeout 75 bash bench/profile_source.sh mbconv/gpu/11h_fused_store_wgmma N=128,H=14,C=80,dtype=f16 mbconv_tile_kernel >> $OUT/run.log 2>&1; echo "profile 2 rc $?"
ls /tmp/p; cd /tmp/p && for f in *.tar.gz; do mkdir -p x-$f && tar xzf $f -C x-$f; done; cd - >/dev/null
i=0; for d in /tmp/p/x-*; do i=$((i+1)); cat $d/*/stalls.txt $d/stalls.txt 2>/dev/null | head -12; head -45 $d/*/hot.txt $d/hot.txt 2>/dev/null; done > $OUT/profiles.txt 2>&1
tar czf $OUT/profiles.tar.gz -C /tmp/p $(cd /tmp/p && ls *.tar.gz) 2>/dev/null
head -120 $OUT/profiles.txt | cut -c1-140
grep -iE "fail|error|timed out" $OUT/run.log | grep -v "0 failed" | head -8
