#!/bin/sh
# The shared library exports exactly the API its public headers declare (stable and
# experimental tiers): usage: exported_symbols.sh LIBSGFP4_SO HEADER...
# Fails, listing the difference, when a declared function is not exported (declared but
# never defined, or hidden) or when something else is exported (an internal function, a
# target_clones dispatcher, a data symbol). Also fails on a header line that declares an
# sgfp4_ function without SGFP4_API, since such a function would never be exported. And
# fails when an options struct's init is exported itself: sgfp4_<x>_options_init must be the
# header's inline function that passes the caller's sizeof to the exported
# sgfp4_<x>_options_init_sized (a library that writes its own sizeof would overrun the struct
# of a caller built against an older header), and every struct has both. And fails when a
# benchmark entry point is exported.
# SPDX-License-Identifier: MIT
set -eu
lib=$1
shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

nm -D --defined-only "$lib" | awk '{ print $NF }' | sort -u >"$work/exported"
: >"$work/declared"
status=0
for header in "$@"; do
    # Declarations: "SGFP4_API <type> <name>(" on one line (the headers' convention).
    sed -n 's/^SGFP4_API[^(]*[ *]\([a-z][a-z0-9_]*\)(.*/\1/p' "$header" >>"$work/declared"
    if grep -n '^SGFP4_API' "$header" | grep -v '^[0-9]*:SGFP4_API[^(]*[ *][a-z][a-z0-9_]*(' \
        >"$work/odd"; then
        echo "$header: SGFP4_API lines that do not name a function before '(':"
        cat "$work/odd"
        status=1
    fi
    # A prototype at the start of a line without SGFP4_API (not a typedef, macro or comment).
    if grep -nE '^[a-z][a-z0-9_ ]*[ *]sgfp4_[a-z0-9_]+\(' "$header" |
        grep -vE '^[0-9]+:(typedef|static|#)' >"$work/odd"; then
        echo "$header: declarations without SGFP4_API:"
        cat "$work/odd"
        status=1
    fi
done
sort -u "$work/declared" -o "$work/declared"

if grep '_options_init$' "$work/declared" "$work/exported" >"$work/odd"; then
    echo "options init functions exported (they must be the headers' inline functions):"
    sed 's/^/  /' "$work/odd"
    status=1
fi
for header in "$@"; do
    for init in $(sed -n 's/^SGFP4_API sgfp4_status \(sgfp4_[a-z0-9_]*_options_init\)_sized(.*/\1/p' \
        "$header"); do
        if ! grep -q "^static inline sgfp4_status $init(" "$header"; then
            echo "$header: ${init}_sized has no inline $init passing the caller's sizeof"
            status=1
        fi
    done
    for options in $(sed -n 's/^typedef struct \(sgfp4_[a-z0-9_]*_options\) {.*/\1/p' "$header"); do
        if ! grep -q "^SGFP4_API sgfp4_status ${options}_init_sized(" "$header"; then
            echo "$header: $options has no ${options}_init_sized"
            status=1
        fi
    done
done

# The GPU benchmark kit (timing, the copy, read and dense GEMV references) is tool code
# (tools/bench/vulkan): no entry point of it in the library, declared or not.
if grep -iE 'bench|gemv|copy_buffer' "$work/exported" >"$work/odd"; then
    echo "benchmark entry points exported (they belong to tools/bench/vulkan):"
    sed 's/^/  /' "$work/odd"
    status=1
fi

if ! cmp -s "$work/declared" "$work/exported"; then
    echo "declared in the headers but not exported:"
    comm -23 "$work/declared" "$work/exported" | sed 's/^/  /'
    echo "exported but not declared in the headers:"
    comm -13 "$work/declared" "$work/exported" | sed 's/^/  /'
    status=1
fi
echo "$(wc -l <"$work/declared") functions declared, $(wc -l <"$work/exported") symbols exported"
exit $status
