#!/usr/bin/env bash
# wave-2s call 2 (branch convfirst-10e-pipelined, A+B): 10e tests + bench with PyTorch at C=256/512;
# Nsight source profile of A+B at C=256; then B only (serial loop, st.async exchange): tests + bench
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/a /tmp/b /tmp/p
CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_BUDGET=100 CONVLAB_TORCH_TIMEOUT=160 \
  CONVLAB_TORCH_SHAPES="128,14,14,256,1024,256,1;128,7,7,512,2048,512,1" \
  OUT=/tmp/a timeout 450 bench/run_gpu.sh --torch --only 'convfirst/gpu/10e' > $OUT/run.log 2>&1
cp /tmp/a/bench-gpu.json $OUT/bench-AB-torch.json; cp /tmp/a/gpu-tests.xml $OUT/gpu-tests-AB.xml; cat /tmp/a/summary.txt > $OUT/summaries.txt
OUT=/tmp/p timeout 120 bench/profile_source.sh convfirst/gpu/10e_fused_cluster "N=128,H=14,C=256,dtype=f16" convfirst_fused_cluster >> $OUT/run.log 2>&1
cp /tmp/p/source-*.tar.gz $OUT/source-AB-c256.tar.gz
cp .scratch/10e-serial.cu gpu/convfirst/10e_fused_cluster.cu
OUT=/tmp/b timeout 200 bench/run_gpu.sh --only 'convfirst/gpu/10e' >> $OUT/run.log 2>&1
cp /tmp/b/bench-gpu.json $OUT/bench-B.json; cp /tmp/b/gpu-tests.xml $OUT/gpu-tests-B.xml; cat /tmp/b/summary.txt >> $OUT/summaries.txt
cat $OUT/summaries.txt
for f in bench-AB-torch bench-B; do python3 - $OUT/$f.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(sys.argv[1].split('/')[-1], b['name'], round(b.get('real_time'),4), b.get('time_unit'), 'cv', b.get('cv'), 'noisy', b.get('noisy'))
PY
done
grep -iE "fail|error" $OUT/run.log | grep -v "0 failed" | head -20
tail -c 1500 $OUT/run.log
