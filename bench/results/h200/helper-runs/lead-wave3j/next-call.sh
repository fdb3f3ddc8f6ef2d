# The next session's first call (written at the end of wave-3j, not run). Before it:
#   git rev-parse --short HEAD > .scratch/rev; cp this file .scratch/call.sh
# 1. gate-staged.patch applied; 11x = 11c with kGateStaged (the gate's weights in shared memory
#    before its wait, W1's rows padded to a multiple of 8: not run) against 11c, tests of every
#    store-plan rung first (the patch changes the gate kernel's parameters). wave-3h and wave-3j
#    measured the unpadded form: −2 % at hidden 672, +1 to +4 % at C = 80 @ 14² (H100).
# 2. The stream kernel at C = 80 @ 14² under ncu's full set (memory workload: L2 hit rate of D, LSU
#    requests and sectors per request), to read before any change to it.
# 3. The gate kernel's source profile (its chain of loads and barriers after the wait).
# About 200 s of build on a cold machine, 60 s of tests, 70 s of bench, 60 + 60 s of profiles.
set -x
T=${CALL_LIMIT:-585}
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/b /tmp/p /tmp/t
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/b/gpu.txt
git apply bench/results/h200/helper-runs/lead-wave3j/gate-staged.patch && echo PATCH-APPLIED
sed 's/11c_fused_store/11x_store_gate_staged/g; s/run_store_plan<false, false, true, true, true, true>/run_store_plan<false, false, true, true, true, true, true>/' \
  gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11x_store_gate_staged.cu
grep -h "run_store_plan<" gpu/mbconv/11x_store_gate_staged.cu gpu/mbconv/11c_fused_store.cu
OUT=/tmp/t timeout $((T - 250)) bench/run_gpu.sh --no-bench --only 'random shapes|mbconv/gpu/(11c|11e|11h|11i|11k|11x)_' > /tmp/t/run.log 2>&1
cp /tmp/t/gpu-tests.xml /tmp/b/ 2>/dev/null; cp /tmp/t/summary.txt /tmp/b/tests-summary.txt 2>/dev/null
OUT=/tmp/b CONVLAB_BENCH_TIMEOUT=60 timeout 70 bench/run_gpu.sh --no-tests --only 'mbconv/gpu/(11c|11x)_' > /tmp/b/run.log 2>&1
printf '%s\n' 'mbconv/gpu/11c_fused_store | N=128,H=14,C=80,dtype=f16 | mbconv_project_stream_kernel | 1' > /tmp/list.txt
left=$((T - SECONDS)); [ $left -gt 60 ] && OUT=/tmp/p timeout $((left > 140 ? 80 : left - 20)) bench/profile_gpu.sh /tmp/list.txt > /tmp/p/stream.log 2>&1
left=$((T - SECONDS)); [ $left -gt 50 ] && OUT=/tmp/p timeout $((left - 10)) \
  bench/profile_source.sh mbconv/gpu/11c_fused_store N=128,H=14,C=80,dtype=f16 se_gate_kernel > /tmp/p/gate.log 2>&1
cp /tmp/b/bench-gpu.json $OUT/bench.json; cp /tmp/b/gpu-tests.xml $OUT/ 2>/dev/null; cat /tmp/b/tests-summary.txt /tmp/b/summary.txt > $OUT/summaries.txt
cp /tmp/p/profile.tar.gz $OUT/stream-full.tar.gz 2>/dev/null; cp /tmp/p/source-*.tar.gz $OUT/ 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log b/logs.tar.gz b/run.log b/gpu.txt p/stream.log p/gate.log
cat $OUT/summaries.txt; for f in /tmp/p/source-*.tar.gz; do tar -xzOf $f ./stalls.txt | head -10; tar -xzOf $f ./lines.txt | head -30; done
