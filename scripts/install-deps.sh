#!/usr/bin/env bash
# scripts/install-deps.sh — everything convlab needs on a fresh Debian machine,
# installed only when missing: Debian packages via apt-get, the notebooks'
# Python packages via pip into .venv/. Safe to run again; quiet when nothing is
# missing. After installing it runs the check below, so a package list that
# forgets something fails here, in one line, rather than deep inside CMake.
#
#   scripts/install-deps.sh           install what is missing, then check
#   scripts/install-deps.sh --check   only check: list every Debian package,
#                                     CMake package and Python module the build
#                                     uses, and say which are missing; exit 1 if
#                                     a required one is missing (optional ones,
#                                     the baselines, are reported, not fatal)
set -euo pipefail
cd "$(dirname "$0")/.."

mode=install
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
  *) echo "install-deps.sh: unknown option '$1' (use --check, or no option)" >&2; exit 2 ;;
esac

# Required to build and test; then the optional packages: the baselines' (oneDNN's
# CMake config needs OpenCL's development files, which Debian only recommends),
# and chromium, the headless browser the grading report's test renders the page
# in (tests/grading/; without it that test is reported skipped).
required=(build-essential cmake ninja-build ccache pkg-config libeigen3-dev catch2 libbenchmark-dev python3-venv)
optional=(libopenblas-dev libdnnl-dev ocl-icd-opencl-dev opencl-headers chromium)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

if [[ $mode == install ]]; then
  missing=()
  for p in "${required[@]}" "${optional[@]}"; do installed "$p" || missing+=("$p"); done
  if ((${#missing[@]})); then
    echo "convlab: installing Debian packages: ${missing[*]}"
    sudo_cmd=""
    [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi

  # The notebooks' Python: a virtual environment of our own, rebuilt when requirements.txt changes.
  python=${PYTHON:-python3}
  stamp=.venv/.requirements-installed
  if [ ! -x .venv/bin/python ] || [ ! -f "$stamp" ] || ! cmp -s requirements.txt "$stamp"; then
    echo "convlab: preparing .venv (notebook dependencies)"
    "$python" -m venv .venv
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -r requirements.txt
    cp requirements.txt "$stamp"
  fi
fi

# ---- the check ------------------------------------------------------------------
# Debian packages, then the CMake packages exactly as the build loads them
# (cmake --find-package runs each package's own config file, so a config that
# itself needs something absent, as oneDNN's needs OpenCL, shows up here),
# then the Python modules the notebooks import.
report=()        # one line per item
bad_required=0
bad_optional=0
note() { report+=("$(printf '  %-8s %-9s %s' "$1" "$2" "$3")"); }

for p in "${required[@]}"; do
  if installed "$p"; then note ok required "deb $p"; else note MISSING required "deb $p"; bad_required=1; fi
done
for p in "${optional[@]}"; do
  if installed "$p"; then note ok optional "deb $p"; else note MISSING optional "deb $p"; bad_optional=1; fi
done

# One throw-away CMake project loads each package the way the build does.
cmake_found=""
if command -v cmake >/dev/null; then
  probe_dir=$(mktemp -d)
  cat >"$probe_dir/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.24)
project(convlab_dependency_check LANGUAGES CXX)
foreach(pkg Eigen3 benchmark Catch2 dnnl)
  find_package(${pkg} CONFIG QUIET)
  if(${pkg}_FOUND)
    message(STATUS "convlab-found ${pkg}")
  endif()
endforeach()
find_package(OpenMP QUIET COMPONENTS CXX)
if(OpenMP_CXX_FOUND)
  message(STATUS "convlab-found OpenMP")
endif()
CMAKE
  # A package config that fails hard (oneDNN's, without OpenCL) stops this
  # project at that point; what was found before it is still printed.
  cmake_found=$(cmake -S "$probe_dir" -B "$probe_dir/b" 2>&1 | sed -n 's/.*convlab-found //p' | tr '\n' ' ')
  rm -rf "$probe_dir"
fi
cmake_has() { [[ " $cmake_found " == *" $1 "* ]]; }
for p in Eigen3 benchmark Catch2 OpenMP; do
  if cmake_has "$p"; then note ok required "cmake $p"; else note MISSING required "cmake $p"; bad_required=1; fi
done
if cmake_has dnnl; then note ok optional "cmake dnnl (oneDNN, with its OpenCL dependency)"
else note MISSING optional "cmake dnnl (oneDNN; its config loads OpenCL: ocl-icd-opencl-dev opencl-headers)"; bad_optional=1; fi
if [[ -e /usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h || -e /usr/include/openblas/cblas.h ]]; then
  note ok optional "cblas.h (OpenBLAS)"
else note MISSING optional "cblas.h (OpenBLAS: libopenblas-dev)"; bad_optional=1; fi
if command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; then note ok optional "nvcc (GPU variants are built)"
else note absent optional "nvcc (GPU variants are left out; no GPU is needed to build them)"; fi

if [[ -x .venv/bin/python ]]; then
  for m in numpy matplotlib nbformat nbclient nbconvert ipykernel; do
    if .venv/bin/python -c "import $m" 2>/dev/null; then note ok required "python $m (.venv)"
    else note MISSING required "python $m (.venv: pip install -r requirements.txt)"; bad_required=1; fi
  done
else
  note MISSING required "python .venv (scripts/install-deps.sh creates it)"; bad_required=1
fi

if [[ $mode == check || $bad_required == 1 || $bad_optional == 1 ]]; then
  echo "convlab: dependency check"
  printf '%s\n' "${report[@]}"
fi
if ((bad_required)); then
  echo "convlab: a required dependency is missing (above); run scripts/install-deps.sh as root" >&2
  exit 1
fi
if ((bad_optional)); then
  echo "convlab: optional packages missing (above): a missing baseline's variants are left out of the build; without chromium the grading report's browser test is skipped"
else
  [[ $mode == install ]] && echo "convlab: dependency check: all ${#report[@]} present (scripts/install-deps.sh --check lists them)"
fi
exit 0
