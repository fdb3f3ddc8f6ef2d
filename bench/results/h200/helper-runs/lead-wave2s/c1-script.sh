#!/usr/bin/env bash
# wave-2s call 1 (main 9b2a3ac): build; Nsight source profile + sections of 10e at C=256@14²;
# 10c/10e rows at C=256/512; then the FC2 branch's mbconv_image_se.cuh swapped in: 11g tests + 11f/11g 7² bench
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/a /tmp/b /tmp/c /tmp/p
OUT=/tmp/a bench/run_gpu.sh --no-tests --only 'convfirst/gpu/10[be].*(14x14_c256|7x7_c512)' > $OUT/run.log 2>&1
cp /tmp/a/bench-gpu.json $OUT/bench-10e.json; cat /tmp/a/summary.txt > $OUT/summaries.txt
OUT=/tmp/p timeout 200 bench/profile_source.sh convfirst/gpu/10e_fused_cluster "N=128,H=14,C=256,dtype=f16" convfirst_fused_cluster >> $OUT/run.log 2>&1
cp /tmp/p/source-*.tar.gz $OUT/source-10e-c256.tar.gz
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
timeout 150 $ncu --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats \
  --section LaunchStats --section Occupancy --section InstructionStats --clock-control none -k regex:convfirst_fused_cluster -c 1 \
  build-gpu/convlab run convfirst/gpu/10e_fused_cluster --shape "N=128,H=14,C=256,dtype=f16" --reps 0 > $OUT/ncu-10e-c256.txt 2>&1
cp .scratch/fc2-mbconv_image_se.cuh gpu/lib/mbconv_image_se.cuh
OUT=/tmp/b bench/run_gpu.sh --no-bench --only 'mbconv/gpu/11g' >> $OUT/run.log 2>&1
cp /tmp/b/gpu-tests.xml $OUT/gpu-tests-fc2.xml; cat /tmp/b/summary.txt >> $OUT/summaries.txt
OUT=/tmp/c bench/run_gpu.sh --no-tests --only 'mbconv/gpu/11[fg].*7x7_c192' >> $OUT/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench-11fg-fc2.json; cat /tmp/c/summary.txt >> $OUT/summaries.txt
for s in "N=128,H=7,C=192,dtype=f16" "N=128,H=7,C=192,k=5,dtype=f16"; do echo "== $s"
  CONVLAB_PHASE_STAMPS=1 build-gpu/convlab run mbconv/gpu/11g_fused_image_wgmma --shape $s --reps 2 2>&1 | grep -v "^ *->"; done > $OUT/stamps-fc2.txt 2>&1
cat $OUT/summaries.txt; cat $OUT/stamps-fc2.txt
head -60 $OUT/ncu-10e-c256.txt | tail -50
for f in bench-10e bench-11fg-fc2; do python3 - $OUT/$f.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for b in d['benchmarks']:
    if b.get('run_type')=='aggregate' and not b['name'].endswith('_median'): continue
    print(sys.argv[1].split('/')[-1], b['name'], b.get('real_time'), b.get('time_unit'))
PY
done
tail -c 1500 $OUT/run.log
