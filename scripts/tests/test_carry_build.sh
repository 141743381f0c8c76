#!/usr/bin/env bash
# scripts/carry-build.sh on a real build: its copy, with the build's absolute path turned into the
# copy's (what the links of scripts/gpu-env.sh amount to on the GPU machine), lists the same GPU
# tests as the build, and more than none. CTest runs it (scripts.carry_build).
#
#   scripts/tests/test_carry_build.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$here/carry-build.sh" "$build" "$tmp/b"
find "$tmp/b" -name '*.cmake' -exec sed -i "s|$build/|$tmp/b/|g" {} +
want=$(ctest --test-dir "$build" -N -L gpu | grep 'Total Tests')
got=$(ctest --test-dir "$tmp/b" -N -L gpu | grep 'Total Tests' || true)
echo "build: $want, copy: $got"
[ "$got" = "$want" ] && [ "$got" != "Total Tests: 0" ]
