#!/usr/bin/env bash
# The generated shell completion: each program's bash script loads in a plain bash and completes
# subcommands, flags and the values of options and positionals (presets, variant globs,
# strategies); each zsh script parses and defines its function.
#   tests/apps/completion/test_completion.sh ATTN_BENCH ATTN_TUNE
set -uo pipefail
bench=$1
tune=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/attn-completion-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0

"$bench" completion bash > "$work/attn-bench.bash" || { echo "FAIL: attn-bench completion bash"; exit 1; }
"$tune" completion bash > "$work/attn-tune.bash" || { echo "FAIL: attn-tune completion bash"; exit 1; }

# complete PROGRAM WORDS...: what the loaded script offers for the last word (may be empty), one
# word a line, from a clean bash that sourced only the generated script.
complete_words() {
  local program=$1
  shift
  bash --norc --noprofile -c '
    source "$1" || exit 9
    shift
    COMP_WORDS=("$@")
    COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
    COMP_LINE="${COMP_WORDS[*]}"
    fn=$(complete -p "${COMP_WORDS[0]}" | sed -n "s/.*-F \([^ ]*\) .*/\1/p")
    [ -n "$fn" ] || exit 8
    "$fn" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    printf "%s\n" "${COMPREPLY[@]}"
  ' bash "$work/$program.bash" "$program" "$@"
}

# expect WORD PROGRAM WORDS...: the offers for WORDS include WORD.
expect() {
  local want=$1
  shift
  local got
  got=$(complete_words "$@")
  if ! grep -qxF -- "$want" <<< "$got"; then
    echo "FAIL: '$*' does not offer '$want'; it offers: $(tr '\n' ' ' <<< "$got")"
    failures=$((failures + 1))
  fi
}
# refuse WORD PROGRAM WORDS...: the offers for WORDS do not include WORD.
refuse() {
  local unwanted=$1
  shift
  if grep -qxF -- "$unwanted" <<< "$(complete_words "$@")"; then
    echo "FAIL: '$*' offers '$unwanted'"
    failures=$((failures + 1))
  fi
}

expect run attn-bench r
expect workload attn-bench w
expect completion attn-bench ""
expect --preset attn-bench run --pr
expect --peer-deadline attn-bench peers default --peer
expect --coverage attn-bench list --cov
expect decode-llama3-8b-64x4096 attn-bench run --preset decode-llama3-8b-64x
expect decode-llama3-8b-64x4096 attn-bench run decode-llama3-8b-64x
expect 'paged_decode.*' attn-bench run --variant paged_decode.
expect paged_decode.sm90_tma attn-bench run --variant paged_decode.sm9
expect screen attn-bench run --policy s
expect decode-shapes attn-bench run --suite decode-s
expect decode-shapes attn-tune tune --suite dec
expect --peer-module attn-bench run default --peer-m
expect --peer-module attn-tune tune default --peer-m
expect --peer-deadline attn-tune tune default --peer-d
expect --kernel attn-bench run default --ker
expect --kernel attn-tune tune default --ker
expect kernel attn-bench k
expect schema attn-bench kernel s
expect validate attn-bench kernel v
expect schema attn-bench workload s
expect validate attn-bench workload v
expect decode-llama3-8b-64x4096 attn-bench workload validate decode-llama3-8b-64
refuse run attn-bench workload r
expect tune attn-tune t
expect halving attn-tune tune default --strategy h
expect cpp attn-tune export --format c
expect markdown attn-tune compare --format m
expect paged_decode attn-tune export --family paged
expect info attn-tune db i
refuse worker attn-tune w   # hidden

# A value option followed by a file name completes files: --db in this folder.
touch "$work/results-for-completion.db"
(cd "$work" && expect results-for-completion.db attn-bench run --db results-for)

if command -v zsh > /dev/null; then
  for program in attn-bench attn-tune; do
    binary=$bench
    [ "$program" = attn-tune ] && binary=$tune
    "$binary" completion zsh > "$work/_$program"
    zsh -n "$work/_$program" || { echo "FAIL: _$program does not parse in zsh"; failures=$((failures + 1)); }
    fn="_${program//-/_}"
    if ! zsh -fc "autoload -U compinit && compinit -u -d '$work/zcompdump' && source '$work/_$program' && whence -w $fn && [[ \${_comps[$program]} == $fn ]]" > /dev/null 2>&1; then
      echo "FAIL: _$program does not load in zsh or registers no completion"
      failures=$((failures + 1))
    fi
  done
else
  echo "zsh is not installed: the zsh scripts are not checked (scripts/install-deps.sh installs it)"
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures completion checks failed"
  exit 1
fi
echo "completion: ok"
