#!/bin/bash
# bench/dev/hopper2_run.sh — one lent-H200 call for issue 13's conv/FFN/GEMM Hopper work:
# build (gpu/(lib|conv2d|ffn|gemm)/ only), GPU tests, compute-sanitizer on 04c, benchmarks,
# Nsight Compute (--set detailed) on one launch each of 04c, 03r at 8192^3 and 08d at C=64.
# MODE=profile (default) does all of it; MODE=ffn builds and runs the ffn tests and benches only.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
MODE=${MODE:-profile}
B=/tmp/b-hopper2
DEADLINE=${DEADLINE:-190}
left() { echo $((DEADLINE - SECONDS)); }
log() { echo "[$(date +%T) +${SECONDS}s] $*" | tee -a "$OUT/summary.txt"; }
log "start $(nvidia-smi -L | head -1) mode=$MODE"
export PATH=/usr/local/cuda/bin:$PATH
if [[ ! -x $B/convlab_bench ]]; then
  cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCONVLAB_CUDA=ON -DCONVLAB_CUDA_ARCHS=90 \
    "-DCONVLAB_GPU_ONLY=gpu/(lib|conv2d|ffn|gemm)/" > "$OUT/build.log" 2>&1 || { log "configure FAILED"; tail -30 "$OUT/build.log"; exit 1; }
  ninja -C $B -j16 convlab_tests convlab_bench convlab >> "$OUT/build.log" 2>&1 || { log "build FAILED"; grep -E "error" -A3 "$OUT/build.log" | head -60; exit 1; }
fi
log "built ($(grep -c 'warning' "$OUT/build.log") warning lines)"
grep -B2 -A6 "warning" "$OUT/build.log" | grep -A6 "04c_\|tma_im2col\|conv_wgmma\|08d_" | head -30
export CONVLAB_SEED=${CONVLAB_SEED:-1301}
if [[ $MODE == ffn ]]; then TESTS="[ffn][gpu],[hopper]"; else TESTS="[conv2d][gpu],[ffn][gpu],[gemm][gpu],[hopper]"; fi
timeout $(( $(left) > 70 ? 70 : $(left) )) $B/convlab_tests "$TESTS" -r junit -o "$OUT/tests.xml" > "$OUT/tests.log" 2>&1
log "tests rc=$? : $(grep -o 'tests="[0-9]*" \|failures="[0-9]*"\|errors="[0-9]*"\|skipped="[0-9]*"' "$OUT/tests.xml" | head -4 | tr '\n' ' ')"
grep -B3 -A12 "FAILED\|failed" "$OUT/tests.log" | head -60
SH='n128h56w56c128_k128r3s3_str1pad1g1_f16'
FF='p401408_c64_h256_co64_relu_f16'
if [[ $MODE == ffn ]]; then
  FILTER="^ffn/gpu/(08d_fused_wgmma|cublas)/p401408_c(64|128|256)_h[0-9]*_co[0-9]*_relu_f16"
else
  FILTER="^(conv2d/gpu/(04c_implicit_gemm_wgmma|04b_implicit_gemm_tensor_core|cudnn)/$SH|ffn/gpu/(08d_fused_wgmma|cublas)/$FF)"
fi
timeout $(( $(left) > 60 ? 60 : $(left) )) $B/convlab_bench --benchmark_filter="$FILTER" \
  --benchmark_out="$OUT/bench.json" --benchmark_out_format=json > "$OUT/bench.log" 2>&1
log "bench rc=$?"; grep -E "^(conv2d|ffn)/" "$OUT/bench.log" | cut -c1-160 | tee -a "$OUT/summary.txt"
if [[ $MODE == profile ]]; then
  T=conv2d/gpu/04c_implicit_gemm_wgmma
  for tool in memcheck racecheck synccheck; do
    timeout $(( $(left) > 45 ? 45 : $(left) )) compute-sanitizer --tool $tool --error-exitcode 9 $B/convlab_tests "$T" > "$OUT/san-$tool.log" 2>&1 &
  done
  wait
  for tool in memcheck racecheck synccheck; do
    log "sanitize $tool : $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed|failed|No test' "$OUT/san-$tool.log" | tail -3 | tr '\n' ' ')"
  done
  mkdir -p /tmp/prof
  prof() {  # name target shape kernel-regex
    local t=$(( $(left) > 40 ? 40 : $(left) ))
    ((t < 8)) && { log "ncu $1 not run (time)"; return; }
    timeout $t ncu --set detailed --clock-control none --import-source no -k "regex:$4" -c 1 --kill yes -o /tmp/prof/$1 -f \
      $B/convlab run "$2" --shape "$3" --reps 0 > /tmp/prof/$1.log 2>&1
    log "ncu $1 rc=$?"
    ncu --import /tmp/prof/$1.ncu-rep --page details > /tmp/prof/$1-details.txt 2>&1
    ncu --import /tmp/prof/$1.ncu-rep --page raw --csv > /tmp/prof/$1-raw.csv 2>&1
    grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Registers|Achieved Occupancy|Issue Slots|Warp Cycles Per Issued" /tmp/prof/$1-details.txt | head -12 >> "$OUT/summary.txt"
  }
  prof conv04c $T "N=128,H=56,C=128,K=128,R=3,pad=1,dtype=f16" conv_wgmma
  prof ffn08d ffn/gpu/08d_fused_wgmma "P=401408,C=64,hidden=256,C_out=64,act=relu,dtype=f16" ffn_fused_wgmma
  prof gemm03r gemm/gpu/03r_wgmma_persistent "M=8192,N=8192,K=8192,dtype=f16" wgmma_gemm
  tar czf "$OUT/profiles.tar.gz" -C /tmp/prof . 2>/dev/null
  tar czf "$OUT/sanitize.tar.gz" -C "$OUT" san-memcheck.log san-racecheck.log san-synccheck.log && rm -f "$OUT"/san-*.log
fi
tar czf "$OUT/logs.tar.gz" -C "$OUT" build.log tests.log bench.log && rm -f "$OUT/build.log" "$OUT/tests.log" "$OUT/bench.log"
log "done"
