# Lesson 11's next call (written in wave-3m, not run: the device was paused all session). Before it:
#   mkdir -p .scratch; git rev-parse --short HEAD > .scratch/rev; cp this file .scratch/call.sh
# lesson 10's call (../lead-wave3l/next-call.sh) goes first; this one is independent of it.
# 1. pad-rows.patch: pass 1's E padded with zero rows as well as columns, one kernel per rows an item
#    makes (kRows), so that no depthwise item tests its window rows; two GPU test-table shapes that
#    reach the kernels of 3 rows (k = 3) and of 2 rows at stride 2. The copy 11z = 11c + kPadRows.
#    (Not 11h: at C = 112 @ 14² the taller E does not fit two CTAs, so 11h would be unchanged there.)
#    stream-bulk.patch (made on top of it): pass 2 with D brought in by bulk copies into a ring of
#    slots that one producer thread keeps full (mbconv_project_bulk.cuh). The copy 11y = 11c +
#    kStreamBulk (C_out ≤ 80: 56², 28², C = 80 @ 14²).
# 2. Tests of 11c, 11z, 11y, the host tile tests and the random-shape sweep; one bench process of the
#    three (pad rows changes 9 of the 15 SE bench shapes, the bulk pass 2 the C_out ≤ 80 ones).
# 3. ncu kernel times of 11c, 11z and 11y at C = 80 @ 14² (pass 1 and pass 2 side by side).
# 4. With time left, compute-sanitizer (memcheck, racecheck, synccheck, initcheck) on 11y, then 11z.
# About 220 s of build on a cold machine, 80 s of tests, 85 s of bench, 70 s of ncu.
set -x
T=${CALL_LIMIT:-585}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+pad-rows+bulk
Q=bench/results/h200/helper-runs/lead-wave3m
mkdir -p /tmp/b /tmp/p /tmp/t
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/b/gpu.txt
git apply $Q/pad-rows.patch && echo PATCH-APPLIED && git apply $Q/stream-bulk.patch && echo BULK-APPLIED
sed "s/11c_fused_store/11z_store_rows/g; s/run_store_plan<false, false, true, true, true, true>/run_store_plan<false, false, true, true, true, true, true>/" \
  gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11z_store_rows.cu
sed "s/11c_fused_store/11y_store_bulk/g; s/run_store_plan<false, false, true, true, true, true>/run_store_plan<false, false, true, true, true, true, false, true>/" \
  gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11y_store_bulk.cu
grep -h "run_store_plan<" gpu/mbconv/11[zyc]_*.cu
OUT=/tmp/t timeout $((T - 250)) bench/run_gpu.sh --no-bench --only 'random shapes|mbconv/gpu/(11c|11z|11y)_|mbconv tile|mbconv bulk' > /tmp/t/run.log 2>&1
cp /tmp/t/gpu-tests.xml /tmp/b/tests.xml 2>/dev/null; cp /tmp/t/summary.txt /tmp/b/tests-summary.txt 2>/dev/null
OUT=/tmp/b CONVLAB_BENCH_TIMEOUT=75 timeout 85 bench/run_gpu.sh --no-tests --only 'mbconv/gpu/(11c|11z|11y)_' > /tmp/b/run.log 2>&1
printf '%s\n' 'mbconv/gpu/11c_fused_store | N=128,H=14,C=80,dtype=f16 | | 4' \
  'mbconv/gpu/11z_store_rows | N=128,H=14,C=80,dtype=f16 | | 4' \
  'mbconv/gpu/11y_store_bulk | N=128,H=14,C=80,dtype=f16 | | 4' > /tmp/list.txt
left=$((T - SECONDS)); [ $left -gt 60 ] && OUT=/tmp/p CONVLAB_NCU_SET=basic timeout $((left > 150 ? 80 : left - 15)) bench/profile_gpu.sh /tmp/list.txt > /tmp/p/ncu.log 2>&1
left=$((T - SECONDS))
if [ $left -gt 100 ]; then
  mkdir -p /tmp/s
  OUT=/tmp/s CONVLAB_SANITIZE_TESTS='mbconv/gpu/11y_store_bulk,mbconv/gpu/11z_store_rows' CONVLAB_SANITIZE_TIMEOUT=$((left - 30)) \
    CONVLAB_SANITIZE_TEST_TIMEOUT=$((left - 35)) CONVLAB_RACECHECK_FLOP_LIMIT=5e7 CONVLAB_SANITIZE_JOBS=4 \
    timeout $((left - 15)) bench/run_gpu.sh --sanitize-only > /tmp/s/run.log 2>&1
  cp /tmp/s/sanitize.log $OUT/ 2>/dev/null
fi
cp /tmp/b/bench-gpu.json $OUT/bench.json; cp /tmp/b/tests.xml $OUT/gpu-tests.xml 2>/dev/null
cat /tmp/b/tests-summary.txt /tmp/b/summary.txt > $OUT/summaries.txt
cp /tmp/p/profile.tar.gz $OUT/kernel-times.tar.gz 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log b/logs.tar.gz b/run.log b/gpu.txt p/ncu.log s/run.log s/logs.tar.gz
cat $OUT/summaries.txt; tar -xzOf /tmp/p/profile.tar.gz ./profile-summary.txt 2>/dev/null | grep -E "Duration|mbconv::" | cut -c1-110
python3 - <<'PY'
import json
try:
    rows = json.load(open('/tmp/b/bench-gpu.json'))['benchmarks']
except Exception as e:
    print('no bench json', e); rows = []
for r in rows:
    n = r['name'].split('/')
    print(n[2][:28].ljust(28), n[3][:44].ljust(44), round(r['real_time'], 4), 'cv', round(r.get('cv') or 0, 3))
PY
