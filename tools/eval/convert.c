/* --from-llama2c: a llama2.c checkpoint (the legacy version-0 export of llama2.c's
 * export.py, the format of karpathy/tinyllamas' .bin files) as the safetensors model the
 * benchmark reads: the tensor names of llama2.c's model.py, float32, [out, in] matrices as
 * run.c multiplies them, and the header's configuration as the `config` metadata. The RoPE
 * tables the checkpoint carries are not learned and are dropped (the forward pass computes
 * them). The output is written crash-safe (tools/fileio: a temporary file renamed when
 * complete, removed on an error or a signal) and never replaces an existing file.
 * SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "fileio.h"

enum { HEADER_INTS = 7, MAX_DIM = 1 << 20, MAX_LAYERS = 4096 };

/* The seven header fields of the legacy export. */
typedef struct llama2c_header {
    int dim, hidden, layers, heads, kv_heads, vocab, seq_len;
    int shared; /* vocab_size > 0: the classifier is the token embedding */
} llama2c_header;

typedef struct tensor_plan {
    char name[64];
    uint64_t shape[2];
    size_t rank;
    uint64_t offset; /* in floats, from the first tensor */
} tensor_plan;

static int read_header(const fileio_input *in, const char *path, llama2c_header *h)
{
    int32_t v[HEADER_INTS];
    if (in->size < sizeof v) {
        fprintf(stderr, "sgfp4-eval: %s: %zu bytes, too short for a llama2.c checkpoint\n",
                path, in->size);
        return -1;
    }
    memcpy(v, in->data, sizeof v);
    if (v[0] == 0x616b3432) { /* "ak42": the versioned exports of export.py */
        fprintf(stderr, "sgfp4-eval: %s: a versioned llama2.c export (version %d); only the "
                        "legacy version-0 format (export.py --version 0) is read\n", path,
                v[1]);
        return -1;
    }
    *h = (llama2c_header){v[0], v[1], v[2], v[3], v[4], v[5] < 0 ? -v[5] : v[5], v[6], v[5] > 0};
    const int ok = h->dim > 0 && h->dim <= MAX_DIM && h->hidden > 0 && h->hidden <= MAX_DIM &&
                   h->layers > 0 && h->layers <= MAX_LAYERS && h->heads > 0 &&
                   h->dim % h->heads == 0 && (h->dim / h->heads) % 2 == 0 && h->kv_heads > 0 &&
                   h->heads % h->kv_heads == 0 && h->vocab > 0 && h->vocab <= MAX_DIM &&
                   h->seq_len > 0 && h->seq_len <= MAX_DIM;
    if (!ok)
        fprintf(stderr, "sgfp4-eval: %s: not a llama2.c checkpoint (header dim %d, hidden %d, "
                        "layers %d, heads %d, kv heads %d, vocab %d, seq_len %d)\n", path,
                v[0], v[1], v[2], v[3], v[4], v[5], v[6]);
    return ok ? 0 : -1;
}

/* The tensors in the checkpoint's order (each kind for every layer, then the next kind),
 * with their offsets; *floats = all the data, the RoPE tables and the classifier included. */
static tensor_plan *plan_tensors(const llama2c_header *h, size_t *count, uint64_t *floats)
{
    const uint64_t dim = (uint64_t)h->dim, hidden = (uint64_t)h->hidden;
    const uint64_t kv_dim = dim / (uint64_t)h->heads * (uint64_t)h->kv_heads;
    const struct {
        const char *pattern; /* NULL: not per layer */
        uint64_t rows, cols; /* cols 0: a vector of `rows` */
    } kinds[] = {
        {"tok_embeddings.weight", (uint64_t)h->vocab, dim},
        {"layers.%d.attention_norm.weight", dim, 0},
        {"layers.%d.attention.wq.weight", dim, dim},
        {"layers.%d.attention.wk.weight", kv_dim, dim},
        {"layers.%d.attention.wv.weight", kv_dim, dim},
        {"layers.%d.attention.wo.weight", dim, dim},
        {"layers.%d.ffn_norm.weight", dim, 0},
        {"layers.%d.feed_forward.w1.weight", hidden, dim},
        {"layers.%d.feed_forward.w2.weight", dim, hidden},
        {"layers.%d.feed_forward.w3.weight", hidden, dim},
        {"norm.weight", dim, 0},
    };
    const size_t n_kinds = sizeof kinds / sizeof kinds[0];
    const size_t total = 3 + (n_kinds - 2) * (size_t)h->layers;
    tensor_plan *p = calloc(total, sizeof *p);
    if (!p)
        return NULL;
    size_t n = 0;
    uint64_t at = 0;
    for (size_t k = 0; k < n_kinds; k++) {
        const int per_layer = strstr(kinds[k].pattern, "%d") != NULL;
        for (int layer = 0; layer < (per_layer ? h->layers : 1); layer++) {
            tensor_plan *t = &p[n++];
            snprintf(t->name, sizeof t->name, kinds[k].pattern, layer);
            t->rank = kinds[k].cols ? 2 : 1;
            t->shape[0] = kinds[k].rows;
            t->shape[1] = kinds[k].cols;
            t->offset = at;
            at += kinds[k].rows * (kinds[k].cols ? kinds[k].cols : 1);
        }
    }
    at += 2 * (uint64_t)h->seq_len * (dim / (uint64_t)h->heads / 2); /* freq_cis real, imag */
    if (!h->shared) {
        tensor_plan *t = &p[n++];
        snprintf(t->name, sizeof t->name, "output.weight");
        t->rank = 2;
        t->shape[0] = (uint64_t)h->vocab;
        t->shape[1] = dim;
        t->offset = at;
        at += (uint64_t)h->vocab * dim;
    }
    *count = n;
    *floats = at;
    return p;
}

static int write_model(const fileio_input *in, const llama2c_header *h, const tensor_plan *p,
                       size_t n, sgfp4_model_output *out, const char *out_path)
{
    char config[320];
    snprintf(config, sizeof config,
             "{\"dim\": %d, \"hidden_dim\": %d, \"n_layers\": %d, \"n_heads\": %d, "
             "\"n_kv_heads\": %d, \"vocab_size\": %d, \"seq_len\": %d, "
             "\"shared_classifier\": %s}",
             h->dim, h->hidden, h->layers, h->heads, h->kv_heads, h->vocab, h->seq_len,
             h->shared ? "true" : "false");
    const char *keys[] = {"format", "config"};
    const char *values[] = {"llama2.c legacy v0 checkpoint, float32 (sgfp4-eval --from-llama2c)",
                            config};
    sgfp4_st_entry *entries = calloc(n, sizeof *entries);
    if (!entries)
        return fprintf(stderr, "sgfp4-eval: out of memory\n"), -1;
    for (size_t k = 0; k < n; k++)
        entries[k] = (sgfp4_st_entry){p[k].name, SGFP4_ST_F32, p[k].rank, p[k].shape};
    const sgfp4_sink sink = sgfp4_model_output_sink(out);
    sgfp4_st_writer *w = NULL;
    sgfp4_diag diag;
    sgfp4_status s = sgfp4_st_writer_begin(entries, n, keys, values, 2, &sink, &w, &diag);
    const uint8_t *data = in->data + HEADER_INTS * sizeof(int32_t);
    for (size_t k = 0; s == SGFP4_OK && k < n; k++) {
        const uint64_t floats = p[k].shape[0] * (p[k].rank == 2 ? p[k].shape[1] : 1);
        s = sgfp4_st_writer_write(w, data + p[k].offset * 4, (size_t)floats * 4);
        if (s != SGFP4_OK)
            snprintf(diag.message, sizeof diag.message, "cannot write tensor '%s': %s",
                     p[k].name, sgfp4_status_str(s));
    }
    if (s == SGFP4_OK)
        s = sgfp4_st_writer_finish(w, &diag);
    sgfp4_st_writer_free(w);
    free(entries);
    if (s != SGFP4_OK) {
        fprintf(stderr, "sgfp4-eval: %s: %s\n", out_path, diag.message);
        return -1;
    }
    if (sgfp4_model_output_commit(out, &diag) != SGFP4_OK) {
        fprintf(stderr, "sgfp4-eval: %s\n", diag.message);
        return -1;
    }
    return 0;
}

int eval_convert_llama2c(const char *bin_path, const char *out_path, int force)
{
    /* the output is checked (never the checkpoint, an existing file only with -f) before
     * the checkpoint is read */
    eval_note_input(bin_path);
    sgfp4_model_output *out = eval_output_open(out_path, force);
    if (!out)
        return -1;
    fileio_input in;
    char err[FILEIO_ERROR_SIZE];
    if (!fileio_read(bin_path, &in, err)) {
        fprintf(stderr, "sgfp4-eval: %s\n", err);
        sgfp4_model_output_close(out);
        return -1;
    }
    llama2c_header h;
    size_t n = 0;
    uint64_t floats = 0;
    tensor_plan *p = NULL;
    int rc = read_header(&in, bin_path, &h);
    if (rc == 0 && !(p = plan_tensors(&h, &n, &floats)))
        rc = -1, fprintf(stderr, "sgfp4-eval: out of memory\n");
    const uint64_t want = HEADER_INTS * 4 + floats * 4;
    if (rc == 0 && (uint64_t)in.size != want) {
        fprintf(stderr, "sgfp4-eval: %s: %zu bytes, but its header (dim %d, hidden %d, layers "
                        "%d, heads %d/%d, vocab %d%s, seq_len %d) describes %llu\n", bin_path,
                in.size, h.dim, h.hidden, h.layers, h.heads, h.kv_heads, h.vocab,
                h.shared ? "" : " unshared", h.seq_len, (unsigned long long)want);
        rc = -1;
    }
    if (rc == 0)
        rc = write_model(&in, &h, p, n, out, out_path);
    if (rc == 0)
        fprintf(stderr, "sgfp4-eval: %s: %zu tensors (dim %d, %d layers, vocab %d)\n", out_path,
                n, h.dim, h.layers, h.vocab);
    sgfp4_model_output_close(out); /* removes the temporary file of a failed run */
    free(p);
    fileio_input_release(&in);
    return rc;
}
