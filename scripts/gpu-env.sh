# Sourced by the GPU-machine scripts: sets build (BUILD, default build), out (OUT, default out/,
# created) and bench (the attn-bench binary), and points the source path that CTest files hold (the
# CPU machine that configured the build) at this checkout when that path does not exist here.
# A build carried as .carry/b (scripts/carry-build.sh) becomes `build` here: the GPU test binary
# runs attn-bench and attn-tune by the paths the CPU machine built them at, under build/.
if [ -z "${BUILD:-}" ] && [ ! -e build ] && [ -d .carry/b ]; then ln -s .carry/b build; fi
build=${BUILD:-build}
out=${OUT:-out}
mkdir -p "$out"
bench="$build/apps/attn-bench"
attn_source_dir=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)
if [ -n "$attn_source_dir" ] && [ "$attn_source_dir" != "$PWD" ] && [ ! -e "$attn_source_dir" ]; then
  mkdir -p "$(dirname "$attn_source_dir")" && ln -s "$PWD" "$attn_source_dir"
fi
