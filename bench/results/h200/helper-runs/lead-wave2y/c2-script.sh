#!/usr/bin/env bash
# wave-2y call 2: 11j with E at an odd pitch, 16-pixel segments at K = 3 and a four-stage Wp ring;
# 11x = the same with 8-pixel segments (device-only copy). Tests of 11g/11j/11x, bench them and 11i
# at 14² in one process, PyTorch at the two 14² goal shapes, 11j's stamps and trace, sanitizers on 11j.
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
cp .scratch/11x.cu gpu/mbconv/11x_image_cluster_seg8.cu
mkdir -p /tmp/a /tmp/s
CONVLAB_TORCH_SCRIPTS=mbconv CONVLAB_TORCH_BUDGET=50 CONVLAB_TORCH_SHAPES="128,14,14,80,6,3,1,0.25,80;128,14,14,112,6,3,1,0.25,112" \
OUT=/tmp/a timeout 430 bench/run_gpu.sh --torch --only 'mbconv/gpu/(11g|11j|11x|11i_[a-z_]*/n128_14x14)' > $OUT/run.log 2>&1
cp /tmp/a/bench-gpu.json $OUT/bench.json; cp /tmp/a/gpu-tests.xml $OUT/gpu-tests.xml; cat /tmp/a/summary.txt > $OUT/summaries.txt
ls /tmp/a
python3 - $OUT/bench.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(b['name'].replace('/manual_time','').replace('mbconv/gpu/',''), round(b.get('real_time'),4), 'cv', round(b.get('cv',0) or 0,3))
PY
{ for s in N=128,H=14,C=80,dtype=f16 N=128,H=14,C=80,k=5,C_out=112,dtype=f16; do
  CONVLAB_PHASE_STAMPS=1 timeout 30 build-gpu/convlab run mbconv/gpu/11j_fused_image_cluster --shape $s --reps 0
  CONVLAB_CHUNK_TRACE=1 timeout 30 build-gpu/convlab run mbconv/gpu/11j_fused_image_cluster --shape $s --reps 0; done
  CONVLAB_CHUNK_TRACE=1 timeout 30 build-gpu/convlab run mbconv/gpu/11x_image_cluster_seg8 --shape N=128,H=14,C=80,dtype=f16 --reps 0
} > $OUT/trace.txt 2>&1
grep -E "phases|period|segments|issued|empty|full \(|slot" $OUT/trace.txt | cut -c1-300
CONVLAB_SANITIZE_TIMEOUT=40 OUT=/tmp/s timeout 120 bench/run_gpu.sh --sanitize-only --only 'mbconv/gpu/11j' >> $OUT/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/sanitize.log; cat /tmp/s/summary.txt >> $OUT/summaries.txt
cat $OUT/summaries.txt
grep -iE "fail|error|timed out" $OUT/run.log | grep -v "0 failed\|0 sanitizer errors" | head -8
