# Call 2 (wave-3m): the bulk pass 2 again after call 1's findings (an H100): its grid counted the SMs
# twice (512 CTAs, one task each, two waves, Wp staged 512 times); the ring's unwritten rows were
# read uninitialized (initcheck); racecheck flagged the slot's reads against the next copy.
# stream-bulk.patch now launches one wave, zeroes the ring once, and fences the slot's reads before
# its release. 11y's tests, one bench process of 11c and 11y at the three shapes it takes, their
# kernel times at C = 80 @ 14², and compute-sanitizer on 11y.
set -x
T=${CALL_LIMIT:-585}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+pad-rows+bulk
Q=bench/results/h200/helper-runs/lead-wave3m
mkdir -p /tmp/b /tmp/p /tmp/t /tmp/s
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/b/gpu.txt
git apply $Q/pad-rows.patch && git apply $Q/stream-bulk.patch && echo PATCHES-APPLIED
sed "s/11c_fused_store/11y_store_bulk/g; s/run_store_plan<false, false, true, true, true, true>/run_store_plan<false, false, true, true, true, true, false, true>/" \
  gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11y_store_bulk.cu
OUT=/tmp/t timeout $((T - 300)) bench/run_gpu.sh --no-bench --only 'mbconv/gpu/11y_|mbconv: every GPU rung|mbconv bulk' > /tmp/t/run.log 2>&1
OUT=/tmp/b CONVLAB_BENCH_TIMEOUT=60 timeout 70 bench/run_gpu.sh --no-tests --only 'mbconv/gpu/(11c|11y)_.*(56x56_c24_e6_k3|28x28_c40_e6_k3|14x14_c80_e6_k3)' > /tmp/b/run.log 2>&1
printf '%s\n' 'mbconv/gpu/11c_fused_store | N=128,H=14,C=80,dtype=f16 | | 4' \
  'mbconv/gpu/11y_store_bulk | N=128,H=14,C=80,dtype=f16 | | 4' > /tmp/list.txt
left=$((T - SECONDS)); [ $left -gt 60 ] && OUT=/tmp/p CONVLAB_NCU_SET=basic timeout $((left > 150 ? 60 : left - 15)) bench/profile_gpu.sh /tmp/list.txt > /tmp/p/ncu.log 2>&1
left=$((T - SECONDS))
[ $left -gt 60 ] && OUT=/tmp/s CONVLAB_SANITIZE_TESTS='mbconv/gpu/11y_store_bulk' CONVLAB_SANITIZE_TIMEOUT=$((left - 20)) \
  CONVLAB_SANITIZE_TEST_TIMEOUT=$((left - 25)) CONVLAB_RACECHECK_FLOP_LIMIT=5e7 CONVLAB_SANITIZE_JOBS=4 \
  timeout $((left - 10)) bench/run_gpu.sh --sanitize-only > /tmp/s/run.log 2>&1
cp /tmp/s/sanitize.log /tmp/b/bench-gpu.json /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null; cp /tmp/p/profile.tar.gz $OUT/kernel-times.tar.gz 2>/dev/null
cat /tmp/t/summary.txt /tmp/b/summary.txt > $OUT/summaries.txt 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log b/logs.tar.gz b/run.log b/gpu.txt p/ncu.log s/run.log s/logs.tar.gz
cat $OUT/summaries.txt; grep -E "^(memcheck|racecheck|synccheck|initcheck)[ :]" /tmp/s/sanitize.log | head -8
tar -xzOf /tmp/p/profile.tar.gz ./profile-summary.txt 2>/dev/null | grep -E "Duration|mbconv::|DRAM Through" | cut -c1-110
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
