#!/usr/bin/env bash
# Second device call: locate the [mbconv] test crash, re-test and re-measure the fused rungs, profile them.
set -uo pipefail
T0=$SECONDS
OUT=${OUT:-/tmp/mbout}; mkdir -p "$OUT"
B=/tmp/b-mbconv
S="$OUT/summary2.txt"
log() { echo "[$((SECONDS - T0))s] $*" | tee -a "$S"; }
export CONVLAB_GIT_REV=mbconv-dev2
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCONVLAB_CUDA=ON -DCONVLAB_CUDA_ARCHS=90 \
  -DCONVLAB_GPU_ONLY='gpu/(lib/|mbconv/|gemm/(03o|03m|cublas)|conv2d/(06a|cudnn))' > /tmp/build.log 2>&1
ninja -C $B -j16 convlab_tests convlab_bench convlab >> /tmp/build.log 2>&1
rc=$?; log "build rc=$rc"; if ((rc)); then tail -40 /tmp/build.log | tee -a "$S"; exit 1; fi
$B/convlab_tests --list-test-names-only "[mbconv]" 2>/dev/null | grep -v "^$" | grep -v "test cases" > /tmp/names.txt
while IFS= read -r name; do
  timeout 60 $B/convlab_tests "$name" > /tmp/one.log 2>&1; rc=$?
  log "test rc=$rc $name $(tail -2 /tmp/one.log | head -1)"
  if ((rc)); then tail -30 /tmp/one.log >> "$S"; fi
done < /tmp/names.txt
F="mbconv/gpu/11b_fused_two_pass,mbconv/gpu/11c_fused_store,mbconv/gpu/11d_fused_no_se"
for tool in memcheck racecheck synccheck; do
  ( timeout 45 compute-sanitizer --tool $tool --error-exitcode 9 $B/convlab_tests "$F" > /tmp/san-$tool.log 2>&1
    echo "rc=$?" >> /tmp/san-$tool.log ) &
done
wait
for tool in memcheck racecheck synccheck; do log "$tool: $(tail -1 /tmp/san-$tool.log) $(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san-$tool.log) $(grep -m1 'All tests passed\|failed' /tmp/san-$tool.log)"; done
timeout 40 $B/convlab_bench --benchmark_filter='^mbconv/gpu/(11b|11c|11d)[^/]*/n128_(56x56_c24|28x28_c40|14x14_c80|14x14_c112|7x7_c192)_e6_k3_s1' \
  --benchmark_out="$OUT/bench-fused2.json" --benchmark_out_format=json > /tmp/bench.log 2>&1
log "bench rc=$?"; grep -E "manual_time" /tmp/bench.log | awk '{print $1, $2, $3}' | tee -a "$S"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
timeout 40 $NCU --set detailed -k regex:mbconv_tile_kernel -c 1 $B/convlab run mbconv/gpu/11d_fused_no_se \
  --shape N=128,H=56,C=24,se=0,dtype=f16 --reps 0 > "$OUT/ncu-11d.txt" 2>&1; log "ncu 11d rc=$?"
timeout 40 $NCU --set detailed -k regex:mbconv_tile_kernel --launch-skip 1 -c 1 $B/convlab run mbconv/gpu/11c_fused_store \
  --shape N=128,H=56,C=24,dtype=f16 --reps 0 > "$OUT/ncu-11c-pass2.txt" 2>&1; log "ncu 11c pass 2 rc=$?"
grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Theoretical Occupancy|Block Limit" "$OUT/ncu-11d.txt" | head -20 | tee -a "$S"
tar -czf "$OUT/logs2.tar.gz" -C /tmp san-memcheck.log san-racecheck.log san-synccheck.log bench.log build.log 2>/dev/null
log done
