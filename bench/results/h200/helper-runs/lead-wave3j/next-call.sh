# The next session's first call (written at the end of wave-3j, not run). Before it:
#   git rev-parse --short HEAD > .scratch/rev; cp this file .scratch/call.sh
# It applies gate-staged.patch and then stream-wide.patch (in that order: the second is made on the
# first), and measures against 11c in one process:
#   11x = 11c + kGateStaged (the gate's weights in shared memory before its wait, W1's rows padded);
#   11y = 11c + kStreamWide (the stream in one part of 10 n8 tiles at C = 80 @ 14²: D read once a row tile).
# Tests of every store-plan rung first (the patches change the gate kernel and the stream's launch),
# then the bench of 11c, 11x, 11y, ncu kernel times of 11c and 11y at C = 80 @ 14², then the gate's
# source profile. About 200 s of build on a cold machine, 60 s of tests, 60 s of bench, 60 s of ncu.
set -x
T=${CALL_LIMIT:-585}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+patches
mkdir -p /tmp/b /tmp/p /tmp/t
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/b/gpu.txt
git apply bench/results/h200/helper-runs/lead-wave3j/gate-staged.patch && git apply bench/results/h200/helper-runs/lead-wave3j/stream-wide.patch && echo PATCHES-APPLIED
for v in "x_store_gate_staged:true, false" "y_store_stream_wide:false, true"; do n=${v%%:*}; f=${v#*:}
  sed "s/11c_fused_store/11${n}/g; s/run_store_plan<false, false, true, true, true, true>/run_store_plan<false, false, true, true, true, true, $f>/" \
    gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11${n}.cu; done
grep -h "run_store_plan<" gpu/mbconv/11[xy]_*.cu gpu/mbconv/11c_fused_store.cu
OUT=/tmp/t timeout $((T - 230)) bench/run_gpu.sh --no-bench --only 'random shapes|mbconv/gpu/(11c|11e|11h|11i|11k|11x|11y)_' > /tmp/t/run.log 2>&1
cp /tmp/t/gpu-tests.xml /tmp/b/tests.xml 2>/dev/null; cp /tmp/t/summary.txt /tmp/b/tests-summary.txt 2>/dev/null
OUT=/tmp/b CONVLAB_BENCH_TIMEOUT=75 timeout 85 bench/run_gpu.sh --no-tests --only 'mbconv/gpu/(11c|11x|11y)_' > /tmp/b/run.log 2>&1
printf '%s\n' 'mbconv/gpu/11c_fused_store | N=128,H=14,C=80,dtype=f16 | | 4' \
  'mbconv/gpu/11y_store_stream_wide | N=128,H=14,C=80,dtype=f16 | | 4' > /tmp/list.txt
left=$((T - SECONDS)); [ $left -gt 60 ] && OUT=/tmp/p CONVLAB_NCU_SET=basic timeout $((left > 150 ? 70 : left - 15)) bench/profile_gpu.sh /tmp/list.txt > /tmp/p/ncu.log 2>&1
left=$((T - SECONDS)); [ $left -gt 50 ] && OUT=/tmp/p timeout $((left - 10)) \
  bench/profile_source.sh mbconv/gpu/11c_fused_store N=128,H=14,C=80,dtype=f16 se_gate_kernel > /tmp/p/gate.log 2>&1
cp /tmp/b/bench-gpu.json $OUT/bench.json; cp /tmp/b/tests.xml $OUT/gpu-tests.xml 2>/dev/null
cat /tmp/b/tests-summary.txt /tmp/b/summary.txt > $OUT/summaries.txt
cp /tmp/p/profile.tar.gz $OUT/kernel-times.tar.gz 2>/dev/null; cp /tmp/p/source-*.tar.gz $OUT/ 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log b/logs.tar.gz b/run.log b/gpu.txt p/ncu.log p/gate.log
cat $OUT/summaries.txt; tar -xzOf /tmp/p/profile.tar.gz ./profile-summary.txt 2>/dev/null | grep -E "Duration|mbconv::" | cut -c1-110
for f in /tmp/p/source-*.tar.gz; do tar -xzOf $f ./stalls.txt | head -10; tar -xzOf $f ./lines.txt | head -30; done
