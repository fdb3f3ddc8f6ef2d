#!/usr/bin/env bash
# One device call for the mbconv helper: build (GPU sources limited), GPU tests, benchmarks, sanitizers, torch.
set -uo pipefail
T0=$SECONDS
OUT=${OUT:-/tmp/mbout}; mkdir -p "$OUT"
B=/tmp/b-mbconv
log() { echo "[$((SECONDS - T0))s] $*" | tee -a "$OUT/summary.txt"; }
export CONVLAB_GIT_REV=mbconv-dev
log "start $(nvidia-smi -L 2>&1 | head -1)"
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCONVLAB_CUDA=ON -DCONVLAB_CUDA_ARCHS=90 \
  -DCONVLAB_GPU_ONLY='gpu/(lib/|mbconv/|gemm/(03o|03m|cublas)|conv2d/(06a|cudnn))' > "$OUT/build.log" 2>&1
ninja -C $B -j16 convlab_tests convlab_bench convlab >> "$OUT/build.log" 2>&1
rc=$?; log "build rc=$rc"; if ((rc)); then tail -60 "$OUT/build.log"; exit 1; fi
timeout 60 $B/convlab_tests "[mbconv]" > "$OUT/tests.log" 2>&1; log "tests [mbconv] rc=$?"; tail -5 "$OUT/tests.log"
grep -B5 -A25 "FAILED" "$OUT/tests.log" | head -80
# benchmarks: the whole mbconv GPU table, short
timeout 75 $B/convlab_bench --benchmark_filter='^mbconv/gpu/' --benchmark_min_time=0.05s \
  --benchmark_out="$OUT/bench-mbconv.json" --benchmark_out_format=json > "$OUT/bench.log" 2>&1
log "bench rc=$?"; grep -E "manual_time|ERROR|error" "$OUT/bench.log" | awk '{print $1, $2, $3}' | head -90
# sanitizers on the fused rungs' tests (small shapes), in parallel
for tool in memcheck racecheck synccheck; do
  ( timeout 45 compute-sanitizer --tool $tool --error-exitcode 9 $B/convlab_tests \
      "mbconv/gpu/11b_fused_two_pass,mbconv/gpu/11c_fused_store,mbconv/gpu/11d_fused_no_se,mbconv/gpu/11a_layer_by_layer" \
      > "$OUT/san-$tool.log" 2>&1; echo "rc=$?" >> "$OUT/san-$tool.log" ) &
done
wait
for tool in memcheck racecheck synccheck; do log "$tool: $(tail -1 $OUT/san-$tool.log) $(grep -m1 'ERROR SUMMARY' $OUT/san-$tool.log)"; done
left=$((185 - (SECONDS - T0)))
if ((left > 25)); then
  PYTHONUNBUFFERED=1 timeout $left python3 bench/mbconv_torch.py --convlab $B/convlab --budget-s $((left - 8)) \
    --out "$OUT/mbconv-torch.json" > "$OUT/torch.log" 2>&1
  log "torch rc=$? (budget $((left - 8)) s)"; tail -40 "$OUT/torch.log"
else log "torch skipped: ${left}s left"; fi
tar -czf "$OUT/logs.tar.gz" -C "$OUT" build.log tests.log bench.log san-memcheck.log san-racecheck.log san-synccheck.log torch.log 2>/dev/null
rm -f "$OUT"/build.log "$OUT"/san-*.log "$OUT"/bench.log
log "done"
