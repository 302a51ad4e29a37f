/* sgfp4 example -o MODEL.safetensors [--layers N] [--dim D] [--ffn F] [--kv-dim K]
 *                                    [--vocab V] [--dtype bf16|f16|f32] [--seed S]
 * Writes a deterministic synthetic transformer-like model (Llama-style names and shapes):
 * the built-in example of scripts/example.sh and the large-model memory test.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const cli_accept options[] = {
    {KEY_OUTPUT, NULL},
    {KEY_LAYERS, NULL},
    {KEY_DIM, NULL},
    {KEY_FFN, NULL},
    {KEY_KV_DIM, NULL},
    {KEY_VOCAB, NULL},
    {KEY_DTYPE, "weight dtype: bf16 (default), f16, f32"},
    {KEY_SEED, "generator seed, 0..1048576 (default 1)"},
    {KEY_FORCE, NULL},
    {0, NULL},
};

/* splitmix64: a counter-based generator, so every element is a pure function of its index. */
static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Uniform in [0, 1) with 24 bits: exact in float. */
static float unit(uint64_t bits) { return (float)(bits >> 40) * (1.0f / 16777216.0f); }

typedef struct gen_tensor {
    char name[96];
    uint64_t shape[2];
    size_t rank;
    bool norm;
} gen_tensor;

/* Element k of tensor number `id`. Only +, -, * on floats (no libm): bit-reproducible. */
static float element(uint64_t seed, uint64_t id, const gen_tensor *t, uint64_t k)
{
    const uint64_t h = mix(seed ^ mix(id * 0x100000001B3ull ^ k));
    if (t->norm)
        return 1.0f + 0.1f * (unit(h) - 0.5f);
    /* Irwin-Hall(4) ~ Gaussian, from four 16-bit uniforms; unit variance after scaling. */
    const float g = ((float)(h & 0xFFFF) + (float)((h >> 16) & 0xFFFF) +
                     (float)((h >> 32) & 0xFFFF) + (float)(h >> 48)) * (1.0f / 65536.0f) - 2.0f;
    const uint64_t row = t->rank == 2 ? k / t->shape[1] : 0;
    const float row_scale = 0.5f + unit(mix(seed ^ mix(id ^ (row << 20) ^ 0xABCDEFull)));
    float w = g * 1.7320508f * 0.02f * row_scale;
    if ((mix(h) & 0xFFF) == 0) /* about 1 in 4096 is an outlier, 6-12x larger */
        w *= 6.0f + 6.0f * unit(mix(h ^ 1));
    return w;
}

static size_t plan(gen_tensor *out, unsigned layers, uint64_t dim, uint64_t ffn, uint64_t kv,
                   uint64_t vocab)
{
    size_t n = 0;
#define ADD(r, a, b, isnorm, ...)                                                  \
    do {                                                                           \
        snprintf(out[n].name, sizeof out[n].name, __VA_ARGS__);                    \
        out[n].rank = (r);                                                         \
        out[n].shape[0] = (a);                                                     \
        out[n].shape[1] = (b);                                                     \
        out[n].norm = (isnorm);                                                    \
        n++;                                                                       \
    } while (0)
    ADD(2, vocab, dim, false, "model.embed_tokens.weight");
    for (unsigned l = 0; l < layers; l++) {
        ADD(1, dim, 0, true, "model.layers.%u.input_layernorm.weight", l);
        ADD(2, dim, dim, false, "model.layers.%u.self_attn.q_proj.weight", l);
        ADD(2, kv, dim, false, "model.layers.%u.self_attn.k_proj.weight", l);
        ADD(2, kv, dim, false, "model.layers.%u.self_attn.v_proj.weight", l);
        ADD(2, dim, dim, false, "model.layers.%u.self_attn.o_proj.weight", l);
        ADD(1, dim, 0, true, "model.layers.%u.post_attention_layernorm.weight", l);
        ADD(2, ffn, dim, false, "model.layers.%u.mlp.gate_proj.weight", l);
        ADD(2, ffn, dim, false, "model.layers.%u.mlp.up_proj.weight", l);
        ADD(2, dim, ffn, false, "model.layers.%u.mlp.down_proj.weight", l);
    }
    ADD(1, dim, 0, true, "model.norm.weight");
    ADD(2, vocab, dim, false, "lm_head.weight");
#undef ADD
    return n;
}

static void store(uint8_t *p, float v, sgfp4_st_dtype dt)
{
    uint32_t bits;
    memcpy(&bits, &v, 4);
    if (dt == SGFP4_ST_F32) {
        for (int b = 0; b < 4; b++)
            p[b] = (uint8_t)(bits >> (8 * b));
        return;
    }
    const uint16_t h = dt == SGFP4_ST_F16 ? sgfp4_float_to_half(v) : sgfp4_float_to_bf16(v);
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

static int run(const cli_args *a)
{
    const char *cmd = a->command, *out_path = a->out;
    const unsigned layers = a->layers, dim = a->dim, ffn = a->ffn, vocab = a->vocab;
    const unsigned seed = a->seed, kv = a->kv_dim ? a->kv_dim : dim / 2 ? dim / 2 : 1;
    const sgfp4_st_dtype dt = !a->given[KEY_DTYPE] || a->dtype == SGFP4_DTYPE_BF16 ? SGFP4_ST_BF16
                              : a->dtype == SGFP4_DTYPE_F16                         ? SGFP4_ST_F16
                                                                                    : SGFP4_ST_F32;
    if (a->in)
        return cli_usage_error(cmd, "unknown argument '%s'", a->in);
    if (!out_path)
        return cli_usage_error(cmd, "no output (-o OUT)");
    if (seed > (1u << 20))
        return cli_usage_error(cmd, "--seed wants a number in 0..%u", 1u << 20);
    const size_t max_tensors = 3 + 9 * (size_t)layers;
    gen_tensor *ts = calloc(max_tensors, sizeof *ts);
    sgfp4_st_entry *entries = calloc(max_tensors, sizeof *entries);
    if (!ts || !entries) {
        free(ts);
        free(entries);
        return cli_error(cmd, "out of memory");
    }
    const size_t n = plan(ts, layers, dim, ffn, kv, vocab);
    uint64_t total = 0;
    for (size_t k = 0; k < n; k++) {
        entries[k] = (sgfp4_st_entry){ts[k].name, dt, ts[k].rank, ts[k].shape};
        total += ts[k].shape[0] * (ts[k].rank == 2 ? ts[k].shape[1] : 1) * sgfp4_st_dtype_size(dt);
    }
    char config[256];
    snprintf(config, sizeof config,
             "{\"layers\": %u, \"dim\": %u, \"ffn\": %u, \"kv_dim\": %u, \"vocab\": %u, "
             "\"seed\": %u}", layers, dim, ffn, kv, vocab, seed);
    const char *keys[] = {"generator", "config"};
    const char *values[] = {"sgfp4 example (synthetic, deterministic)", config};
    int rc = CLI_EXIT_FAIL;
    const size_t chunk = 1 << 20; /* elements per write */
    uint8_t *buf = malloc(chunk * 4);
    sgfp4_st_writer *w = NULL;
    sgfp4_diag diag;
    sgfp4_model_output *mo = buf ? cli_model_output_open(a, out_path, NULL,
                                                         SGFP4_MODEL_OUTPUT_WRITE)
                                 : NULL;
    if (!buf) {
        cli_error(cmd, "out of memory");
    } else if (mo) {
        const sgfp4_sink sink = sgfp4_model_output_sink(mo);
        sgfp4_status s = sgfp4_st_writer_begin(entries, n, keys, values, 2, &sink, &w, &diag);
        progress_bar bar;
        progress_bar_init(&bar, "example");
        uint64_t done = 0;
        const size_t esize = sgfp4_st_dtype_size(dt);
        for (size_t t = 0; s == SGFP4_OK && t < n; t++) {
            const uint64_t count = ts[t].shape[0] * (ts[t].rank == 2 ? ts[t].shape[1] : 1);
            for (uint64_t k = 0; s == SGFP4_OK && k < count; k += chunk) {
                const size_t m = (size_t)(count - k < chunk ? count - k : chunk);
                for (size_t j = 0; j < m; j++)
                    store(buf + j * esize, element(seed, t, &ts[t], k + j), dt);
                s = sgfp4_st_writer_write(w, buf, m * esize);
            }
            done += count * esize;
            progress_bar_update(&bar, &(sgfp4_model_progress){t + 1, n, done, total, ts[t].name});
        }
        progress_bar_done(&bar);
        if (s == SGFP4_OK)
            s = sgfp4_st_writer_finish(w, &diag);
        if (s != SGFP4_OK)
            cli_error(cmd, "%s: cannot write: %s", out_path, sgfp4_status_str(s));
        else if (sgfp4_model_output_commit(mo, &diag) != SGFP4_OK)
            cli_error(cmd, "%s", diag.message);
        else
            rc = CLI_EXIT_OK;
    }
    sgfp4_model_output_close(mo); /* removes the temporary file of a failed run */
    sgfp4_st_writer_free(w);
    free(buf);
    free(ts);
    free(entries);
    return rc;
}

const cli_command cli_example = {
    "example", "write the built-in synthetic transformer-like model",
    "usage: sgfp4 example -o MODEL.safetensors[.zst] [options]\n"
    "\n"
    "Writes a synthetic transformer-like model, identical for identical options on every\n"
    "platform: token embeddings, per layer q/k/v/o projections, gate/up/down MLP matrices\n"
    "and RMS-norm vectors, a final norm and an lm_head. Weights are Gaussian-like with rare\n"
    "large outliers and per-row scale variation, as in trained checkpoints.\n"
    "Default size: about 16 M parameters (32 MB as BF16).\n",
    options, run};
