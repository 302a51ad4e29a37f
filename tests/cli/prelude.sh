# The setup the CLI's shell tests share, sourced after they set sgfp4 (the tool) and scratch
# (their folder): a fresh scratch folder as the working directory, the counters of checks
# and failures, and the helpers that run the tool and judge the run. A test ends with
# `finish NAME`.
# SPDX-License-Identifier: MIT
failures=0
checks=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}
ok() { checks=$((checks + 1)); }
rm -rf "$scratch"
mkdir -p "$scratch"
cd "$scratch" || exit 1
err=$scratch/stderr.txt
# run ARGS...: the tool, its stdout in $scratch/stdout.txt and its stderr in $err; sets $rc.
run() {
    "$sgfp4" "$@" >"$scratch/stdout.txt" 2>"$err"
    rc=$?
}
expect_rc() { # WANT WHAT
    if [ "$rc" -ne "$1" ]; then fail "$2: exit $rc, want $1: $(head -c 400 "$err")"; else ok; fi
}
expect_err() { # REGEX WHAT
    if grep -Eq -- "$1" "$err"; then ok; else fail "$2: stderr lacks /$1/: $(head -c 400 "$err")"; fi
}
# finish NAME: the counts; the test's exit status.
finish() {
    echo "$1: $checks checks, $failures failures"
    [ "$failures" -eq 0 ]
}
