#!/usr/bin/env bash
# FlashInfer for the peer runner (docs/peers.md), on a GPU machine that cannot download:
#   scripts/flashinfer.sh download   here: the wheels into .whl/ (ignored by git; ~49 MB)
#   scripts/flashinfer.sh install    there, with .whl carried: into the python3 that has torch
#   scripts/flashinfer.sh download-sdist   here: FlashInfer 0.2.5's source distribution and ninja's
#                                          wheel into .whl-sdist/ (~2.6 MB; what BENCHMARKS.md's
#                                          FlashInfer rows of 2026-11-29 ran)
#   scripts/flashinfer.sh install-sdist    there: into .flashinfer/ (then export the PYTHONPATH and
#                                          PATH it prints)
# FlashInfer 0.6.18.post1 is a pure-Python wheel that JIT-compiles its kernels (nvcc and ninja on
# the GPU machine). It is installed without dependency resolution: its nvidia-cudnn-frontend
# requires nvidia-cutlass-dsl, whose libraries are large and which FlashInfer imports only when
# present; a wheel is installed only where its package is missing, so torch's own stay.
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.6.18.post1
case "${1:-}" in
  download)
    mkdir -p .whl
    python3 -m pip download -q --no-deps -d .whl "flashinfer-python==$version"
    for p in apache-tvm-ffi cuda-tile nccl4py nvidia-cudnn-frontend "cuda-python==13.0.*" \
             "cuda-bindings==13.0.*" cuda-pathfinder einops tabulate click tqdm nvidia-ml-py \
             ninja packaging; do
      python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 \
        --platform manylinux_2_27_x86_64 --platform manylinux2014_x86_64 \
        --platform manylinux_2_12_x86_64 -d .whl "$p"
    done
    du -sh .whl ;;
  install)
    python3 -c "import flashinfer" 2>/dev/null && { echo "flashinfer is already installed"; exit 0; }
    for whl in .whl/*.whl; do
      name=$(basename "$whl" | cut -d- -f1)
      if [ "$name" != flashinfer_python ] && python3 -m pip show "$name" >/dev/null 2>&1; then
        continue
      fi
      python3 -m pip install -q --no-index --no-deps "$whl"
      echo "installed $name"
    done
    python3 -c "import flashinfer; print('flashinfer', flashinfer.__version__)" ;;
  download-sdist)
    mkdir -p .whl-sdist
    python3 -m pip download -q --no-deps --no-binary :all: -d .whl-sdist "flashinfer-python==0.2.5"
    python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
      -d .whl-sdist ninja
    du -sh .whl-sdist ;;
  install-sdist)
    # 0.2.5 needs only numpy, torch and ninja; it builds nothing at install time (JIT at first use).
    python3 -m pip install -q --no-deps --no-index --target .flashinfer .whl-sdist/ninja-*.whl
    PATH="$PWD/.flashinfer/bin:$PATH" python3 -m pip install -q --no-deps --no-index \
      --no-build-isolation --target .flashinfer .whl-sdist/flashinfer_python-*.tar.gz
    echo "export PYTHONPATH=$PWD/.flashinfer PATH=$PWD/.flashinfer/bin:\$PATH" ;;
  *) echo "usage: scripts/flashinfer.sh download|install|download-sdist|install-sdist" >&2; exit 2 ;;
esac
