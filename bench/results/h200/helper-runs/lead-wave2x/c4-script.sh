#!/usr/bin/env bash
# wave-2x call 4: source-level stall profiles (no code change since call 3, 0fd552b): 11h's pass 2 on the
# e = 1 block at 112² (where it loses to 11c's) and its pass 1 at C = 80 @ 14²; the build's warnings.
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/a /tmp/p
OUT=/tmp/a timeout 260 bench/run_gpu.sh --no-tests --no-bench > $OUT/run.log 2>&1
cat /tmp/a/summary.txt > $OUT/summaries.txt
mkdir -p /tmp/l && tar xzf /tmp/a/logs.tar.gz -C /tmp/l 2>/dev/null; grep -rh -B2 -A6 "warning:" /tmp/l | head -60 > $OUT/build-warnings.txt
OUT=/tmp/p timeout 150 bash bench/profile_source.sh mbconv/gpu/11h_fused_store_wgmma N=128,H=112,C=32,e=1,C_out=16,dtype=f16 project_wgmma >> $OUT/run.log 2>&1; echo "profile 1 rc $?"
OUT=/tmp/p timeout 150 bash bench/profile_source.sh mbconv/gpu/11h_fused_store_wgmma N=128,H=14,C=80,dtype=f16 mbconv_tile_kernel >> $OUT/run.log 2>&1; echo "profile 2 rc $?"
ls -la /tmp/p
for f in /tmp/p/*.tar.gz; do d=/tmp/p/x-$(basename $f .tar.gz); mkdir -p $d; tar xzf $f -C $d; echo "==== $f"; find $d -name stalls.txt -exec head -14 {} \; ; find $d -name hot.txt -exec head -50 {} \; ; done > $OUT/profiles.txt 2>&1
cp /tmp/p/*.tar.gz $OUT/ 2>/dev/null
cat $OUT/summaries.txt; cat $OUT/build-warnings.txt | head -30
head -130 $OUT/profiles.txt | cut -c1-150
