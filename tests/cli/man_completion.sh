#!/usr/bin/env bash
# The man page and the bash completion: the page generated from docs/cli.md renders without
# a warning (groff -ww) and documents every option that some command's --help lists; the
# completion script completes commands, options, option values and file names from the tool
# itself; and `cmake --install` installs both, and every documentation page they name.
# usage: man_completion.sh SGFP4 MAN_PAGE SOURCE_DIR BUILD_DIR SCRATCH_DIR CMAKE
# SPDX-License-Identifier: MIT
set -euo pipefail
sgfp4=$1 page=$2 source_dir=$3 build=$4 scratch=$5 cmake=$6
rm -rf "$scratch" && mkdir -p "$scratch"
fail() { echo "FAIL: $*"; exit 1; }

# ---- the man page ----
[ -s "$page" ] || fail "no man page at $page"
warnings=$(groff -k -man -ww -z "$page" 2>&1)
[ -z "$warnings" ] || fail "groff warns: $warnings"
text=$(MANWIDTH=200 man -l "$page" 2>/dev/null | col -b)
for section in NAME SYNOPSIS DESCRIPTION Outputs "Whole models" "SEE ALSO"; do
  grep -q "^$section" <<<"$text" || fail "the man page has no section '$section'"
done
options=$(for c in encode decode verify info bench example matvec; do
  "$sgfp4" "$c" --help | sed -n 's/^  \(-[a-zA-Z], \)\{0,1\} *\(--[a-z0-9-]*\).*/\2/p'
done | sort -u)
for o in $options; do
  grep -q -- "$o" <<<"$text" || fail "the man page does not document $o"
done
echo "man page OK: $(wc -l <<<"$options") options documented"

# ---- the completion ----
# shellcheck source=/dev/null
source "$source_dir/tools/completion/sgfp4"
complete_words() { # WORDS...: the completions of the last word
  COMP_WORDS=("$sgfp4" "$@")
  COMP_CWORD=$#
  COMPREPLY=()
  _sgfp4
  printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' '
}
got=$(complete_words en)
[ "$got" = "encode " ] || fail "'sgfp4 en': '$got'"
got=$(complete_words "")
for c in encode decode verify info bench example help; do
  grep -qw "$c" <<<"$got" || fail "'sgfp4 ': no $c in '$got'"
done
got=$(complete_words decode --dt)
[ "$got" = "--dtype " ] || fail "'sgfp4 decode --dt': '$got'"
got=$(complete_words decode --dtype "")
[ "$got" = "bf16 f16 f32 " ] || fail "'sgfp4 decode --dtype ': '$got'"
got=$(complete_words encode x --fit r)
[ "$got" = "reference " ] || fail "'sgfp4 encode x --fit r': '$got'"
got=$(complete_words encode x --metric "")
[ "$got" = "row sse " ] || fail "'sgfp4 encode x --metric ': '$got'"
got=$(complete_words help ver)
[ "$got" = "verify " ] || fail "'sgfp4 help ver': '$got'"
got=$(complete_words encode --ig)
[ "$got" = "--ignore-total-size " ] || fail "'sgfp4 encode --ig': '$got'"
got=$(complete_words decode x --backend "")
[ "$got" = "auto avx2 avx512 cpu generic neon scalar vulkan " ] ||
  fail "'sgfp4 decode x --backend ': '$got'"
got=$(complete_words decode x --store "")
[ "$got" = "auto cached streaming " ] || fail "'sgfp4 decode x --store ': '$got'"
got=$(complete_words bench --op m)
[ "$got" = "matvec " ] || fail "'sgfp4 bench --op m': '$got'"
(cd "$scratch" && touch acts.npy && [ "$(complete_words matvec w --x act)" = "acts.npy " ]) ||
  fail "'sgfp4 matvec w --x act': no file names"
(cd "$scratch" && [ "$(complete_words info w --map act)" = "acts.npy " ]) ||
  fail "'sgfp4 info w --map act': no file names"
(cd "$scratch" && touch model.safetensors && [ "$(complete_words encode mod)" = "model.safetensors " ]) ||
  fail "file names are not completed"
echo "completion OK"

# ---- installed by cmake --install ----
"$cmake" --install "$build" --prefix "$scratch/prefix" >/dev/null
[ -s "$scratch/prefix/share/man/man1/sgfp4.1" ] || fail "the man page is not installed"
[ -s "$scratch/prefix/share/bash-completion/completions/sgfp4" ] ||
  fail "the completion is not installed"
# every documentation page the man page, the tool's --help or its messages name is installed
named=$( (printf '%s\n' "$text"; "$sgfp4" --help
          for c in encode decode verify info bench example matvec; do "$sgfp4" "$c" --help; done) |
        grep -o '[a-z_][a-z_]*\.md' | sort -u)
[ -n "$named" ] || fail "the man page names no documentation page"
for page in $named; do
  [ -s "$scratch/prefix/share/doc/sgfp4/$page" ] || fail "$page is named but not installed"
done
grep -q "docs/" <<<"$text" && fail "the man page names docs/, which is not installed"
echo "install OK: $(wc -w <<<"$named") documentation pages named and installed"
