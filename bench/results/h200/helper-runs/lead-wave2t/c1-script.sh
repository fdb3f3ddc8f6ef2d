#!/usr/bin/env bash
# wave-2t call 1: 10e with (T hand-over by st.async, 16-byte y stores, S zeroed once) against
# 10y (b9d3393's 10e, the same-run baseline) and 10x (the new 10e with C=256's ring in 4 x 16 KB pieces):
# tests + bench with PyTorch at C=256@14^2 and C=512@7^2; sanitizers on 10e; Nsight source profile of 10e at C=256
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
cp .scratch/10x.cu gpu/convfirst/10x_fused_cluster_pieces.cu
cp .scratch/10y.cu gpu/convfirst/10y_fused_cluster_before.cu
mkdir -p /tmp/a /tmp/s /tmp/p
CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_BUDGET=100 CONVLAB_TORCH_TIMEOUT=160 \
  CONVLAB_TORCH_SHAPES="128,14,14,256,1024,256,1;128,7,7,512,2048,512,1" \
  OUT=/tmp/a timeout 420 bench/run_gpu.sh --torch --only 'convfirst/gpu/(10a|10e|10x|10y|cudnn)' > $OUT/run.log 2>&1
cp /tmp/a/bench-gpu.json $OUT/bench-torch.json; cp /tmp/a/gpu-tests.xml $OUT/gpu-tests.xml; cat /tmp/a/summary.txt > $OUT/summaries.txt
CONVLAB_SANITIZE_TIMEOUT=80 OUT=/tmp/s timeout 110 bench/run_gpu.sh --sanitize-only --only 'convfirst/gpu/10e' >> $OUT/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/sanitize.log; cat /tmp/s/summary.txt >> $OUT/summaries.txt
OUT=/tmp/p timeout 70 bench/profile_source.sh convfirst/gpu/10e_fused_cluster "N=128,H=14,C=256,dtype=f16" convfirst_fused_cluster >> $OUT/run.log 2>&1
cp /tmp/p/source-*.tar.gz $OUT/source-c256.tar.gz
cat $OUT/summaries.txt; head -30 $OUT/sanitize.log
python3 - $OUT/bench-torch.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(b['name'], round(b.get('real_time'),4), b.get('time_unit'), 'cv', round(b.get('cv',0) or 0,3), 'noisy', b.get('noisy'))
PY
grep -iE "fail|error" $OUT/run.log | grep -v "0 failed" | head -20
