# bench/call_stages.sh — the stages of one device call, for a call script to source
# (bench/results/h200/helper-runs/<session>/callN.sh), so that each script says only what it asks.
#
# A call gets one lent machine for at most 600 s and brings back at most eight files from $OUT.
# The stages, in the order a call runs them:
#   call_build [LIMIT]            cmake + ninja of build-gpu under their own limit (default 300 s),
#                                 log in $OUT/build.log; non-zero if the build did not finish:
#                                 `call_build || exit 4`. A build never shares a stage's limit: a
#                                 stage whose limit covers a cold build that did not finish gets
#                                 nothing done (lesson 10's NOTES, wave-3w). CALL_GPU_ONLY (a regex:
#                                 CMake's CONVLAB_GPU_ONLY) builds only the GPU sources the call
#                                 needs, e.g. 'gpu/(lib|mbconv)/'; the other ops' GPU tests skip,
#                                 and so does a rung built on other ops' rungs (lesson 11's 11a and
#                                 cudnn) where those are left out: keep their files to test it.
#   call_stage NAME LIMIT ARGS    bench/run_gpu.sh ARGS (its build step finds nothing to do) with
#                                 its own $OUT (/tmp/call-NAME) under `timeout LIMIT`; run_gpu.sh's
#                                 settings go in front: CONVLAB_BENCH_TIMEOUT=50 call_stage bench ...
#                                 Copies gpu-tests.xml, bench-gpu.json and sanitize.log to $OUT
#                                 where the stage wrote them (so give one stage each).
#   call_sanitize TESTS           the four compute-sanitizer tools on TESTS (run_gpu.sh's
#                                 CONVLAB_SANITIZE_TESTS: names or globs, comma-separated) in the
#                                 time left before CALL_LIMIT (default 560 s), if 40 s are left.
#                                 Name GPU tests only: a test that makes no CUDA call counts as a
#                                 failure under compute-sanitizer.
#   call_ncu_times ROW KERNELS    Nsight Compute's time and DRAM bytes of the launches 7–12 that
#                                 match KERNELS (a regex) in the bench row ROW (its name up to the
#                                 dtype, e.g. mbconv/gpu/11c_fused_store/n128_..._silu_f16), twice:
#                                 with the L2 as the launches before left it (--cache-control none)
#                                 and flushed (all), each under the time left before CALL_LIMIT (at
#                                 most 60 s; skipped under 20 s); CSVs in $OUT/ncu-NAME-{none,all}.csv,
#                                 NAME the row after "/gpu/" with "-" for "/" (the rung and the shape,
#                                 so that two rungs at one shape keep their own files), their lines
#                                 printed. Pack the CSVs before the eight-file limit. CALL_NCU
#                                 replaces ncu (the tests use a stub).
#   call_finish                   every stage's logs into $OUT/logs.tar.gz, their summaries into
#                                 $OUT/summaries.txt (and printed), the sanitizer lines and the
#                                 bench rows printed.
# Run from the repository root, with $OUT set (the lent machine sets it). CALL_RUN_GPU replaces
# bench/run_gpu.sh (the tests use a stub).

CALL_RUN_GPU=${CALL_RUN_GPU:-bench/run_gpu.sh}
CALL_LIMIT=${CALL_LIMIT:-560}
call_stages_dir=${CALL_STAGES_DIR:-/tmp}  # where the stages' own $OUT folders go
call_stage_names=()

call_build() {
  local limit=${1:-300}
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCONVLAB_CUDA=ON -DCONVLAB_CUDA_ARCHS=90 \
    "-DCONVLAB_GPU_ONLY=${CALL_GPU_ONLY:-}" > "$OUT/build.log" 2>&1 &&
    timeout "$limit" ninja -C build-gpu >> "$OUT/build.log" 2>&1
  local status=$?
  if ((status != 0)); then
    echo "call_build: the build did not finish (status $status, limit ${limit}s)"
    tail -20 "$OUT/build.log"
    return 1
  fi
  echo "call_build: done at ${SECONDS}s"
}

call_stage() {
  local name=$1 limit=$2
  shift 2
  local dir=$call_stages_dir/call-$name
  rm -rf "$dir" && mkdir -p "$dir"
  call_stage_names+=("$name")
  OUT=$dir timeout "$limit" "$CALL_RUN_GPU" "$@" > "$dir/run.log" 2>&1
  local status=$?
  ((status == 124)) && echo "call_stage $name: stopped at its limit of ${limit}s" | tee -a "$dir/run.log"
  local f
  for f in gpu-tests.xml bench-gpu.json sanitize.log; do
    [[ -f $dir/$f ]] && cp "$dir/$f" "$OUT/$f"
  done
  return "$status"
}

call_sanitize() {
  local left=$((CALL_LIMIT - SECONDS))
  if ((left <= 40)); then
    echo "call_sanitize: ${left}s left before ${CALL_LIMIT}s; not run"
    return 0
  fi
  CONVLAB_SANITIZE_TESTS=$1 CONVLAB_SANITIZE_TIMEOUT=$((left - 15)) CONVLAB_SANITIZE_TEST_TIMEOUT=$((left - 20)) \
    CONVLAB_RACECHECK_FLOP_LIMIT=${CONVLAB_RACECHECK_FLOP_LIMIT:-5e7} CONVLAB_SANITIZE_JOBS=${CONVLAB_SANITIZE_JOBS:-6} \
    call_stage sanitize $((left - 8)) --sanitize-only
}

call_ncu_times() {
  local row=$1 kernels=$2 cc left status
  local name=${row#*/gpu/}
  name=${name//\//-}
  local ncu=${CALL_NCU:-$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)}
  for cc in none all; do
    left=$((CALL_LIMIT - SECONDS - 5))
    if ((left < 20)); then
      echo "call_ncu_times: $name $cc skipped: ${left}s left before ${CALL_LIMIT}s"
      continue
    fi
    ((left > 60)) && left=60
    timeout "$left" "$ncu" --cache-control "$cc" --clock-control none --kernel-name "regex:$kernels" \
      --launch-skip 6 --launch-count 6 --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
      --csv build-gpu/convlab_bench --benchmark_filter="^$row" --benchmark_min_time=0.01s > "$OUT/ncu-$name-$cc.csv" 2>&1
    status=$?
    echo "call_ncu_times: $name $cc: status $status"
    grep -E 'gpu__time_duration|dram__bytes' "$OUT/ncu-$name-$cc.csv" |
      awk -F'","' '{v = $NF; gsub(/"/, "", v); print substr($5, 1, 40) " | " $(NF - 2) " | " v}'
  done
  return 0
}

call_finish() {
  local name f parts=()
  for name in "${call_stage_names[@]}"; do
    for f in run.log logs.tar.gz summary.txt; do
      [[ -f $call_stages_dir/call-$name/$f ]] && parts+=("call-$name/$f")
    done
  done
  ((${#parts[@]})) && tar -czf "$OUT/logs.tar.gz" -C "$call_stages_dir" "${parts[@]}"
  : > "$OUT/summaries.txt"
  for name in "${call_stage_names[@]}"; do
    [[ -f $call_stages_dir/call-$name/summary.txt ]] && grep -v "^  " "$call_stages_dir/call-$name/summary.txt" >> "$OUT/summaries.txt"
  done
  cat "$OUT/summaries.txt"
  [[ -f $OUT/sanitize.log ]] && grep -E "^(memcheck|racecheck|synccheck|initcheck) " "$OUT/sanitize.log"
  [[ -f $OUT/bench-gpu.json ]] && python3 bench/bench_rows.py "$OUT/bench-gpu.json"
  return 0
}
