#!/usr/bin/env bash
# wave-2r call 2: the instruction diet (99986b8): mbconv GPU tests, trace, bench 11f/11g at 7² with PyTorch, sanitizers on 11g
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/a /tmp/b /tmp/c
OUT=/tmp/a bench/run_gpu.sh --no-bench --only 'mbconv/gpu/' > $OUT/run.log 2>&1
cp /tmp/a/gpu-tests.xml $OUT/gpu-tests.xml; cat /tmp/a/summary.txt > $OUT/summaries.txt
for s in "N=128,H=7,C=192,dtype=f16" "N=128,H=7,C=192,k=5,dtype=f16" "N=128,H=7,C=192,C_out=320,dtype=f16"; do
  echo "== $s"; CONVLAB_CHUNK_TRACE=1 CONVLAB_PHASE_STAMPS=1 build-gpu/convlab run mbconv/gpu/11g_fused_image_wgmma --shape $s --reps 0 2>&1 | grep -v "^ *->"
  CONVLAB_PHASE_STAMPS=1 build-gpu/convlab run mbconv/gpu/11g_fused_image_wgmma --shape $s --reps 2 2>&1 | grep phases
done > $OUT/trace.txt 2>&1
CONVLAB_TORCH_SCRIPTS=mbconv CONVLAB_TORCH_SHAPES="128,7,7,192,6,3,1,0.25,192;128,7,7,192,6,5,1,0.25,192;128,7,7,192,6,3,1,0.25,320" \
  OUT=/tmp/b bench/run_gpu.sh --no-tests --torch --only 'mbconv/gpu/11[fg].*7x7_c192' >> $OUT/run.log 2>&1
cp /tmp/b/bench-gpu.json $OUT/bench-11fg-torch.json; cat /tmp/b/summary.txt >> $OUT/summaries.txt
OUT=/tmp/c bench/run_gpu.sh --sanitize-only --only 'mbconv/gpu/11g' >> $OUT/run.log 2>&1
cp /tmp/c/sanitize.log $OUT/sanitize.log; cat /tmp/c/summary.txt >> $OUT/summaries.txt
cat $OUT/trace.txt; cat $OUT/summaries.txt
python3 - $OUT/bench-11fg-torch.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(b['name'], b.get('real_time'), b.get('time_unit'))
PY
tail -c 1500 $OUT/run.log
