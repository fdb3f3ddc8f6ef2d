#!/usr/bin/env bash
# bench/run_gpu.sh — the one command for the lent GPU machine (an H200).
#
# From the repository root:
#   bench/run_gpu.sh [--sanitize] [--no-tests] [--no-bench] [--only REGEX]
#
# It builds (build-gpu/, Release, sm_90), lists the GPU, measures the machine's
# peaks (`convlab probe`), runs the GPU variants' tests through CTest, then the
# GPU benchmarks, and with --sanitize also runs the GPU tests under
# compute-sanitizer (memcheck and racecheck). A failing stage is recorded and
# the next one still runs, except after a failed build. The summary is printed
# last; the exit status is 0 only if every stage passed.
#
#   --only REGEX   which tests/benchmarks to run (default '/gpu/|GPU|Winograd': every GPU
#                  variant's test and benchmark, plus the lesson tests that need a GPU or
#                  print GPU rows: "...every GPU softmax variant...", "...error of Winograd..."),
#                  matched against names such as gemm/gpu/03j_register_blocking_2d
#   --no-tests, --no-bench   skip a stage (e.g. a build-only first call)
#   --sanitize     also compute-sanitizer memcheck + racecheck on `convlab_tests "[gpu]"`
#
# Time limits per stage (seconds), from the environment:
#   CONVLAB_TEST_TIMEOUT (300)  CONVLAB_BENCH_TIMEOUT (300, per operation)
#   CONVLAB_SANITIZE_TIMEOUT (300, per tool)  CONVLAB_SANITIZE_TESTS ("[gpu]", a Catch test spec)
#
# $OUT (default /tmp/convlab-gpu-<time>) receives at most eight files, because
# the lent machine's tool brings back no more than that:
#   summary.txt      stage by stage, rewritten after every stage (survives a kill)
#   environment.txt  nvidia-smi, toolchain versions, `convlab probe` output
#   probe.json       the measured peaks
#   gpu-tests.xml    JUnit from CTest;  gpu-tests.log  its console output
#   bench-gpu.json   Google Benchmark JSON of every GPU benchmark
#   sanitize.log     compute-sanitizer memcheck then racecheck (with --sanitize)
#   logs.tar.gz      everything else: build log, per-process benchmark logs and JSON
# bench/collect_gpu_results.sh files them under bench/results/<date>-<gpu>/.
set -euo pipefail

# ---- options ------------------------------------------------------------------
sanitize=0
run_tests=1
run_bench=1
only='/gpu/|GPU|Winograd'
while (($#)); do
  case "$1" in
    --sanitize) sanitize=1 ;;
    --no-tests) run_tests=0 ;;
    --no-bench) run_bench=0 ;;
    --only) only="$2"; shift ;;
    --only=*) only="${1#--only=}" ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "run_gpu.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

test_timeout=${CONVLAB_TEST_TIMEOUT:-300}
bench_timeout=${CONVLAB_BENCH_TIMEOUT:-300}
sanitize_timeout=${CONVLAB_SANITIZE_TIMEOUT:-300}
sanitize_tests=${CONVLAB_SANITIZE_TESTS:-[gpu]}

if [[ ! -f CMakeLists.txt || ! -d bench ]]; then
  echo "run_gpu.sh: run me from the convlab repository root" >&2
  exit 2
fi
OUT=${OUT:-/tmp/convlab-gpu-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d /tmp/convlab-gpu-work.XXXXXX)   # the bulky logs, packed into $OUT/logs.tar.gz
mkdir -p "$work/bench-logs" "$work/bench-parts"
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

note() { printf '\n==== %s\n' "$*"; }

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
# run_logged LOG LIMIT_S CMD...: runs CMD with a time limit, output to the
# terminal and appended to LOG; returns CMD's status (124: timed out).
run_logged() {
  local log=$1 limit=$2
  shift 2
  local status
  set +e
  timeout --kill-after=15 "$limit" "$@" 2>&1 | tee -a "$log"
  status=${PIPESTATUS[0]}
  set -e
  return "$status"
}
# run_to_log LOG LIMIT_S CMD...: the same, output to LOG only (long build logs).
run_to_log() {
  local log=$1 limit=$2
  shift 2
  timeout --kill-after=15 "$limit" "$@" >> "$log" 2>&1
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
build_ok=0
if run_to_log "$work/build.log" 1800 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
     -DCONVLAB_CUDA=ON -DCONVLAB_CUDA_ARCHS=90 &&
   run_to_log "$work/build.log" 1800 ninja -C "$build"; then
  build_ok=1
  record build ok "$((SECONDS - stage_start))s, $(grep -c 'warning:' "$work/build.log" || true) compiler warnings"
else
  tail -n 40 "$work/build.log"
  record build FAILED "see build.log in logs.tar.gz; nothing else was run"
fi

if ((build_ok)); then
  # ---- 3. the machine's peaks --------------------------------------------------
  note "probe -> environment.txt, probe.json"
  stage_start=$SECONDS
  echo -e "\n---- convlab probe" >> "$OUT/environment.txt"
  if run_logged "$OUT/environment.txt" 300 "$build/convlab" probe; then
    record probe ok "$((SECONDS - stage_start))s"
  else
    record probe FAILED "$(describe_status $? 300)"
  fi
  [[ -f $build/probe.json ]] && cp "$build/probe.json" "$OUT/probe.json"

  # ---- 4. GPU tests --------------------------------------------------------------
  if ((run_tests)); then
    note "GPU tests (ctest -R '$only') -> gpu-tests.log, gpu-tests.xml"
    stage_start=$SECONDS
    : > "$OUT/gpu-tests.log"
    status=0
    run_logged "$OUT/gpu-tests.log" "$test_timeout" ctest --test-dir "$build" -R "$only" -j 4 \
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
    if grep -q 'No tests were found' "$OUT/gpu-tests.log"; then
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
      for op in "${ops[@]}"; do
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
      done
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
      record bench "$bench_status" "${bench_counts% ->*}, ${retry} retried ($((SECONDS - stage_start))s)"
    fi
  else
    record bench skipped "--no-bench"
  fi

  # ---- 6. compute-sanitizer ----------------------------------------------------------
  if ((sanitize)); then
    sanitizer=$(command -v compute-sanitizer || true)
    if [[ -z $sanitizer ]]; then
      record sanitize FAILED "compute-sanitizer not found"
    else
      : > "$OUT/sanitize.log"
      for tool in memcheck racecheck; do
        note "compute-sanitizer --tool $tool on convlab_tests '$sanitize_tests' -> sanitize.log"
        echo "---- compute-sanitizer --tool $tool $build/convlab_tests '$sanitize_tests'" >> "$OUT/sanitize.log"
        stage_start=$SECONDS
        status=0
        run_logged "$OUT/sanitize.log" "$sanitize_timeout" "$sanitizer" --tool "$tool" --error-exitcode 99 \
          "$build/convlab_tests" "$sanitize_tests" || status=$?
        verdict=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize.log" | tail -1 | sed 's/^=* *//' || true)
        if ((status == 0)); then
          record "$tool" ok "${verdict:-no summary line} ($((SECONDS - stage_start))s)"
        else
          record "$tool" FAILED "${verdict:-no summary line}; $(describe_status $status "$sanitize_timeout")"
        fi
      done
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
