#!/usr/bin/env bash
# bench/run_gpu.sh — the one command for the lent GPU machine (an H200).
#
# From the repository root:
#   bench/run_gpu.sh [--sanitize] [--no-tests] [--no-bench] [--torch] [--only REGEX]
#
# It builds (build-gpu/, Release, sm_90), lists the GPU, measures the machine's
# peaks (`convlab probe`), runs the GPU variants' tests through CTest, then the
# GPU benchmarks, and with --sanitize also runs every GPU test under
# compute-sanitizer's memcheck, racecheck, synccheck and initcheck. A failing
# stage is recorded and the next one still runs, except after a failed build.
# The summary is printed last; the exit status is 0 only if every stage passed.
#
#   --only REGEX   which tests/benchmarks to run (default '/gpu/|GPU|Winograd': every GPU
#                  variant's test and benchmark, plus the lesson tests that need a GPU or
#                  print GPU rows: "...every GPU softmax variant...", "...error of Winograd..."),
#                  matched against names such as gemm/gpu/03j_register_blocking_2d; given
#                  explicitly, it also narrows the sanitizer stage's tests to those it matches
#   --no-tests, --no-bench   skip a stage (e.g. a build-only first call)
#   --torch        also PyTorch's side (bench/*_torch.py: convfirst, mbconv, sdpa, those present):
#                  each checks its outputs against convlab's first, then times eager and Inductor;
#                  the block scripts' rows join bench-gpu.json, attention's to sdpa-torch.json
#   --sanitize     also the four compute-sanitizer tools over every test of CONVLAB_SANITIZE_TESTS,
#                  one process per (tool, test), several at a time (see below)
#   --sanitize-only   build only convlab_tests and the program, skip probe, tests and benchmarks,
#                  run the sanitizer stage: one call of the lent machine (about 1 min build +
#                  CONVLAB_SANITIZE_TIMEOUT), e.g. OUT=$OUT bench/run_gpu.sh --sanitize-only
#
# Time limits (seconds) and choices, from the environment:
#   CONVLAB_TEST_TIMEOUT (300)  CONVLAB_BENCH_TIMEOUT (300, per operation)
#   CONVLAB_BENCH_DEADLINE (900: operations not started this long after the bench stage began
#     are reported "not run", so a call's time limit cuts whole operations, not the JSON)
#   CONVLAB_TORCH_TIMEOUT (240, per script)  CONVLAB_TORCH_BUDGET (180: --budget-s of the scripts
#     that take one; they leave out the slowest baselines rather than overrun)
#   CONVLAB_TORCH_SCRIPTS ("convfirst mbconv sdpa": which bench/<name>_torch.py run)
#   CONVLAB_TORCH_SHAPES (unset: each script's bench table; else passed as --shapes to the scripts
#     that take it, in their own format: name one script with CONVLAB_TORCH_SCRIPTS)
#   CONVLAB_SANITIZE_TIMEOUT (420: the whole sanitizer stage; tests not started by then are
#     reported "not run")  CONVLAB_SANITIZE_TEST_TIMEOUT (300: one test under one tool)
#   CONVLAB_SANITIZE_JOBS (8 processes at a time)  CONVLAB_SANITIZE_TOOLS ("memcheck racecheck
#     synccheck initcheck")  CONVLAB_SANITIZE_TESTS ("[gpu]~[sweep]", a Catch test spec: every
#     GPU test but the sweeps: lesson 12's every tile, whose kernel "[sanitize]" covers one tile of
#     each kind, and the block ops' random shapes, whose variants the tables' tests cover)
#   CONVLAB_SANITIZE_FLOP_LIMIT (1e9: under the sanitizer a test's table leaves out shapes above
#     this many FLOPs, keeping its smallest; the tools slow kernels 10-1000x. 0: whole tables)
#   CONVLAB_RACECHECK_FLOP_LIMIT (1e8: the same under racecheck, which instruments every shared
#     access and is the slowest tool by far: 300 s did not finish 09b or 01d at 1e9)
#   CONVLAB_INITCHECK_SKIP ('/gpu/(cublas|cudnn)$': tests initcheck leaves out. On the H200,
#     initcheck reports every read of a buffer cuBLAS wrote (from its first element, while the
#     test, which poisons outputs, passes: the tool does not see those writes) and reads inside
#     cuDNN's own kernels; the vendor's code, not convlab's. The other three tools run on them.)
#
# $OUT (default /tmp/convlab-gpu-<time>) receives at most eight files, because
# the lent machine's tool brings back no more than that:
#   summary.txt      stage by stage, rewritten after every stage (a signal marks the stage KILLED)
#   environment.txt  nvidia-smi, toolchain versions, `convlab probe` output
#   probe.json       the measured peaks
#   gpu-tests.xml    JUnit from CTest (its console output is gpu-tests.log in logs.tar.gz)
#   bench-gpu.json   Google Benchmark JSON of every GPU benchmark, rewritten after each operation
#   results.tar.gz   the other result files: sdpa-torch.json (PyTorch's attention rows, with --torch),
#                    tdc_oracle.json and tdc_layers.json (lesson 12's oracle sweep and layers)
#   sanitize.log     compute-sanitizer: counts per tool, every (tool, test) verdict, and the
#                    log tail of each test that was not clean (with --sanitize)
#   logs.tar.gz      everything else: build log, per-process benchmark logs and JSON
# bench/collect_gpu_results.sh files them under bench/results/<date>-<gpu>/.
set -euo pipefail

# ---- options ------------------------------------------------------------------
sanitize=0
sanitize_only=0
run_tests=1
run_bench=1
run_torch=0
only='/gpu/|GPU|Winograd'
only_given=0
while (($#)); do
  case "$1" in
    --sanitize) sanitize=1 ;;
    --sanitize-only) sanitize=1; run_tests=0; run_bench=0; sanitize_only=1 ;;
    --no-tests) run_tests=0 ;;
    --no-bench) run_bench=0 ;;
    --torch) run_torch=1 ;;
    --only) only="$2"; only_given=1; shift ;;
    --only=*) only="${1#--only=}"; only_given=1 ;;
    -h|--help) sed -n '2,46p' "$0"; exit 0 ;;
    *) echo "run_gpu.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

test_timeout=${CONVLAB_TEST_TIMEOUT:-300}
bench_timeout=${CONVLAB_BENCH_TIMEOUT:-300}
bench_deadline=${CONVLAB_BENCH_DEADLINE:-900}
torch_timeout=${CONVLAB_TORCH_TIMEOUT:-240}
torch_budget=${CONVLAB_TORCH_BUDGET:-180}
torch_scripts=${CONVLAB_TORCH_SCRIPTS:-convfirst mbconv sdpa}
sanitize_timeout=${CONVLAB_SANITIZE_TIMEOUT:-420}
sanitize_test_timeout=${CONVLAB_SANITIZE_TEST_TIMEOUT:-300}
sanitize_jobs=${CONVLAB_SANITIZE_JOBS:-8}
sanitize_tools=${CONVLAB_SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}
sanitize_tests=${CONVLAB_SANITIZE_TESTS:-[gpu]~[sweep]}
sanitize_flop_limit=${CONVLAB_SANITIZE_FLOP_LIMIT:-1e9}
racecheck_flop_limit=${CONVLAB_RACECHECK_FLOP_LIMIT:-1e8}
initcheck_skip=${CONVLAB_INITCHECK_SKIP:-/gpu/(cublas|cudnn)$}

if [[ ! -f CMakeLists.txt || ! -d bench ]]; then
  echo "run_gpu.sh: run me from the convlab repository root" >&2
  exit 2
fi
OUT=${OUT:-/tmp/convlab-gpu-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d /tmp/convlab-gpu-work.XXXXXX)   # the bulky logs, packed into $OUT/logs.tar.gz
mkdir -p "$work/bench-logs" "$work/bench-parts" "$work/results"
build="build-gpu"
script_start=$SECONDS

# nvcc and compute-sanitizer usually live in the toolkit's bin/, not always on PATH.
for cuda_bin in /usr/local/cuda/bin /usr/local/cuda-13/bin; do
  [[ -d $cuda_bin ]] && PATH="$PATH:$cuda_bin"
done
export PATH

# The source revision, recorded in the benchmark JSON's context.
if [[ -z ${CONVLAB_GIT_REV:-} ]]; then
  if git rev-parse --verify -q HEAD >/dev/null 2>&1; then
    CONVLAB_GIT_REV=$(git rev-parse --short=12 HEAD)
    git diff --quiet HEAD -- 2>/dev/null || CONVLAB_GIT_REV+="-dirty"
  else
    CONVLAB_GIT_REV=unknown
  fi
fi
export CONVLAB_GIT_REV
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)

# ---- helpers ------------------------------------------------------------------
summary=()   # one line per stage
failures=0

stage_name=setup
note() {  # a stage's heading; its first word names the stage a signal would cut short
  stage_name=${1%% *}
  printf '\n==== %s\n' "$*"
}

write_summary() {  # rewritten after every stage, so a killed run still says how far it got
  {
    echo "convlab GPU run — $(date -u +%Y-%m-%dT%H:%M:%SZ), ${gpu_name:-no GPU name}, git $CONVLAB_GIT_REV," \
         "$((SECONDS - script_start))s, --only '$only'"
    printf '%s\n' "${summary[@]}"
  } > "$OUT/summary.txt"
  tar -czf "$OUT/logs.tar.gz" -C "$work" . 2>/dev/null || true
}
record() {   # record STAGE STATUS DETAIL...
  local stage=$1 status=$2
  shift 2
  summary+=("$(printf '%-10s %-8s %s' "$stage" "$status" "$*")")
  [[ $status == ok || $status == skipped ]] || failures=$((failures + 1))
  write_summary
}
# A signal (a caller's `timeout`, Ctrl-C) stops every command this script started, records the
# stage it cut short and keeps the logs. `timeout` puts its command in a process group of its
# own, so a signal to this script's group alone left a running build behind; the next call's
# build then ran beside it in the same directory (lesson 10's NOTES.md, wave-3w). Long commands
# run in the background and are waited for, so that bash runs the trap at once.
stop_tree() {  # stop_tree PID: the process and everything below it, leaves first
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do stop_tree "$child"; done
  kill -TERM "$1" 2>/dev/null || true
}
on_signal() {
  trap - TERM INT HUP
  local child
  for child in $(pgrep -P $$ 2>/dev/null); do stop_tree "$child"; done
  record "$stage_name" KILLED "a signal stopped run_gpu.sh after $((SECONDS - script_start))s"
  exit 143
}
trap on_signal TERM INT HUP
# run_logged LOG LIMIT_S CMD...: runs CMD with a time limit, output to the
# terminal and appended to LOG; returns CMD's status (124: timed out).
run_logged() {
  local log=$1 limit=$2
  shift 2
  local status
  set +e
  (timeout --kill-after=15 "$limit" "$@" 2>&1 | tee -a "$log"; exit "${PIPESTATUS[0]}") &
  wait $!
  status=$?
  set -e
  return "$status"
}
# run_to_log LOG LIMIT_S CMD...: the same, output to LOG only (long build logs).
run_to_log() {
  local log=$1 limit=$2
  shift 2
  timeout --kill-after=15 "$limit" "$@" >> "$log" 2>&1 &
  wait $!
}
pack_results() {  # the extra result files travel as one: the lent machine brings back eight files at most
  ls "$work/results"/* >/dev/null 2>&1 && tar -czf "$OUT/results.tar.gz" -C "$work/results" . || true
}
describe_status() {  # describe_status STATUS LIMIT
  if (($1 == 124 || $1 == 137)); then echo "timed out after ${2}s"; else echo "exit $1"; fi
}

# ---- 1. environment -------------------------------------------------------------
note "environment -> $OUT/environment.txt"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "git: $CONVLAB_GIT_REV"
  echo "host: $(hostname)"
  nvidia-smi -L 2>&1 || echo "nvidia-smi -L failed"
  echo
  nvidia-smi 2>&1 || true
  echo
  nvcc --version 2>&1 || echo "nvcc not found"
  cmake --version 2>&1 | head -1 || true
  g++ --version 2>&1 | head -1 || true
  echo "ninja $(ninja --version 2>&1 || true)"
} > "$OUT/environment.txt"
nvidia-smi -L 2>&1 || true

# ---- 2. build -------------------------------------------------------------------
note "build ($build, Release, sm_90) -> build.log in logs.tar.gz"
stage_start=$SECONDS
write_summary  # the logs so far reach $OUT before the longest stage
build_ok=0
if run_to_log "$work/build.log" 1800 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
     -DCONVLAB_CUDA=ON -DCONVLAB_CUDA_ARCHS=90 &&
   run_to_log "$work/build.log" 1800 ninja -C "$build" $( ((sanitize_only)) && echo convlab_tests convlab); then
  build_ok=1
  record build ok "$((SECONDS - stage_start))s, $(grep -c 'warning:' "$work/build.log" || true) compiler warnings"
else
  tail -n 40 "$work/build.log"
  record build FAILED "see build.log in logs.tar.gz; nothing else was run"
fi

if ((build_ok)); then
  # ---- 3. the machine's peaks --------------------------------------------------
  if ((!sanitize_only)); then
    note "probe -> environment.txt, probe.json"
    stage_start=$SECONDS
    echo -e "\n---- convlab probe" >> "$OUT/environment.txt"
    if run_logged "$OUT/environment.txt" 300 "$build/convlab" probe; then
      record probe ok "$((SECONDS - stage_start))s"
    else
      record probe FAILED "$(describe_status $? 300)"
    fi
    [[ -f $build/probe.json ]] && cp "$build/probe.json" "$OUT/probe.json"
  fi

  # ---- 4. GPU tests --------------------------------------------------------------
  if ((run_tests)); then
    note "GPU tests (ctest -R '$only') -> gpu-tests.log, gpu-tests.xml"
    stage_start=$SECONDS
    : > "$work/gpu-tests.log"
    status=0
    run_logged "$work/gpu-tests.log" "$test_timeout" ctest --test-dir "$build" -R "$only" -j 4 \
      --output-on-failure --output-junit "$OUT/gpu-tests.xml" --timeout 600 || status=$?
    counts=$(python3 - "$OUT/gpu-tests.xml" <<'EOF' 2>/dev/null || echo "no JUnit file"
import sys, xml.etree.ElementTree as ET
suite = ET.parse(sys.argv[1]).getroot()
suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
total, failed = int(suite.get("tests", 0)), int(suite.get("failures", 0)) + int(suite.get("errors", 0))
skipped = int(suite.get("skipped", 0) or suite.get("disabled", 0))
print(f"{total} tests: {total - failed - skipped} passed, {failed} failed, {skipped} skipped")
EOF
)
    if grep -q 'No tests were found' "$work/gpu-tests.log"; then
      record tests FAILED "no test matches '$only'"
    elif ((status == 0)); then
      record tests ok "$counts ($((SECONDS - stage_start))s)"
    else
      record tests FAILED "$counts; $(describe_status $status "$test_timeout")"
    fi
  else
    record tests skipped "--no-tests"
  fi

  # ---- 5. GPU benchmarks -----------------------------------------------------------
  if ((run_bench)); then
    note "GPU benchmarks -> bench-gpu.json"
    stage_start=$SECONDS
    # Benchmark names are op/gpu/variant/shape plus Google Benchmark's /manual_time.
    mapfile -t names < <("$build/convlab_bench" --benchmark_list_tests --benchmark_filter="$only" 2>/dev/null |
                         awk -F/ '$2 == "gpu" { print $1 "/" $2 "/" $3 "/" $4 }')
    if ((${#names[@]} == 0)); then
      record bench FAILED "no GPU benchmark matches '$only' (is a device visible?)"
    else
      # One process per operation, so a device fault or a timeout costs one
      # operation's results, not all of them; variants of one shape stay in one
      # process and share their double-precision reference.
      mapfile -t ops < <(printf '%s\n' "${names[@]}" | cut -d/ -f1 | sort -u)
      bench_status=ok
      not_run=()
      for op in "${ops[@]}"; do
        if ((SECONDS - stage_start > bench_deadline)); then
          not_run+=("$op")
          continue
        fi
        mapfile -t op_names < <(printf '%s\n' "${names[@]}" | awk -F/ -v op="$op" '$1 == op')
        filter="^($(IFS='|'; echo "${op_names[*]}"))/"
        status=0
        run_logged "$work/bench-logs/$op.log" "$bench_timeout" "$build/convlab_bench" \
          --benchmark_filter="$filter" --benchmark_out="$work/bench-parts/$op.json" \
          --benchmark_out_format=json || status=$?
        if ((status != 0)); then
          bench_status=FAILED
          echo "run_gpu.sh: benchmarks of $op: $(describe_status $status "$bench_timeout")" |
            tee -a "$work/bench-logs/$op.log"
        fi
        # What is measured so far reaches $OUT now: a call cut short keeps it.
        python3 bench/merge_bench_json.py "$OUT/bench-gpu.json" "$work"/bench-parts/*.json >/dev/null 2>&1 || true
        write_summary
      done
      if ((${#not_run[@]})); then
        bench_status=FAILED
        echo "run_gpu.sh: not run (past CONVLAB_BENCH_DEADLINE=${bench_deadline}s): ${not_run[*]}" |
          tee -a "$work/bench-logs/not-run.log"
      fi
      # A CUDA fault leaves its process's context unusable: retry each benchmark
      # that threw, alone, in a fresh process.
      mapfile -t faulted < <(python3 bench/merge_bench_json.py --faulted "$work"/bench-parts/*.json 2>/dev/null)
      retry=0
      for name in "${faulted[@]}"; do
        [[ -n $name ]] || continue
        retry=$((retry + 1))
        run_logged "$work/bench-logs/retry-$retry.log" "$bench_timeout" "$build/convlab_bench" \
          --benchmark_filter="^$name/" --benchmark_out="$work/bench-parts/zz-retry-$retry.json" \
          --benchmark_out_format=json || true
      done
      python3 bench/merge_bench_json.py "$OUT/bench-gpu.json" "$work"/bench-parts/*.json 2>&1 |
        tee "$work/bench-summary.txt" || true
      bench_counts=$(grep -m1 '^benchmarks:' "$work/bench-summary.txt" 2>/dev/null || echo "no results")
      grep -q ' 0 failed' <<<"$bench_counts" || bench_status=FAILED
      record bench "$bench_status" "${bench_counts% ->*}, ${retry} retried${not_run:+, not run: ${not_run[*]}} ($((SECONDS - stage_start))s)"
    fi
  else
    record bench skipped "--no-bench"
  fi

  # ---- 5b. lesson 12's oracle sweep and end-to-end layers (bench/tdc_oracle.cu) ------------
  if ((run_bench)) && [[ -x $build/convlab_tdc_oracle ]] && [[ tucker_core/gpu/ =~ $only ]]; then
    note "lesson 12 oracle -> tdc_oracle.json, tdc_layers.json"
    stage_start=$SECONDS
    if run_to_log "$work/tdc-oracle.log" 300 "$build/convlab_tdc_oracle" --out "$work/results/tdc_oracle.json" &&
       run_to_log "$work/tdc-oracle.log" 120 "$build/convlab_tdc_oracle" --layers --out "$work/results/tdc_layers.json"; then
      record tdc_oracle ok "$((SECONDS - stage_start))s"
      pack_results
    else
      record tdc_oracle FAILED "see tdc-oracle.log in logs.tar.gz"
    fi
  fi

  # ---- 5c. PyTorch side by side ------------------------------------------------------
  if ((run_torch)); then
    note "PyTorch (bench/*_torch.py) -> bench-gpu.json, sdpa-torch.json"
    stage_start=$SECONDS
    mkdir -p "$work/torch"
    python=${CONVLAB_TORCH_PYTHON:-python3}
    if ! "$python" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
      record torch FAILED "$python has no CUDA PyTorch"
    else
      torch_status=ok
      torch_done=()
      for which in $torch_scripts; do
        script=bench/${which}_torch.py
        [[ -f $script ]] || continue
        name=$(basename "$script" .py)
        args=(--out "$work/torch/$name.json")
        help=$("$python" "$script" --help 2>/dev/null || true)
        # The block scripts check PyTorch's output against convlab's own before timing.
        grep -q -- '--convlab' <<<"$help" && args+=(--convlab "$build/convlab")
        grep -q -- '--budget-s' <<<"$help" && args+=(--budget-s "$torch_budget")
        [[ -n ${CONVLAB_TORCH_SHAPES:-} ]] && grep -q -- '--shapes' <<<"$help" && args+=(--shapes "$CONVLAB_TORCH_SHAPES")
        status=0
        run_logged "$work/torch/$name.log" "$torch_timeout" "$python" "$script" "${args[@]}" || status=$?
        if ((status == 0)) && [[ -f $work/torch/$name.json ]]; then
          torch_done+=("$name")
        else
          torch_status=FAILED
          echo "run_gpu.sh: $script: $(describe_status $status "$torch_timeout")" | tee -a "$work/torch/$name.log"
        fi
      done
      [[ -f $work/torch/sdpa_torch.json ]] && cp "$work/torch/sdpa_torch.json" "$work/results/sdpa-torch.json" && pack_results
      blocks=()
      for name in convfirst_torch mbconv_torch; do
        [[ -f $work/torch/$name.json ]] && blocks+=("$work/torch/$name.json")
      done
      if ((${#blocks[@]})); then
        parts=()
        [[ -f $OUT/bench-gpu.json ]] && parts+=("$OUT/bench-gpu.json")
        python3 bench/merge_bench_json.py "$work/merged.json" "${parts[@]}" "${blocks[@]}" >/dev/null 2>&1 &&
          mv "$work/merged.json" "$OUT/bench-gpu.json"
      fi
      record torch "$torch_status" "${torch_done[*]:-nothing} ($((SECONDS - stage_start))s)"
    fi
  fi

  # ---- 6. compute-sanitizer ----------------------------------------------------------
  # Every GPU test (CONVLAB_SANITIZE_TESTS, default every test tagged [gpu]: one
  # per GPU variant, over its op's whole test table, plus the lesson tests that
  # need a GPU) under each tool, one process per (tool, test), CONVLAB_SANITIZE_JOBS
  # at a time, so a slow racecheck of one kernel costs that test, not the stage.
  # A test still waiting when the stage's time is up is reported as not run.
  if ((sanitize)); then
    sanitizer=$(command -v compute-sanitizer || true)
    : > "$OUT/sanitize.log"
    if [[ -z $sanitizer ]]; then
      record sanitize FAILED "compute-sanitizer not found"
    else
      mkdir -p "$work/sanitize"
      # The test names, one a line: Catch2 v2 (here) has --list-test-names-only (its exit
      # status is the count); v3 (the GPU machine) lists names alone at quiet verbosity.
      listing=$("$build/convlab_tests" "$sanitize_tests" --list-test-names-only 2>/dev/null || true)
      if [[ -z $listing ]] || grep -q -i -E 'unrecognised|error' <<<"$listing"; then
        listing=$("$build/convlab_tests" "$sanitize_tests" --list-tests --verbosity quiet 2>/dev/null || true)
      fi
      mapfile -t sanitize_names < <(sed -e 's/^ *//' -e '/^$/d' <<<"$listing" |
                                    grep -v -E '^(All available test cases:|Matching test cases:|[0-9]+ (test cases|matching test cases))' |
                                    { if ((only_given)); then grep -E -- "$only"; else cat; fi; } || true)
      echo "compute-sanitizer: ${#sanitize_names[@]} tests ('$sanitize_tests') x tools: $sanitize_tools," \
           "$sanitize_jobs at a time, ${sanitize_test_timeout}s per test, ${sanitize_timeout}s in all," \
           "test shapes above $sanitize_flop_limit FLOPs left out (racecheck: $racecheck_flop_limit; 0: none)," \
           "initcheck skips tests matching '$initcheck_skip' (vendor code)" | tee -a "$OUT/sanitize.log"
      if ((${#sanitize_names[@]} == 0)); then
        record sanitize FAILED "no test matches '$sanitize_tests'"
      else
        stage_start=$SECONDS
        deadline=$((SECONDS + sanitize_timeout))
        export build sanitizer work sanitize_test_timeout sanitize_flop_limit racecheck_flop_limit initcheck_skip
        # sanitize_one TOOL INDEX DEADLINE_EPOCH: one test under one tool; one result line.
        sanitize_one() {
          local tool=$1 index=$2 deadline_epoch=$3 name log status start left
          name=$(sed -n "$((index + 1))p" "$work/sanitize/names.txt")
          log="$work/sanitize/$tool-$index.log"
          left=$((deadline_epoch - $(date +%s)))
          if ((left <= 5)); then
            printf '%s\t%s\t%s\t%s\t%s\n' "$tool" "not-run" 0 "$index" "$name" >> "$work/sanitize/results.txt"
            return 0
          fi
          ((left > sanitize_test_timeout)) && left=$sanitize_test_timeout
          if [[ $tool == initcheck && -n $initcheck_skip ]] && grep -q -E "$initcheck_skip" <<<"$name"; then
            printf '%s\t%s\t%s\t%s\t%s\n' "$tool" "vendor" 0 "$index" "$name" >> "$work/sanitize/results.txt"
            return 0
          fi
          local limit=$sanitize_flop_limit
          [[ $tool == racecheck ]] && limit=$racecheck_flop_limit
          # A test name as a Catch test spec: its special characters escaped.
          local spec
          spec=$(printf '%s' "$name" | sed -e 's/[][\\,*"~]/\\&/g')
          start=$(date +%s)
          status=0
          CONVLAB_TEST_FLOP_LIMIT=$([[ $limit == 0 ]] || echo "$limit") \
            timeout --kill-after=15 "$left" "$sanitizer" --tool "$tool" --error-exitcode 99 \
            "$build/convlab_tests" "$spec" > "$log" 2>&1 || status=$?
          local verdict
          if ((status == 0)); then
            if grep -q 'CONVLAB-SKIP' "$log"; then verdict=skipped
            elif grep -q 'No test cases matched' "$log"; then verdict=unmatched
            else verdict=ok; fi
          elif ((status == 99)); then verdict=SANITIZER
          elif ((status == 124 || status == 137)); then verdict=timeout
          else verdict=FAILED; fi
          printf '%s\t%s\t%s\t%s\t%s\n' "$tool" "$verdict" "$(($(date +%s) - start))" "$index" "$name" \
            >> "$work/sanitize/results.txt"
        }
        export -f sanitize_one
        printf '%s\n' "${sanitize_names[@]}" > "$work/sanitize/names.txt"
        : > "$work/sanitize/results.txt"
        deadline_epoch=$(($(date +%s) + sanitize_timeout))
        note "compute-sanitizer ($sanitize_tools) on ${#sanitize_names[@]} tests -> sanitize.log"
        (for tool in $sanitize_tools; do
           for i in "${!sanitize_names[@]}"; do printf '%s %s %s\n' "$tool" "$i" "$deadline_epoch"; done
         done | xargs -P "$sanitize_jobs" -L 1 bash -c 'sanitize_one "$@"' _) &
        wait $! || true
        # The report: per tool, the counts; then every test that was not clean, with its log.
        for tool in $sanitize_tools; do
          counts=$(awk -F'\t' -v t="$tool" '$1 == t { n[$2]++ } END {
                     printf "%d ok, %d sanitizer errors, %d test failures, %d timed out, %d not run, %d skipped, %d vendor (not checked)",
                            n["ok"], n["SANITIZER"], n["FAILED"], n["timeout"], n["not-run"], n["skipped"] + n["unmatched"], n["vendor"] }' \
                   "$work/sanitize/results.txt")
          # Clean: every test ran to the end without a report (a test that skipped, finding no GPU, is counted, not failed).
          clean=$(awk -F'\t' -v t="$tool" '$1 == t && $2 != "ok" && $2 != "skipped" && $2 != "vendor" { bad++ } END { print bad + 0 }' \
                  "$work/sanitize/results.txt")
          echo "$tool: $counts" >> "$OUT/sanitize.log"
          if ((clean == 0)); then record "$tool" ok "$counts"; else record "$tool" FAILED "$counts"; fi
        done
        {
          echo
          echo "---- every (tool, test): verdict, seconds"
          sort -t$'\t' -k1,1 -k4,4n "$work/sanitize/results.txt" | awk -F'\t' '{ printf "%-10s %-10s %5ss  %s\n", $1, $2, $3, $5 }'
          while IFS=$'\t' read -r tool verdict secs index name; do
            [[ $verdict == ok || $verdict == not-run || $verdict == skipped || $verdict == vendor ]] && continue
            echo
            echo "---- $tool: $name ($verdict) -- the last 80 lines of its log"
            tail -n 80 "$work/sanitize/$tool-$index.log"
          done < "$work/sanitize/results.txt"
        } >> "$OUT/sanitize.log"
        {
          echo
          echo "---- test shapes left out under CONVLAB_SANITIZE_FLOP_LIMIT (from the first tool's logs)"
          first_tool=${sanitize_tools%% *}
          cat "$work"/sanitize/"$first_tool"-*.log 2>/dev/null | grep -h 'above CONVLAB_TEST_FLOP_LIMIT left out' | sort -u || true
          echo "sanitize stage: $((SECONDS - stage_start))s"
        } >> "$OUT/sanitize.log"
      fi
    fi
  fi
fi

# ---- summary ----------------------------------------------------------------------
write_summary
{
  echo "files in $OUT:"
  (cd "$OUT" && find . -type f | sort | sed 's|^\./|  |')
} >> "$OUT/summary.txt"
rm -rf "$work"
note "summary"
cat "$OUT/summary.txt"
((failures == 0))
