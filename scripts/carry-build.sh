#!/usr/bin/env bash
# What a GPU machine needs of a build made here, copied into an ignored folder small enough to
# carry (docs/gpu-testing.md): the two binaries and the Google Benchmark library beside them, the
# GPU test binary, and CTest's files (CMakeCache.txt, every CTestTestfile.cmake and the
# discovered test lists, which name each other by this machine's absolute build path: there,
# scripts/gpu-env.sh links that path's checkout to the copy's). Object files and precompiled
# headers (over a gigabyte) stay here.
#
#   scripts/carry-build.sh [BUILD] [DEST]      defaults: build .carry/b
# Then carry [".carry"] and, on the GPU machine, `ln -sfn .carry/b build` before the scripts.
set -euo pipefail
build=${1:-build}
dest=${2:-.carry/b}
for f in "$build/CMakeCache.txt" "$build/apps/attn-bench" "$build/apps/attn-tune" \
         "$build/tests/attn_gpu_tests"; do
  [ -f "$f" ] || { echo "carry-build: $f is missing: build first (make build)" >&2; exit 2; }
done
rm -rf "$dest"
mkdir -p "$dest"
dest_dir=$(cd "$dest" && pwd)
(cd "$build" && find . \( -name CTestTestfile.cmake -o -name '*_include.cmake' -o -name '*_tests.cmake' \
    -o -name CMakeCache.txt -o -path ./apps/attn-bench -o -path ./apps/attn-tune \
    -o -path './apps/libbenchmark.so*' -o -path ./tests/attn_gpu_tests \) -type f -print0 |
  xargs -0 cp --parents -t "$dest_dir")
echo "carry-build: $(du -sh "$dest" | cut -f1) in $dest ($("$dest/apps/attn-bench" --version))"
