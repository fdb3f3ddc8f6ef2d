#!/usr/bin/env bash
# scripts/install-deps.sh — everything convlab needs on a fresh Debian machine,
# installed only when missing: Debian packages via apt-get, the notebook's
# Python packages via pip into .venv/. Safe to run again; quiet when nothing is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build ccache pkg-config libeigen3-dev catch2 libbenchmark-dev
          libopenblas-dev libdnnl-dev ocl-icd-opencl-dev opencl-headers python3-venv)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
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
