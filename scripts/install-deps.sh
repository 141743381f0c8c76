#!/usr/bin/env bash
# Installs the Debian packages attn-bench builds and tests with, when any is missing (gnuplot-nox
# draws the SVG plots of `attn-tune report`; clang and libclang-rt-dev, which holds libFuzzer and
# clang's sanitizer runtimes, build `make test-asan` and `make fuzz`; python3-numpy is what the peer
# runner's tests, tools/peers/tests, run with under /usr/bin/python3; python3-jsonschema checks the
# workload schema against the presets and the malformed test files; zsh loads the generated zsh
# completion in its test; slurm-wlm and munge are the scheduler that the cluster-sweep test starts
# on this machine, docs/cluster.md), and checks that the CUDA
# toolkit's headers are present. Safe to run repeatedly: it does nothing when all is there.
set -euo pipefail

packages=(g++ cmake ninja-build make git libcli11-dev nlohmann-json3-dev libsqlite3-dev
          libbenchmark-dev libgtest-dev libbenchmark-tools python3-scipy python3-numpy python3-jsonschema zsh
          gnuplot-nox clang libclang-rt-dev slurm-wlm munge)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: not root and no sudo; install: ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
    $sudo apt-get update -q >/dev/null
    $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
  }
fi

cuda_root="${CUDA_HOME:-${CUDA_PATH:-/usr/local/cuda}}"
if [ ! -f "$cuda_root/include/cuda.h" ] || [ ! -f "$cuda_root/include/nvrtc.h" ]; then
  echo "install-deps: the CUDA toolkit's headers are not at $cuda_root/include (set CUDA_HOME)." >&2
  echo "install-deps: attn-bench needs the toolkit (headers, libnvrtc) but no GPU or driver." >&2
  exit 1
fi
