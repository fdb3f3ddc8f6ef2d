#!/usr/bin/env bash
# tests/install/build_without_baselines.sh SOURCE_DIR WORK_DIR
#
# Proves that an optional baseline whose library (or whose library's own
# dependency) is missing never fails the configure or the build: it is
# reported missing, at configure and in `convlab list`, and its variants are
# left out. Three ways of being missing are exercised at once:
#   - OpenCL unfindable (CMAKE_DISABLE_FIND_PACKAGE_OpenCL): the very failure of
#     a fresh Debian machine, where oneDNN's CMake config needs OpenCL's files;
#   - OpenBLAS hidden through CONVLAB_HIDE_BASELINES;
#   - CUDA off, so cuDNN and every GPU variant are absent too.
# CPU only, built with ccache, so a warm run takes a few seconds.
set -euo pipefail
src=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
fail() { echo "build_without_baselines: $*" >&2; exit 1; }

configure_log="$work/configure.log"
if ! cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCONVLAB_CUDA=OFF \
      -DCMAKE_DISABLE_FIND_PACKAGE_OpenCL=ON -DCONVLAB_HIDE_BASELINES=openblas >"$configure_log" 2>&1; then
  cat "$configure_log"; fail "configure failed with the optional baselines unfindable"
fi
grep -q "baseline missing, its variants left out: onednn: its CMake config needs OpenCL" "$configure_log" ||
  { cat "$configure_log"; fail "configure did not report oneDNN missing for want of OpenCL"; }
grep -q "baseline missing, its variants left out: openblas" "$configure_log" ||
  { cat "$configure_log"; fail "configure did not report OpenBLAS missing"; }

cmake --build "$work/build" --target convlab >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; fail "build failed"; }

list=$("$work/build/convlab" list) || fail "convlab list failed"
grep -q "^missing baseline, its variants left out of this build: onednn: " <<<"$list" || fail "convlab list does not report oneDNN missing"
grep -q "^missing baseline, its variants left out of this build: openblas: " <<<"$list" || fail "convlab list does not report OpenBLAS missing"
if grep -E "[[:space:]](onednn|openblas)[[:space:]]" <<<"$list" | grep -v "^missing baseline" >/dev/null; then
  fail "a oneDNN or OpenBLAS variant is still registered: $(grep -E '(onednn|openblas)' <<<"$list")"
fi
grep -qE "[[:space:]]eigen[[:space:]]" <<<"$list" || fail "the Eigen baseline (required) disappeared too"
"$work/build/convlab" run gemm/cpu/eigen --reps 0 >/dev/null || fail "a surviving baseline does not run"
echo "build_without_baselines: ok (oneDNN and OpenBLAS reported missing, build and list succeed)"
