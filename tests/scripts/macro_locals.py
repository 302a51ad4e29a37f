#!/usr/bin/env python3
"""No macro of src/ uses a local variable it was not given (docs/api.md, "Source layers").

Usage: macro_locals.py REPO
       macro_locals.py --self-test   (the check finds each kind of capture in a made-up tree)

A macro whose text names a variable of the place where it is expanded, without taking it as
a parameter, hides what it reads and writes: such "macro lambdas" become static inline
functions that take what they use. The check reads every #define of src/ (function-like and
object-like) and lists the identifiers of its replacement text that are neither
- its parameters, nor declared in its own text (`unsigned v = 0`, `__m512 a_, b_[4]`);
- members (after `.` or `->`, or offsetof's member), attribute arguments, called names
  (followed by `(`: functions and function-like macros are file-scope names);
- keywords, type names (`*_t`, `__m512`, ...), names in capitals (macros and constants),
  names that start with `_` (the compiler's and the intrinsics');
- names declared at file scope in the macro's own file, in a header of src/ or include/;
- pieces of names: the arguments of a macro that pastes them (a parameter next to ##, or
  passed on to such a macro), and an object-like macro of one identifier given to one.
A macro that defines a whole function (parameters, locals) declares what it uses.
What is left can only be a variable of the expansion site: each one is reported with the
macro, its file and line, and the check exits 1; otherwise it prints a summary and exits 0.
"""
import os
import re
import sys

KEYWORDS = set("""
auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef
union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Generic _Noreturn
_Static_assert _Thread_local _Pragma __attribute__ __asm__ asm __typeof__ typeof
bool true false defined
""".split())
# names of the C library and the compiler that a macro may read without calling them
KNOWN = {"errno", "stdin", "stdout", "stderr", "environ"}
TYPE_WORDS = {"char", "double", "float", "int", "long", "short", "signed", "unsigned", "void",
              "bool", "_Bool", "const", "volatile", "struct", "union", "enum", "restrict"}

TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<str>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<num>\.?[0-9](?:[eEpP][+-]|[A-Za-z0-9_.])*)
  | (?P<op>->|\#\#|[-+*/%&|^!=<>]=|&&|\|\||<<|>>|\+\+|--|\.\.\.|.)
""", re.VERBOSE | re.DOTALL)


def strip_comments(text):
    """Comments become spaces (newlines kept, so line numbers stay); strings stay."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def tokens(text):
    return [(m.lastgroup, m.group()) for m in TOKEN.finditer(text) if m.lastgroup != "ws"]


def logical_lines(text):
    """(first line number, logical line) with backslash continuations joined."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        start, line = i + 1, lines[i]
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + " " + lines[i]
        yield start, line
        i += 1


DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_][A-Za-z0-9_]*)(\(([^)]*)\))?(.*)$", re.DOTALL)


def macros(text):
    """(line, name, parameters or None, replacement text) of every #define."""
    for number, line in logical_lines(text):
        m = DEFINE.match(line)
        if m:
            params = None
            if m.group(2) is not None:
                params = [p.strip() for p in m.group(3).split(",") if p.strip()]
            yield number, m.group(1), params, m.group(4)


CPLUSPLUS = re.compile(r"^\s*#\s*ifdef\s+__cplusplus\b.*?^\s*#\s*endif", re.DOTALL | re.MULTILINE)


def file_scope_names(text):
    """Names declared outside every brace and parenthesis: functions, variables, typedefs
    (a public header's `extern "C" {` does not count as a brace)."""
    text = CPLUSPLUS.sub("", text)
    body = "\n".join("" if line.lstrip().startswith("#") else line
                     for _, line in logical_lines(text))
    toks = tokens(body)
    names, brace, paren = set(), 0, 0
    for k, (kind, value) in enumerate(toks):
        if value == "{":
            brace += 1
        elif value == "}":
            brace -= 1
        elif value == "(":
            paren += 1
        elif value == ")":
            paren -= 1
        elif kind == "id" and brace == 0 and paren == 0 and k + 1 < len(toks):
            if toks[k + 1][1] in ("(", "[", "=", ";", ",", "__attribute__"):
                names.add(value)
    return names


def skip_balanced(toks, k):
    """Index past the parenthesised group that starts at toks[k] == '('."""
    depth = 0
    while k < len(toks):
        if toks[k][1] == "(":
            depth += 1
        elif toks[k][1] == ")":
            depth -= 1
            if depth == 0:
                return k + 1
        k += 1
    return k


def is_type_word(value, types):
    return (value in TYPE_WORDS or value.endswith("_t") or value.startswith("__m")
            or value in types)


def pasting_macros(defines):
    """Names of the function-like macros that paste their arguments into other names: a
    parameter next to ##, or passed on to such a macro (GLUE(a, b) -> GLUE2(a, b) a##b)."""
    pasting = set()
    while True:
        grown = set(pasting)
        for _, name, params, body in defines:
            if params is None or name in grown:
                continue
            toks = [v for _, v in tokens(body)]
            if any(v in params and "##" in (toks[i - 1] if i else "",
                                            toks[i + 1] if i + 1 < len(toks) else "")
                   for i, v in enumerate(toks)) or any(
                       v in pasting and i + 1 < len(toks) and toks[i + 1] == "("
                       for i, v in enumerate(toks)):
                grown.add(name)
        if grown == pasting:
            return pasting
        pasting = grown


def pasted_names(defines, pasting):
    """Every identifier given as an argument to a pasting macro: a piece of a name."""
    names = set()
    for _, _, _, body in defines:
        toks = tokens(body)
        for k, (_, value) in enumerate(toks):
            if value in pasting and k + 1 < len(toks) and toks[k + 1][1] == "(":
                end = skip_balanced(toks, k + 1)
                names.update(v for kind, v in toks[k + 2:end - 1] if kind == "id")
    return names


def free_names(params, text, types, pasting=frozenset()):
    """Identifiers of a replacement text that it neither takes nor declares nor calls."""
    toks = tokens(text)
    given = set(params or ()) | {"__VA_ARGS__"}
    declared, used = set(), []
    k, depth = 0, 0
    declaring = None  # paren depth of the declaration being read, or None
    while k < len(toks):
        kind, value = toks[k]
        nxt = toks[k + 1][1] if k + 1 < len(toks) else ""
        prev = toks[k - 1][1] if k > 0 else ""
        if (value in ("__attribute__", "offsetof", "_Pragma") or value in pasting) and nxt == "(":
            k = skip_balanced(toks, k + 1)
            continue
        if value == "(":
            depth += 1
        elif value == ")":
            depth -= 1
            if declaring is not None and depth < declaring:
                declaring = None  # a parameter list ended
        elif value == ";" and declaring is not None and depth <= declaring:
            declaring = None
        if kind == "id":
            before = toks[k - 2][1] if k > 1 else ""
            is_decl = (is_type_word(prev, types) or
                       (prev in given and nxt in ("=", ";", ",", "[")) or
                       (prev == "*" and (is_type_word(before, types) or before == "*"
                                         or before in given)) or
                       (prev in (",", "*") and declaring is not None and depth == declaring
                        and (prev == "," or before == ",")))
            if is_decl and not is_type_word(value, types) and value not in KEYWORDS:
                declared.add(value)
                if declaring is None:
                    declaring = depth
            elif prev in (".", "->", "#", "##") or nxt in ("(", "##"):
                pass
            elif (value in KEYWORDS or value in KNOWN or value.startswith("_")
                  or value.upper() == value or is_type_word(value, types)):
                pass
            else:
                used.append(value)
        k += 1
    return sorted({u for u in used if u not in given and u not in declared})


def sources(repo):
    for top in ("src", "include"):
        for root, _, names in os.walk(os.path.join(repo, top)):
            for name in sorted(names):
                if name.endswith((".c", ".h")):
                    path = os.path.join(root, name)
                    with open(path, encoding="utf-8") as f:
                        yield os.path.relpath(path, repo), strip_comments(f.read())


def check(repo):
    files = dict(sources(repo))
    scope = {path: file_scope_names(text) for path, text in files.items()}
    shared = set().union(*(names for path, names in scope.items() if path.endswith(".h")))
    errors, count = [], 0
    every = [d for text in files.values() for d in macros(text)]
    pasting = pasting_macros(every)  # a set's body header pastes what its includer defines
    pieces = pasted_names(every, pasting)
    for path, text in sorted(files.items()):
        if not path.startswith("src" + os.sep):
            continue
        visible = shared | scope[path]
        for number, name, params, body in macros(text):
            count += 1
            if params is None and name in pieces and len(tokens(body)) == 1:
                continue  # a piece of names (#define SET avx2, pasted by GLUE(f_, SET))
            for free in free_names(params, body, visible, pasting):
                if free not in visible:
                    errors.append(f"{path}:{number}: macro {name} uses '{free}', which it is "
                                  f"not given (a local of where it is expanded?)")
    return count, errors


def self_test():
    import tempfile
    tree = {
        "include/api.h": "typedef struct api_thing api_thing;\nint api_call(int x);\n",
        "src/a/ok.c": (
            "static const int table[4] = {0};\n"
            "static int helper(int v) { return v; }\n"
            "#define GOOD(x, n) do { for (unsigned v_ = 0; v_ < (n); v_++) x += table[v_]; } while (0)\n"
            "#define CALLS(p) helper((p)->field) + api_call(sizeof(api_thing *))\n"
            "#define DECL(t) __m512 a_, b_[4]; const api_thing *c_ = (t); (void)a_, (void)b_, (void)c_\n"
            "#define CAPS(x) ((x) + SOME_CONSTANT + UINT64_C(1))\n"
            "#define ATTR static __attribute__((target(\"avx2\"), always_inline))\n"
            "#define GLUE2(a, b) a##b\n#define GLUE(a, b) GLUE2(a, b)\n#define SET avx2\n"
            "#define NAME GLUE(fn_, SET)\n"
            "#define DEFINE_FN(name, T) static T name(const T *a, int n) "
            "{ T acc = 0, *p = 0, *q = 0; const T *x = a, *y = a; (void)p, (void)q, (void)y; "
            "for (int i = 0; i < n; i++) acc += x[i]; return acc; }\n"),
        "src/a/bad.c": (
            "void f(int lo)\n{\n"
            "#define CONSUME(count) (lo = lo >> (count))\n"      # reads and writes lo
            "    CONSUME(1);\n}\n"
            "#define FAIL(...) report(diag, __VA_ARGS__)\n"       # diag of the caller
            "#define TREE(nv, c_of) do { c_of(0, acc); } while (0)\n"  # acc of the caller
            "#define OBJECT counter + 1\n"),                       # object-like capture
    }
    with tempfile.TemporaryDirectory() as repo:
        for path, text in tree.items():
            os.makedirs(os.path.dirname(os.path.join(repo, path)), exist_ok=True)
            with open(os.path.join(repo, path), "w", encoding="utf-8") as f:
                f.write(text)
        _, errors = check(repo)
    wanted = ["macro CONSUME uses 'lo'", "macro FAIL uses 'diag'", "macro TREE uses 'acc'",
              "macro OBJECT uses 'counter'"]
    missing = [w for w in wanted if not any(w in e for e in errors)]
    for w in missing:
        print(f"self-test: no error with {w!r} in {errors}")
    if len(errors) != len(wanted):
        print(f"self-test: {len(errors)} errors, {len(wanted)} wanted: {errors}")
    return 1 if missing or len(errors) != len(wanted) else 0


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    if sys.argv[1] == "--self-test":
        return self_test()
    count, errors = check(sys.argv[1])
    for e in errors:
        print(e)
    if errors:
        return 1
    print(f"{count} macros in src/: none uses a variable it is not given")
    return 0


if __name__ == "__main__":
    sys.exit(main())
