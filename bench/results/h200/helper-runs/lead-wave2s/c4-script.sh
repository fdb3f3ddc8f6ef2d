#!/usr/bin/env bash
# wave-2s call 4: 11f/11g at the three C=192@7² shapes with PyTorch's mbconv script in the same process
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/a
CONVLAB_TORCH_SCRIPTS=mbconv CONVLAB_TORCH_BUDGET=100 CONVLAB_TORCH_TIMEOUT=150 \
  CONVLAB_TORCH_SHAPES="128,7,7,192,6,3,1,0.25,192;128,7,7,192,6,5,1,0.25,192;128,7,7,192,6,3,1,0.25,320" \
  OUT=/tmp/a bench/run_gpu.sh --no-tests --torch --only 'mbconv/gpu/11[fg].*7x7_c192' > $OUT/run.log 2>&1
cp /tmp/a/bench-gpu.json $OUT/bench-11fg-torch.json; cat /tmp/a/summary.txt > $OUT/summaries.txt
cat $OUT/summaries.txt
python3 - $OUT/bench-11fg-torch.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(b['name'], round(b.get('real_time'),4), b.get('time_unit'), 'cv', round(b.get('cv',0),3), 'noisy', b.get('noisy'))
PY
