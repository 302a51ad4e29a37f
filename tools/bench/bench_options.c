/* The options of `sgfp4 bench` and `sgfp4 example` (cli.h, cli_bench_specs): their names and
 * --help texts, how each value is checked and stored, and their defaults. The tool's parser
 * (tools/sgfp4/cli_parse.c) takes them beside its own.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "cli.h"

const cli_option_spec cli_bench_specs[] = {
    {KEY_CODES, "codes", "llm|random",
     "synthetic source: an encoded LLM-like tensor (default) "
     "or random codes in mixed layouts near --bpw"},
    {KEY_SEED, "seed", "N", "generator seed (default 1)"},
    {KEY_RUNS, "runs", "N", "timed rounds, 1..1000 (default 7)"},
    {KEY_GATHER_ROWS, "gather-rows", "N", "rows per row-gather call (default 1024)"},
    {KEY_OFFSET, "offset", "N",
     "start each output buffer N bytes (0..63, default 0) past a "
     "64-byte boundary (large malloc() blocks start 16 past one)"},
    {KEY_SIZE, "size", "N", "--backend vulkan: N x N containers, 1..65536 (default 8192)"},
    {KEY_REPEAT, "repeat", "R", "--backend vulkan: timed rounds, 1..62 (default 20)"},
    {KEY_NO_CHECK, "no-check", NULL,
     "--backend vulkan, --op matvec: skip the bit-exactness "
     "check"},
    {KEY_INTEGER, "integer", NULL, "--backend vulkan: force the integer-exact pipeline"},
    {KEY_OP, "op", "decode|open|matvec|variants",
     "what to time: decode (default); the CPU: open (against a decode) or "
     "matvec (the matrix-vector products against a plain read); "
     "--backend vulkan: matvec (the D8 products against a copy and a "
     "plain read of their bytes) or variants (every exact decode path)"},
    {KEY_VARIANT, "variant", "NAME",
     "--op variants: only default, f16-guard, f16-add or "
     "integer-pipeline; --op matvec: a comma list of kernel "
     "variants, or all"},
    {KEY_LAYERS, "layers", "N", "decoder layers (default 4, at most 1024)"},
    {KEY_DIM, "dim", "D", "model width (default 512)"},
    {KEY_FFN, "ffn", "F", "MLP width (default 1408)"},
    {KEY_KV_DIM, "kv-dim", "K", "width of the k and v projections (default dim/2)"},
    {KEY_VOCAB, "vocab", "V", "vocabulary (default 4096)"},
};
const size_t cli_bench_spec_count = sizeof cli_bench_specs / sizeof cli_bench_specs[0];
_Static_assert(sizeof cli_bench_specs / sizeof cli_bench_specs[0] <= CLI_BENCH_SPECS_MAX,
               "CLI_BENCH_SPECS_MAX is too small");

const char *cli_bench_take(cli_args *a, int key, const char *v)
{
    switch (key) {
    case KEY_CODES:
        a->random_codes = strcmp(v, "random") == 0;
        return a->random_codes || strcmp(v, "llm") == 0 ? NULL : "wants llm or random";
    case KEY_SEED: return cli_parse_uint(v, &a->seed) ? NULL : "wants a number";
    case KEY_RUNS: return cli_parse_uint_in(v, 1, 1000, &a->runs) ? NULL : "wants 1..1000";
    case KEY_GATHER_ROWS:
        return cli_parse_uint_in(v, 1, UINT32_MAX, &a->gather_rows) ? NULL : "wants a number >= 1";
    case KEY_OFFSET: return cli_parse_uint_in(v, 0, 63, &a->offset) ? NULL : "wants 0..63 bytes";
    case KEY_SIZE: return cli_parse_uint_in(v, 1, 65536, &a->size) ? NULL : "wants 1..65536";
    case KEY_REPEAT: return cli_parse_uint_in(v, 1, 62, &a->repeat) ? NULL : "wants 1..62";
    case KEY_LAYERS: return cli_parse_uint_in(v, 1, 1024, &a->layers) ? NULL : "wants 1..1024";
    case KEY_DIM: return cli_parse_uint_in(v, 1, 1u << 20, &a->dim) ? NULL : "wants 1..1048576";
    case KEY_FFN: return cli_parse_uint_in(v, 1, 1u << 20, &a->ffn) ? NULL : "wants 1..1048576";
    case KEY_KV_DIM:
        return cli_parse_uint_in(v, 1, 1u << 20, &a->kv_dim) ? NULL : "wants 1..1048576";
    case KEY_VOCAB: return cli_parse_uint_in(v, 1, 1u << 20, &a->vocab) ? NULL : "wants 1..1048576";
    case KEY_OP:
        a->op = v;
        return strcmp(v, "decode") == 0 || strcmp(v, "open") == 0 || strcmp(v, "variants") == 0 ||
                       strcmp(v, "matvec") == 0
                   ? NULL
                   : "wants decode, open, variants or matvec";
    case KEY_VARIANT: /* the operation checks the name */ a->variant = v; return NULL;
    default: return NULL; /* the flags: args->given says they were there */
    }
}

void cli_bench_defaults(cli_args *a)
{
    a->seed = 1;
    a->runs = 7;
    a->gather_rows = 1024;
    a->size = 8192;
    a->repeat = 20;
    a->layers = 4;
    a->dim = 512;
    a->ffn = 1408;
    a->vocab = 4096;
}
