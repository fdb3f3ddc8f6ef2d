#!/usr/bin/env bash
# wave-2y call 4 (838a635's kernels, no GPU code changed since): source-level profiles of 11j at
# C = 80 @ 14² and 11g at C = 192 @ 7², to find where the project's ≈ 13 µs a CTA go.
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/a /tmp/p
OUT=/tmp/a timeout 250 bench/run_gpu.sh --no-tests --no-bench --only 'mbconv/gpu/11j' > $OUT/run.log 2>&1; echo "build rc $?"
OUT=/tmp/p timeout 140 bash bench/profile_source.sh mbconv/gpu/11j_fused_image_cluster N=128,H=14,C=80,dtype=f16 mbconv_image_wgmma >> $OUT/run.log 2>&1; echo "profile 1 rc $?"
OUT=/tmp/p timeout 140 bash bench/profile_source.sh mbconv/gpu/11g_fused_image_wgmma N=128,H=7,C=192,dtype=f16 mbconv_image_wgmma >> $OUT/run.log 2>&1; echo "profile 2 rc $?"
ls -la /tmp/p; cp /tmp/p/*.tar.gz $OUT/ 2>/dev/null
cd /tmp/p && for f in *.tar.gz; do mkdir -p x-$f && tar xzf $f -C x-$f; done; cd - >/dev/null
for d in /tmp/p/x-*; do echo "== $d"; cat $d/*/stalls.txt $d/stalls.txt 2>/dev/null | head -12; done
tail -5 $OUT/run.log
