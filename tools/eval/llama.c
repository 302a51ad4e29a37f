/* The llama2.c forward pass (Llama-2 architecture: RMSNorm, rotary attention with grouped
 * key/value heads, SwiGLU feed-forward, a classifier that may share the token embedding),
 * written from its description in llama2.c's run.c and the weights' README. One token at a
 * time with a key/value cache; all sums in a fixed order (deterministic on a given build).
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "eval.h"

struct llama_state {
    llama_config c;
    float *x, *xb, *xb2, *hb, *hb2, *q, *k, *v, *att, *logits;
    float *key_cache, *value_cache; /* [layer][seq_len][kv_dim] */
    float *rope_cos, *rope_sin;     /* [seq_len][head_size / 2] */
};

static int get_int(json_t *root, const char *key, int *out)
{
    json_t *v = json_object_get(root, key);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 1 << 24)
        return -1;
    *out = (int)json_integer_value(v);
    return 1;
}

int llama_config_read(const char *config_json, const eval_weights *w, llama_config *c)
{
    const eval_tensor *emb = eval_weights_find(w, "tok_embeddings.weight");
    const eval_tensor *w1 = eval_weights_find(w, "layers.0.feed_forward.w1.weight");
    const eval_tensor *wq = eval_weights_find(w, "layers.0.attention.wq.weight");
    const eval_tensor *wk = eval_weights_find(w, "layers.0.attention.wk.weight");
    if (!emb || !w1 || !wq || !wk) {
        fprintf(stderr, "sgfp4-eval: not a llama2.c-architecture model (tensor names)\n");
        return -1;
    }
    memset(c, 0, sizeof *c);
    c->dim = (int)emb->cols;
    c->vocab = (int)emb->rows;
    c->hidden = (int)w1->rows;
    c->seq_len = 512;
    while (c->layers < 4096) {
        char name[64];
        snprintf(name, sizeof name, "layers.%d.attention.wq.weight", c->layers);
        if (!eval_weights_find(w, name))
            break;
        c->layers++;
    }
    if (config_json) {
        json_error_t err;
        json_t *root = json_loads(config_json, 0, &err);
        int bad = !json_is_object(root);
        if (!bad)
            bad = get_int(root, "n_heads", &c->heads) < 0 ||
                  get_int(root, "n_kv_heads", &c->kv_heads) < 0 ||
                  get_int(root, "seq_len", &c->seq_len) < 0;
        json_decref(root);
        if (bad) {
            fprintf(stderr, "sgfp4-eval: the model's config metadata is not valid\n");
            return -1;
        }
    }
    if (c->heads == 0 || c->kv_heads == 0) {
        fprintf(stderr, "sgfp4-eval: the model has no config metadata: give --heads and "
                        "--kv-heads\n");
        return -1;
    }
    const int head_size = c->dim / c->heads;
    if (c->dim % c->heads || head_size % 2 || c->heads % c->kv_heads ||
        (uint64_t)wk->rows != (uint64_t)(c->kv_heads * head_size) ||
        wq->rows != (uint64_t)c->dim || wq->cols != (uint64_t)c->dim) {
        fprintf(stderr, "sgfp4-eval: heads %d / kv heads %d do not fit the shapes\n", c->heads,
                c->kv_heads);
        return -1;
    }
    return 0;
}

/* The tensor called name, of rows x cols elements; else says why and sets *missing. */
static const float *need(const eval_weights *w, const char *name, uint64_t rows, uint64_t cols,
                         int *missing)
{
    const eval_tensor *t = eval_weights_find(w, name);
    if (!t || t->rows * t->cols != rows * cols) {
        fprintf(stderr, "sgfp4-eval: %s: %s (expected %llu x %llu)\n", name,
                t ? "wrong shape" : "missing", (unsigned long long)rows,
                (unsigned long long)cols);
        *missing = 1;
        return NULL;
    }
    return t->data;
}

/* need() of a per-layer tensor: pattern is a printf format taking the layer. */
static const float *need_layer(const eval_weights *w, const char *pattern, int layer,
                               uint64_t rows, uint64_t cols, int *missing)
{
    char name[96];
    snprintf(name, sizeof name, pattern, layer);
    return need(w, name, rows, cols, missing);
}

int llama_bind(const llama_config *c, const eval_weights *w, llama_model *m)
{
    memset(m, 0, sizeof *m);
    m->c = *c;
    const uint64_t dim = (uint64_t)c->dim, hid = (uint64_t)c->hidden;
    const uint64_t kv = (uint64_t)(c->dim / c->heads * c->kv_heads);
    int missing = 0;
    m->rms_att = calloc((size_t)c->layers, sizeof *m->rms_att);
    m->rms_ffn = calloc((size_t)c->layers, sizeof *m->rms_ffn);
    for (int s = 0; s < SLOT_COUNT; s++)
        m->w[s] = calloc((size_t)c->layers, sizeof *m->w[s]);
    m->tok_embeddings = need(w, "tok_embeddings.weight", (uint64_t)c->vocab, dim, &missing);
    m->rms_final = need(w, "norm.weight", 1, dim, &missing);
    m->classifier = eval_weights_find(w, "output.weight")
                        ? need(w, "output.weight", (uint64_t)c->vocab, dim, &missing)
                        : m->tok_embeddings;
    static const char *const names[SLOT_COUNT] = {
        "layers.%d.attention.wq.weight", "layers.%d.attention.wk.weight",
        "layers.%d.attention.wv.weight", "layers.%d.attention.wo.weight",
        "layers.%d.feed_forward.w1.weight", "layers.%d.feed_forward.w2.weight",
        "layers.%d.feed_forward.w3.weight"};
    const uint64_t shape[SLOT_COUNT][2] = {{dim, dim}, {kv, dim}, {kv, dim}, {dim, dim},
                                           {hid, dim}, {dim, hid}, {hid, dim}};
    for (int l = 0; l < c->layers && m->rms_att && m->rms_ffn; l++) {
        m->rms_att[l] = need_layer(w, "layers.%d.attention_norm.weight", l, 1, dim, &missing);
        m->rms_ffn[l] = need_layer(w, "layers.%d.ffn_norm.weight", l, 1, dim, &missing);
        for (int s = 0; s < SLOT_COUNT; s++)
            if (m->w[s])
                m->w[s][l] = need_layer(w, names[s], l, shape[s][0], shape[s][1], &missing);
    }
    return missing || !m->rms_att || !m->rms_ffn ? -1 : 0;
}

llama_state *llama_state_create(const llama_config *c)
{
    llama_state *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->c = *c;
    const size_t dim = (size_t)c->dim, hid = (size_t)c->hidden, seq = (size_t)c->seq_len;
    const size_t hs = dim / (size_t)c->heads, kv = hs * (size_t)c->kv_heads;
    float **bufs[] = {&s->x, &s->xb, &s->xb2, &s->q, &s->hb, &s->hb2, &s->k, &s->v, &s->att,
                      &s->logits, &s->key_cache, &s->value_cache, &s->rope_cos, &s->rope_sin};
    const size_t sizes[] = {dim, dim, dim, dim, hid, hid, kv, kv, (size_t)c->heads * seq,
                            (size_t)c->vocab, (size_t)c->layers * seq * kv,
                            (size_t)c->layers * seq * kv, seq * hs / 2, seq * hs / 2};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (!(*bufs[i] = calloc(sizes[i], sizeof(float)))) {
            llama_state_free(s);
            return NULL;
        }
    for (size_t pos = 0; pos < seq; pos++)
        llama_rope_angles((int)hs, (int)pos, s->rope_cos + pos * hs / 2, s->rope_sin + pos * hs / 2);
    return s;
}

/* RoPE: pair (2j, 2j+1) of every head turns by pos * 10000^(-2j / head_size). */
void llama_rope_angles(int head_size, int pos, float *cs, float *sn)
{
    for (int j = 0; j < head_size / 2; j++) {
        const float freq = 1.0f / powf(10000.0f, (float)(2 * j) / (float)head_size);
        const float angle = (float)pos * freq;
        cs[j] = cosf(angle);
        sn[j] = sinf(angle);
    }
}

void llama_state_free(llama_state *s)
{
    if (!s)
        return;
    float *bufs[] = {s->x, s->xb, s->xb2, s->q, s->hb, s->hb2, s->k, s->v, s->att, s->logits,
                     s->key_cache, s->value_cache, s->rope_cos, s->rope_sin};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
    free(s);
}

float llama_rmsnorm(float *out, const float *x, const float *weight, int n)
{
    float ss = 0.0f;
    for (int j = 0; j < n; j++)
        ss += x[j] * x[j];
    ss = 1.0f / sqrtf(ss / (float)n + 1e-5f);
    for (int j = 0; j < n; j++)
        out[j] = weight[j] * (ss * x[j]);
    return ss;
}

/* out[rows] = W[rows x n] x[n]; eight partial sums per row, added in a fixed order. */
void llama_matmul(float *out, const float *x, const float *w, int n, int rows)
{
    for (int i = 0; i < rows; i++) {
        const float *row = w + (size_t)i * (size_t)n;
        float acc[8] = {0};
        int j = 0;
        for (; j + 8 <= n; j += 8)
            for (int k = 0; k < 8; k++)
                acc[k] += row[j + k] * x[j + k];
        for (; j < n; j++)
            acc[j % 8] += row[j] * x[j];
        out[i] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    }
}

void llama_softmax(float *x, int n)
{
    float max = x[0];
    for (int i = 1; i < n; i++)
        max = x[i] > max ? x[i] : max;
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    for (int i = 0; i < n; i++)
        x[i] /= sum;
}

void llama_rope(float *vec, int n, int head_size, const float *cs, const float *sn)
{
    for (int i = 0; i < n; i += 2) {
        const int j = (i % head_size) / 2;
        const float v0 = vec[i], v1 = vec[i + 1];
        vec[i] = v0 * cs[j] - v1 * sn[j];
        vec[i + 1] = v0 * sn[j] + v1 * cs[j];
    }
}

static void attention(const llama_config *c, llama_state *s, int layer, int pos)
{
    const int hs = c->dim / c->heads, kv_dim = hs * c->kv_heads, group = c->heads / c->kv_heads;
    const size_t base = (size_t)layer * (size_t)c->seq_len * (size_t)kv_dim;
    for (int h = 0; h < c->heads; h++) {
        const float *q = s->q + h * hs;
        float *att = s->att + (size_t)h * (size_t)c->seq_len;
        const size_t head = (size_t)(h / group * hs);
        for (int t = 0; t <= pos; t++) {
            const float *k = s->key_cache + base + (size_t)t * (size_t)kv_dim + head;
            float score = 0.0f;
            for (int i = 0; i < hs; i++)
                score += q[i] * k[i];
            att[t] = score / sqrtf((float)hs);
        }
        llama_softmax(att, pos + 1);
        float *out = s->xb + h * hs;
        memset(out, 0, (size_t)hs * sizeof(float));
        for (int t = 0; t <= pos; t++) {
            const float *v = s->value_cache + base + (size_t)t * (size_t)kv_dim + head;
            for (int i = 0; i < hs; i++)
                out[i] += att[t] * v[i];
        }
    }
}

const float *llama_forward(const llama_model *m, llama_state *s, int token, int pos)
{
    const llama_config *c = &m->c;
    const int dim = c->dim, hid = c->hidden, hs = dim / c->heads, kv_dim = hs * c->kv_heads;
    const float *cs = s->rope_cos + (size_t)pos * (size_t)(hs / 2);
    const float *sn = s->rope_sin + (size_t)pos * (size_t)(hs / 2);
    memcpy(s->x, m->tok_embeddings + (size_t)token * (size_t)dim, (size_t)dim * sizeof(float));
    for (int l = 0; l < c->layers; l++) {
        llama_rmsnorm(s->xb, s->x, m->rms_att[l], dim);
        const size_t at = ((size_t)l * (size_t)c->seq_len + (size_t)pos) * (size_t)kv_dim;
        llama_matmul(s->q, s->xb, m->w[SLOT_WQ][l], dim, dim);
        llama_matmul(s->key_cache + at, s->xb, m->w[SLOT_WK][l], dim, kv_dim);
        llama_matmul(s->value_cache + at, s->xb, m->w[SLOT_WV][l], dim, kv_dim);
        llama_rope(s->q, dim, hs, cs, sn);
        llama_rope(s->key_cache + at, kv_dim, hs, cs, sn);
        attention(c, s, l, pos);
        llama_matmul(s->xb2, s->xb, m->w[SLOT_WO][l], dim, dim);
        for (int i = 0; i < dim; i++)
            s->x[i] += s->xb2[i];
        llama_rmsnorm(s->xb, s->x, m->rms_ffn[l], dim);
        llama_matmul(s->hb, s->xb, m->w[SLOT_W1][l], dim, hid);
        llama_matmul(s->hb2, s->xb, m->w[SLOT_W3][l], dim, hid);
        for (int i = 0; i < hid; i++) {
            const float v = s->hb[i];
            s->hb[i] = v * (1.0f / (1.0f + expf(-v))) * s->hb2[i];
        }
        llama_matmul(s->xb, s->hb, m->w[SLOT_W2][l], hid, dim);
        for (int i = 0; i < dim; i++)
            s->x[i] += s->xb[i];
    }
    llama_rmsnorm(s->x, s->x, m->rms_final, dim);
    llama_matmul(s->logits, s->x, m->classifier, dim, c->vocab);
    return s->logits;
}
