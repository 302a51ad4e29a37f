/* Importance by the diagonal Fisher information (the K-FAC diagonal): for a matrix
 * y = W x, the expected second derivative of the model's loss in weight (i, j) is
 * approximated by E[g_i^2] * E[x_j^2], g = dL/dy. The importance file holds the two factors:
 * E[x_j^2] (the imatrix of llama.cpp) under the tensor's name and E[g_i^2] under NAME:rows.
 * The loss is -log p of the next token, the tokens sampled from the float32 model itself, so
 * the expectation is the true Fisher information, whose quadratic form is twice the KL
 * divergence that a small change of the weights causes. The gradients come from one exact
 * backward pass through each sampled sequence (written here for the llama2.c architecture).
 * A shared token embedding gets the classifier's factors plus, in its rows, the lookup's
 * gradients (each token's row is what the first layer reads).
 * The same pass keeps the second moment E[x x^T] of every matrix's input (the Hessian of a
 * layer's squared output error that GPTQ-style encoders use), once per distinct input.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"

#define BOS 1

/* What the forward pass keeps of one sequence (every array [position][...]). */
typedef struct layer_cache {
    float *x_in, *xa, *q, *k, *v, *att, *xo, *x_mid, *xb, *h1, *h3, *hh;
    float *ra, *rb; /* 1 / rms of x_in and x_mid */
} layer_cache;

typedef struct fisher_pass {
    const llama_model *m;
    int T;
    layer_cache *layers;
    float *x_last, *xf, *rf, *p; /* final residual, normed, its 1 / rms, softmax */
    int *tokens;                 /* [T + 1] */
    float *rope_cos, *rope_sin;  /* [T][head_size / 2] */
    /* backward scratch */
    float *gx, *gxm, *gv, *gk, *gq, *gtmp, *ghid, *gh1, *gh3;
} fisher_pass;

static float *alloc_floats(size_t n, int *bad)
{
    float *p = calloc(n ? n : 1, sizeof(float));
    *bad |= p == NULL;
    return p;
}

static int pass_create(fisher_pass *f, const llama_model *m, int T)
{
    const llama_config *c = &m->c;
    const size_t t = (size_t)T, dim = (size_t)c->dim, hid = (size_t)c->hidden;
    const size_t hs = dim / (size_t)c->heads, kv = hs * (size_t)c->kv_heads;
    int bad = 0;
    memset(f, 0, sizeof *f);
    f->m = m;
    f->T = T;
    f->layers = calloc((size_t)c->layers, sizeof *f->layers);
    bad |= f->layers == NULL;
    for (int l = 0; !bad && l < c->layers; l++) {
        layer_cache *L = &f->layers[l];
        L->x_in = alloc_floats(t * dim, &bad);
        L->xa = alloc_floats(t * dim, &bad);
        L->q = alloc_floats(t * dim, &bad);
        L->k = alloc_floats(t * kv, &bad);
        L->v = alloc_floats(t * kv, &bad);
        L->att = alloc_floats(t * (size_t)c->heads * t, &bad);
        L->xo = alloc_floats(t * dim, &bad);
        L->x_mid = alloc_floats(t * dim, &bad);
        L->xb = alloc_floats(t * dim, &bad);
        L->h1 = alloc_floats(t * hid, &bad);
        L->h3 = alloc_floats(t * hid, &bad);
        L->hh = alloc_floats(t * hid, &bad);
        L->ra = alloc_floats(t, &bad);
        L->rb = alloc_floats(t, &bad);
    }
    f->x_last = alloc_floats(t * dim, &bad);
    f->xf = alloc_floats(t * dim, &bad);
    f->rf = alloc_floats(t, &bad);
    f->p = alloc_floats(t * (size_t)c->vocab, &bad);
    f->tokens = calloc(t + 1, sizeof *f->tokens);
    bad |= f->tokens == NULL;
    f->rope_cos = alloc_floats(t * hs / 2, &bad);
    f->rope_sin = alloc_floats(t * hs / 2, &bad);
    f->gx = alloc_floats(t * dim, &bad);
    f->gxm = alloc_floats(t * dim, &bad);
    f->gq = alloc_floats(t * dim, &bad);
    f->gk = alloc_floats(t * kv, &bad);
    f->gv = alloc_floats(t * kv, &bad);
    f->gtmp = alloc_floats(t > dim ? t : dim, &bad);
    f->ghid = alloc_floats(hid, &bad);
    f->gh1 = alloc_floats(hid, &bad);
    f->gh3 = alloc_floats(hid, &bad);
    for (int pos = 0; !bad && pos < T; pos++)
        llama_rope_angles((int)hs, pos, f->rope_cos + (size_t)pos * hs / 2,
                          f->rope_sin + (size_t)pos * hs / 2);
    return bad ? -1 : 0;
}

static void pass_free(fisher_pass *f)
{
    for (int l = 0; f->layers && l < f->m->c.layers; l++) {
        layer_cache *L = &f->layers[l];
        float *bufs[] = {L->x_in, L->xa, L->q, L->k, L->v, L->att, L->xo,
                         L->x_mid, L->xb, L->h1, L->h3, L->hh, L->ra, L->rb};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            free(bufs[i]);
    }
    free(f->layers);
    float *bufs[] = {f->x_last, f->xf, f->rf, f->p, f->rope_cos, f->rope_sin, f->gx, f->gxm,
                     f->gq, f->gk, f->gv, f->gtmp, f->ghid, f->gh1, f->gh3};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
    free(f->tokens);
}

static float silu(float v) { return v * (1.0f / (1.0f + expf(-v))); }

/* The forward pass over the sequence, keeping everything; samples the tokens as it goes. */
static void forward(fisher_pass *f, eval_rng *rng)
{
    const llama_model *m = f->m;
    const llama_config *c = &m->c;
    const int dim = c->dim, hid = c->hidden, hs = dim / c->heads, kv = hs * c->kv_heads;
    const int group = c->heads / c->kv_heads;
    float *x = f->gtmp; /* the residual stream of the current position */
    f->tokens[0] = BOS;
    for (int t = 0; t < f->T; t++) {
        const float *cs = f->rope_cos + (size_t)t * (size_t)(hs / 2);
        const float *sn = f->rope_sin + (size_t)t * (size_t)(hs / 2);
        memcpy(x, m->tok_embeddings + (size_t)f->tokens[t] * (size_t)dim, (size_t)dim * 4);
        for (int l = 0; l < c->layers; l++) {
            layer_cache *L = &f->layers[l];
            float *x_in = L->x_in + (size_t)t * (size_t)dim, *xa = L->xa + (size_t)t * (size_t)dim;
            float *q = L->q + (size_t)t * (size_t)dim, *k = L->k + (size_t)t * (size_t)kv;
            float *v = L->v + (size_t)t * (size_t)kv, *xo = L->xo + (size_t)t * (size_t)dim;
            memcpy(x_in, x, (size_t)dim * 4);
            L->ra[t] = llama_rmsnorm(xa, x_in, m->rms_att[l], dim);
            llama_matmul(q, xa, m->w[SLOT_WQ][l], dim, dim);
            llama_matmul(k, xa, m->w[SLOT_WK][l], dim, kv);
            llama_matmul(v, xa, m->w[SLOT_WV][l], dim, kv);
            llama_rope(q, dim, hs, cs, sn);
            llama_rope(k, kv, hs, cs, sn);
            for (int h = 0; h < c->heads; h++) {
                float *a = L->att + ((size_t)t * (size_t)c->heads + (size_t)h) * (size_t)f->T;
                const int g = h / group;
                for (int s = 0; s <= t; s++) {
                    const float *ks = L->k + (size_t)s * (size_t)kv + (size_t)(g * hs);
                    float score = 0.0f;
                    for (int i = 0; i < hs; i++)
                        score += q[h * hs + i] * ks[i];
                    a[s] = score / sqrtf((float)hs);
                }
                llama_softmax(a, t + 1);
                for (int i = 0; i < hs; i++) {
                    float sum = 0.0f;
                    for (int s = 0; s <= t; s++)
                        sum += a[s] * L->v[(size_t)s * (size_t)kv + (size_t)(g * hs + i)];
                    xo[h * hs + i] = sum;
                }
            }
            float *x_mid = L->x_mid + (size_t)t * (size_t)dim, *xb = L->xb + (size_t)t * (size_t)dim;
            llama_matmul(x_mid, xo, m->w[SLOT_WO][l], dim, dim);
            for (int i = 0; i < dim; i++)
                x_mid[i] += x_in[i];
            L->rb[t] = llama_rmsnorm(xb, x_mid, m->rms_ffn[l], dim);
            float *h1 = L->h1 + (size_t)t * (size_t)hid, *h3 = L->h3 + (size_t)t * (size_t)hid;
            float *hh = L->hh + (size_t)t * (size_t)hid;
            llama_matmul(h1, xb, m->w[SLOT_W1][l], dim, hid);
            llama_matmul(h3, xb, m->w[SLOT_W3][l], dim, hid);
            for (int i = 0; i < hid; i++)
                hh[i] = silu(h1[i]) * h3[i];
            llama_matmul(x, hh, m->w[SLOT_W2][l], hid, dim);
            for (int i = 0; i < dim; i++)
                x[i] += x_mid[i];
        }
        memcpy(f->x_last + (size_t)t * (size_t)dim, x, (size_t)dim * 4);
        float *xf = f->xf + (size_t)t * (size_t)dim, *p = f->p + (size_t)t * (size_t)c->vocab;
        f->rf[t] = llama_rmsnorm(xf, x, m->rms_final, dim);
        llama_matmul(p, xf, m->classifier, dim, c->vocab);
        f->tokens[t + 1] = eval_sample(p, c->vocab, rng);
        llama_softmax(p, c->vocab);
    }
}

/* gx += the gradient through y = weight * x * r (r = 1 / rms(x)) of gy. */
static void rmsnorm_back(const float *x, const float *weight, float r, const float *gy, int n,
                         float *gx)
{
    double dot = 0;
    for (int j = 0; j < n; j++)
        dot += (double)weight[j] * gy[j] * x[j];
    const double k = (double)r * r * r * dot / n;
    for (int j = 0; j < n; j++)
        gx[j] += (float)(r * weight[j] * gy[j] - k * x[j]);
}

/* gx[n] += W^T gy (W rows x n). */
static void matmul_back(const float *w, const float *gy, int n, int rows, float *gx)
{
    for (int i = 0; i < rows; i++) {
        const float *row = w + (size_t)i * (size_t)n;
        for (int j = 0; j < n; j++)
            gx[j] += row[j] * gy[i];
    }
}

static void add_squares(double *sum, const float *v, int n)
{
    for (int j = 0; j < n; j++)
        sum[j] += (double)v[j] * v[j];
}

/* The backward pass of one layer: f->gx holds dL/d(layer output) on entry and dL/d(layer
 * input) on exit; the factors of its matrices are accumulated. */
static void layer_back(fisher_pass *f, int l, llama_act_stats *st)
{
    const llama_model *m = f->m;
    const llama_config *c = &m->c;
    const int dim = c->dim, hid = c->hidden, hs = dim / c->heads, kv = hs * c->kv_heads;
    const int group = c->heads / c->kv_heads, T = f->T;
    const layer_cache *L = &f->layers[l];
    const size_t ld = (size_t)l * (size_t)dim, lh = (size_t)l * (size_t)hid;
    const size_t lk = (size_t)l * (size_t)kv;
    /* Feed-forward: x_out = x_mid + w2 (silu(w1 xb) * w3 xb). */
    memcpy(f->gxm, f->gx, (size_t)T * (size_t)dim * 4);
    for (int t = 0; t < T; t++) {
        const float *g = f->gx + (size_t)t * (size_t)dim;
        const float *h1 = L->h1 + (size_t)t * (size_t)hid, *h3 = L->h3 + (size_t)t * (size_t)hid;
        add_squares(st->out[SLOT_W2] + ld, g, dim);
        add_squares(st->sum[SLOT_W2] + lh, L->hh + (size_t)t * (size_t)hid, hid);
        memset(f->ghid, 0, (size_t)hid * 4);
        matmul_back(m->w[SLOT_W2][l], g, hid, dim, f->ghid);
        for (int i = 0; i < hid; i++) {
            const float sig = 1.0f / (1.0f + expf(-h1[i]));
            f->gh1[i] = f->ghid[i] * h3[i] * sig * (1.0f + h1[i] * (1.0f - sig));
            f->gh3[i] = f->ghid[i] * h1[i] * sig;
        }
        add_squares(st->out[SLOT_W1] + lh, f->gh1, hid);
        add_squares(st->out[SLOT_W3] + lh, f->gh3, hid);
        const float *xb = L->xb + (size_t)t * (size_t)dim;
        add_squares(st->sum[SLOT_W1] + ld, xb, dim);
        add_squares(st->sum[SLOT_W3] + ld, xb, dim);
        float *gxb = f->gtmp;
        memset(gxb, 0, (size_t)dim * 4);
        matmul_back(m->w[SLOT_W1][l], f->gh1, dim, hid, gxb);
        matmul_back(m->w[SLOT_W3][l], f->gh3, dim, hid, gxb);
        rmsnorm_back(L->x_mid + (size_t)t * (size_t)dim, m->rms_ffn[l], L->rb[t], gxb, dim,
                     f->gxm + (size_t)t * (size_t)dim);
    }
    /* Attention: x_mid = x_in + wo xo, xo = softmax(q k / sqrt(hs)) v per head. */
    memset(f->gq, 0, (size_t)T * (size_t)dim * 4);
    memset(f->gk, 0, (size_t)T * (size_t)kv * 4);
    memset(f->gv, 0, (size_t)T * (size_t)kv * 4);
    memcpy(f->gx, f->gxm, (size_t)T * (size_t)dim * 4);
    float gxo[4096];
    const float scale = 1.0f / sqrtf((float)hs);
    for (int t = 0; t < T; t++) {
        const float *g = f->gxm + (size_t)t * (size_t)dim;
        add_squares(st->out[SLOT_WO] + ld, g, dim);
        add_squares(st->sum[SLOT_WO] + ld, L->xo + (size_t)t * (size_t)dim, dim);
        memset(gxo, 0, (size_t)dim * 4);
        matmul_back(m->w[SLOT_WO][l], g, dim, dim, gxo);
        for (int h = 0; h < c->heads; h++) {
            const float *a = L->att + ((size_t)t * (size_t)c->heads + (size_t)h) * (size_t)T;
            const int gh = h / group;
            float *ga = f->gtmp; /* dL/d(attention weight) over s <= t */
            double mean = 0;
            for (int s = 0; s <= t; s++) {
                const float *vs = L->v + (size_t)s * (size_t)kv + (size_t)(gh * hs);
                float dot = 0.0f;
                for (int i = 0; i < hs; i++)
                    dot += gxo[h * hs + i] * vs[i];
                ga[s] = dot;
                mean += (double)a[s] * dot;
                float *gvs = f->gv + (size_t)s * (size_t)kv + (size_t)(gh * hs);
                for (int i = 0; i < hs; i++)
                    gvs[i] += a[s] * gxo[h * hs + i];
            }
            const float *qt = L->q + (size_t)t * (size_t)dim + (size_t)(h * hs);
            float *gqt = f->gq + (size_t)t * (size_t)dim + (size_t)(h * hs);
            for (int s = 0; s <= t; s++) {
                const float gz = a[s] * (ga[s] - (float)mean) * scale;
                const float *ks = L->k + (size_t)s * (size_t)kv + (size_t)(gh * hs);
                float *gks = f->gk + (size_t)s * (size_t)kv + (size_t)(gh * hs);
                for (int i = 0; i < hs; i++) {
                    gqt[i] += gz * ks[i];
                    gks[i] += gz * qt[i];
                }
            }
        }
    }
    float neg[4096];
    for (int t = 0; t < T; t++) {
        /* RoPE turned q and k; the gradient of the unturned ones turns back. */
        const float *cs = f->rope_cos + (size_t)t * (size_t)(hs / 2);
        const float *sn = f->rope_sin + (size_t)t * (size_t)(hs / 2);
        for (int j = 0; j < hs / 2; j++)
            neg[j] = -sn[j];
        float *gq = f->gq + (size_t)t * (size_t)dim, *gk = f->gk + (size_t)t * (size_t)kv;
        float *gv = f->gv + (size_t)t * (size_t)kv;
        llama_rope(gq, dim, hs, cs, neg);
        llama_rope(gk, kv, hs, cs, neg);
        add_squares(st->out[SLOT_WQ] + ld, gq, dim);
        add_squares(st->out[SLOT_WK] + lk, gk, kv);
        add_squares(st->out[SLOT_WV] + lk, gv, kv);
        const float *xa = L->xa + (size_t)t * (size_t)dim;
        add_squares(st->sum[SLOT_WQ] + ld, xa, dim);
        add_squares(st->sum[SLOT_WK] + ld, xa, dim);
        add_squares(st->sum[SLOT_WV] + ld, xa, dim);
        float *gxa = f->gtmp;
        memset(gxa, 0, (size_t)dim * 4);
        matmul_back(m->w[SLOT_WQ][l], gq, dim, dim, gxa);
        matmul_back(m->w[SLOT_WK][l], gk, dim, kv, gxa);
        matmul_back(m->w[SLOT_WV][l], gv, dim, kv, gxa);
        rmsnorm_back(L->x_in + (size_t)t * (size_t)dim, m->rms_att[l], L->ra[t], gxa, dim,
                     f->gx + (size_t)t * (size_t)dim);
    }
}

int llama_slot_input(int slot)
{
    switch (slot) {
    case SLOT_WQ: case SLOT_WK: case SLOT_WV: return INPUT_ATTENTION;
    case SLOT_WO: return INPUT_WO;
    case SLOT_W1: case SLOT_W3: return INPUT_FFN;
    default: return INPUT_W2;
    }
}

int llama_input_owner(int input)
{
    static const int owner[INPUT_COUNT] = {SLOT_WQ, SLOT_WO, SLOT_W1, SLOT_W2};
    return owner[input];
}

int llama_input_size(const llama_config *c, int input)
{
    return input == INPUT_W2 ? c->hidden : c->dim;
}

/* h[i][j] += sum over t of x_t[i] x_t[j] for j >= i, the T rows of x (n values each) in
 * order; the diagonal gets the same sums, in the same order, as add_squares. */
static void add_outer(double *h, const float *x, int T, int n)
{
    for (int t = 0; t < T; t++) {
        const float *v = x + (size_t)t * (size_t)n;
        for (int i = 0; i < n; i++) {
            const double vi = v[i];
            double *row = h + (size_t)i * (size_t)n;
            for (int j = i; j < n; j++)
                row[j] += vi * v[j];
        }
    }
}

/* The second moments of the sequence's matrix inputs, from the forward pass's cache. */
static void add_hessians(const fisher_pass *f, llama_act_stats *st)
{
    const llama_config *c = &f->m->c;
    for (int l = 0; l < c->layers; l++) {
        const layer_cache *L = &f->layers[l];
        const float *inputs[INPUT_COUNT] = {L->xa, L->xo, L->xb, L->hh};
        for (int in = 0; in < INPUT_COUNT; in++) {
            const size_t n = (size_t)llama_input_size(c, in);
            add_outer(st->hessian[in] + (size_t)l * n * n, inputs[in], f->T, (int)n);
        }
    }
    add_outer(st->classifier_hessian, f->xf, f->T, c->dim);
}

static void backward(fisher_pass *f, llama_act_stats *st)
{
    const llama_model *m = f->m;
    const llama_config *c = &m->c;
    const int dim = c->dim, T = f->T;
    memset(f->gx, 0, (size_t)T * (size_t)dim * 4);
    for (int t = 0; t < T; t++) {
        float *p = f->p + (size_t)t * (size_t)c->vocab; /* becomes dL/dlogits */
        p[f->tokens[t + 1]] -= 1.0f;
        add_squares(st->classifier_out, p, c->vocab);
        add_squares(st->classifier, f->xf + (size_t)t * (size_t)dim, dim);
        float *gxf = f->gtmp;
        memset(gxf, 0, (size_t)dim * 4);
        matmul_back(m->classifier, p, dim, c->vocab, gxf);
        rmsnorm_back(f->x_last + (size_t)t * (size_t)dim, m->rms_final, f->rf[t], gxf, dim,
                     f->gx + (size_t)t * (size_t)dim);
    }
    for (int l = c->layers - 1; l >= 0; l--)
        layer_back(f, l, st);
    /* The token embedding as a lookup: row tokens[t] is what position t read. */
    for (int t = 0; t < T; t++) {
        double g2 = 0;
        for (int j = 0; j < dim; j++)
            g2 += (double)f->gx[(size_t)t * (size_t)dim + (size_t)j] * f->gx[(size_t)t * (size_t)dim + (size_t)j];
        st->lookup_out[f->tokens[t]] += g2 / dim;
    }
    st->tokens += (uint64_t)T;
}

int eval_fisher_collect(const llama_model *m, uint64_t seed, int sequences, int length,
                        llama_act_stats *st)
{
    if (length > m->c.seq_len || m->c.dim > 4096)
        return -1;
    fisher_pass f;
    int rc = pass_create(&f, m, length);
    for (int k = 0; rc == 0 && k < sequences; k++) {
        eval_rng rng;
        eval_rng_seed(&rng, seed, (uint64_t)k);
        forward(&f, &rng);
        if (st->classifier_hessian)
            add_hessians(&f, st);
        backward(&f, st);
    }
    pass_free(&f);
    return rc;
}
