/* sgfp4-eval: a model-level quality benchmark (docs/eval.md). A llama2.c-architecture forward
 * pass on the library's model API compares quantized weights with the float32 model they came
 * from: mean KL divergence of the next-token distributions, top-1 agreement, perplexity of
 * float32-sampled text, and how long greedy text stays the same.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_EVAL_H
#define SGFP4_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include "sgfp4.h"
#include "sgfp4_model.h"

/* ---- weights: every tensor of a model as float32 (weights.c) ---- */

typedef struct eval_tensor {
    char *name;
    uint64_t rows, cols; /* the 2-D view [prod(leading dims), last dim]; vectors: 1 x n */
    int rank;
    float *data;         /* rows * cols floats */
    uint64_t container_bytes; /* a quantized tensor of a D6 model: its container's size */
} eval_tensor;

typedef struct eval_weights {
    eval_tensor *tensors;
    size_t count;
    char **meta_keys, **meta_values; /* the file's __metadata__ (not copied by a copy) */
    size_t meta_count;
} eval_weights;

/* Reads every float tensor of a safetensors model; quantized tensors of a D6 model are
 * decoded through the library (strictly opened, hash-checked). Returns 0 or prints why not. */
int eval_weights_load(const char *path, eval_weights *out, char **config_json);
/* Reads an importance file (docs/encoder.md) for a benchmark that evaluates on `sequences`
 * sequences sampled with `seed`: refused, saying why, when the file records calibration text
 * that sgfp4-eval sampled from any of the same random streams (the text would be calibrated
 * on and evaluated). */
int eval_importance_load(const char *path, uint64_t seed, int sequences, eval_weights *out);
/* A deep copy (so a candidate can replace tensors). */
int eval_weights_copy(const eval_weights *src, eval_weights *dst);
void eval_weights_free(eval_weights *w);
eval_tensor *eval_weights_find(const eval_weights *w, const char *name);
/* The value of metadata key `key`, or NULL. */
const char *eval_weights_metadata(const eval_weights *w, const char *key);
/* The input Hessian of matrix `name` in an importance file: the tensor NAME:hessian, or the
 * tensor that the metadata alias NAME:hessian names; NULL if neither. */
const eval_tensor *eval_hessian_find(const eval_weights *importance, const char *name);

/* ---- the llama2.c forward pass (llama.c) ---- */

typedef struct llama_config {
    int dim, hidden, layers, heads, kv_heads, vocab, seq_len;
} llama_config;

/* The matrices of a layer. */
enum { SLOT_WQ, SLOT_WK, SLOT_WV, SLOT_WO, SLOT_W1, SLOT_W2, SLOT_W3, SLOT_COUNT };

typedef struct llama_model {
    llama_config c;
    const float *tok_embeddings, *rms_final, *classifier;
    const float **rms_att, **rms_ffn;
    const float **w[SLOT_COUNT]; /* [slot][layer] */
} llama_model;

/* The input vectors of a layer's matrices: wq, wk and wv read the same one, so do w1 and w3. */
enum { INPUT_ATTENTION, INPUT_WO, INPUT_FFN, INPUT_W2, INPUT_COUNT };
/* Which input a matrix reads, and the matrix whose name its shared statistics are kept under
 * (the first of the matrices that read it). */
int llama_slot_input(int slot);
int llama_input_owner(int input);
/* The length of an input vector. */
int llama_input_size(const llama_config *c, int input);

/* The Fisher factors of every matrix, and the second moments of every input, summed over
 * the calibration tokens (fisher.c). */
typedef struct llama_act_stats {
    double *sum[SLOT_COUNT];  /* inputs: sum of x_j^2, [layer * in_dim + j] */
    double *out[SLOT_COUNT];  /* outputs: sum of (dL/dy_i)^2, [layer * out_dim + i] */
    double *classifier;       /* [dim]: the classifier's inputs */
    double *classifier_out;   /* [vocab]: dL/dlogit squared */
    double *lookup_out;       /* [vocab]: the embedding row read, its gradient's mean square */
    /* Sums of x x^T, upper triangle (j >= i) of [layer][n][n] per input; NULL: not kept. */
    double *hessian[INPUT_COUNT];
    double *classifier_hessian; /* [dim][dim], upper triangle; NULL: not kept */
    uint64_t tokens;
} llama_act_stats;

typedef struct llama_state llama_state;

/* Config from the model's "config" metadata (llama2.c names), completed from the shapes. */
int llama_config_read(const char *config_json, const eval_weights *w, llama_config *c);
/* Points m at the tensors of w (llama2.c model.py names); 0 or prints what is missing. */
int llama_bind(const llama_config *c, const eval_weights *w, llama_model *m);
llama_state *llama_state_create(const llama_config *c);
void llama_state_free(llama_state *s);
/* One step: token at position pos (0-based, < seq_len); returns the logits (vocab floats,
 * valid until the next call). */
const float *llama_forward(const llama_model *m, llama_state *s, int token, int pos);
/* Samples `sequences` sequences of `length` tokens from the model (seed) and adds their
 * Fisher factors to *st (whose arrays are zeroed by the caller). */
int eval_fisher_collect(const llama_model *m, uint64_t seed, int sequences, int length,
                        llama_act_stats *st);

/* The forward pass's operations, shared with the Fisher pass (fisher.c). */
/* out = weight * x / rms(x) (eps 1e-5); returns 1 / rms(x). out may be x. */
float llama_rmsnorm(float *out, const float *x, const float *weight, int n);
/* out[rows] = W[rows x n] x[n]. */
void llama_matmul(float *out, const float *x, const float *w, int n, int rows);
void llama_softmax(float *x, int n);
/* Turns pair (2j, 2j+1) of every head of vec[n] by the angle whose cos / sin are cs[j] /
 * sn[j]; a negated sn turns back. */
void llama_rope(float *vec, int n, int head_size, const float *cs, const float *sn);
/* The RoPE cos / sin of position pos: head_size / 2 values each. */
void llama_rope_angles(int head_size, int pos, float *cs, float *sn);

/* ---- tokenizer (tokenizer.c): llama2.c's tok*.bin, decoding only ---- */

typedef struct eval_tokenizer {
    int vocab;
    char **pieces;
} eval_tokenizer;

int eval_tokenizer_load(const char *path, int vocab, eval_tokenizer *t);
void eval_tokenizer_free(eval_tokenizer *t);
/* Appends the text of `tokens` (as llama2.c prints it) to buf (NUL-terminated). */
void eval_tokenizer_text(const eval_tokenizer *t, const int *tokens, int count, char *buf,
                         size_t cap);

/* ---- deterministic random numbers (sample.c) ---- */

typedef struct eval_rng {
    uint64_t state;
} eval_rng;

void eval_rng_seed(eval_rng *r, uint64_t seed, uint64_t stream);
/* Whether a stream k_a < count_a of seed_a starts in the same state as a stream
 * k_b < count_b of seed_b (the same draws, so the same sampled text). */
int eval_streams_overlap(uint64_t seed_a, uint64_t count_a, uint64_t seed_b, uint64_t count_b);
double eval_rng_uniform(eval_rng *r); /* [0, 1) */
/* Draws a token from softmax(logits) (temperature 1). */
int eval_sample(const float *logits, int vocab, eval_rng *r);
int eval_argmax(const float *logits, int vocab);
/* log-softmax of logits into out (double precision). */
void eval_log_softmax(const float *logits, int vocab, double *out);

/* ---- baselines (baselines.c): labeled reimplementations, applied in place ---- */

/* Q4_0-style: groups of 32 consecutive weights of a row, scale = the signed absolute
 * maximum / -8 stored as fp16, codes 0..15 around 8. MLX-style affine: groups of `group`
 * weights of a row, `bits`-bit unsigned codes, fp16 scale and bias; the edge of larger
 * magnitude is exactly representable. */
typedef enum baseline_kind { BASELINE_Q4_0, BASELINE_AFFINE } baseline_kind;

typedef struct baseline {
    baseline_kind kind;
    int bits, group; /* affine */
} baseline;

/* One group's parameters: as fitted, and as stored. */
typedef struct baseline_params {
    float scale, inverse, bias, stored_scale, stored_bias;
} baseline_params;

/* Weights per group along a row. */
int baseline_group(const baseline *b);
/* The parameters of the group x[0..n) (n <= the group size). */
void baseline_fit(const baseline *b, const float *x, uint64_t n, baseline_params *p);
/* The decoded value that x quantizes to with a group's parameters (codes clipped). */
float baseline_value(const baseline *b, const baseline_params *p, float x);
/* The bits a rows x cols matrix takes: whole groups, a row's last one padded. */
double baseline_bits(const baseline *b, uint64_t rows, uint64_t cols);
/* Round to nearest, group by group, in place. Returns the bits used. */
double baseline_quantize(const baseline *b, float *w, uint64_t rows, uint64_t cols);

/* ---- GPTQ (gptq.c): the baselines with error feedback ---- */

/* What GPTQ needs of an input's Hessian H = E[x x^T] (n x n): the upper Cholesky factor U of
 * (H + damp * mean(diag H) * I)^-1, and the inputs that are never active (H_jj = 0). */
typedef struct gptq_factor {
    uint64_t n;
    double *u;           /* n x n, row-major, upper triangle */
    unsigned char *dead; /* n */
} gptq_factor;

/* Factors h (n x n floats, symmetric). 0, or -1 with a message naming `name`. */
int gptq_factor_create(const float *h, uint64_t n, double damp, const char *name,
                       gptq_factor *f);
void gptq_factor_free(gptq_factor *f);
/* Quantizes w (rows x cols, cols == f->n) in place with b's groups, column by column with
 * GPTQ's error feedback along each row. Returns the bits used. */
double gptq_quantize(const baseline *b, const gptq_factor *f, float *w, uint64_t rows,
                     uint64_t cols);

/* ---- the benchmark (reference.c, score.c, candidate.c, imatrix.c) ---- */

/* What the float32 model does: sampled sequences with its log-probabilities, and greedy
 * text, from BOS and from a prompt of each sequence. */
typedef struct eval_reference {
    int sequences, length;   /* tokens per sequence, BOS first */
    int *tokens;             /* [sequences][length] */
    float *logp;             /* [sequences][length - 1][vocab] */
    int greedy_steps;
    int *greedy;             /* [greedy_steps + 1]: BOS, then greedy tokens */
    int prompt, continuation;
    int *prompted;           /* [sequences][continuation]: greedy after each prompt */
} eval_reference;

typedef struct eval_run {
    const llama_model *model;
    int threads;
} eval_run;

/* Runs fn(ctx, item, state) for every item in [0, count) on run->threads threads, each
 * with its own forward-pass state. Returns -1 when out of memory. */
int eval_parallel(const eval_run *run, int count, void (*fn)(void *, int, llama_state *),
                  void *ctx);

/* Samples `sequences` sequences of `length` tokens from BOS at temperature 1 (seed), keeps
 * the model's log-probabilities and greedy continuations. */
int eval_reference_build(const eval_run *run, uint64_t seed, int sequences, int length,
                         int greedy_steps, int prompt, int continuation, eval_reference *ref);
void eval_reference_free(eval_reference *ref);
/* Greedy decoding of `steps` tokens after tokens[0..count): out[0..steps). */
void eval_greedy(const llama_model *m, llama_state *s, const int *tokens, int count, int steps,
                 int *out);

typedef struct eval_score {
    double mean_kl, top1, perplexity;
    int greedy_match;            /* tokens of the BOS greedy text equal before the first miss */
    double prompted_match;       /* mean of the same over the prompts */
    double *sequence_kl;         /* [sequences] */
} eval_score;

/* Scores a model against the reference (teacher-forced on the sampled sequences). */
int eval_score_model(const eval_run *run, const eval_reference *ref, eval_score *score);

/* The importance file: for every matrix NAME, the mean squared input activation per column
 * (key NAME) and the mean squared loss gradient per output row (key NAME:rows), over text
 * sampled from the model (fisher.c), as F32 vectors in a safetensors file written into
 * `out` (a WRITE model output opened before any work) and committed. 0, or -1 said why. */
int eval_imatrix_write(const eval_run *run, const llama_config *c, uint64_t seed,
                       int sequences, int length, sgfp4_model_output *out, const char *path);

/* Opens the output `path` of sgfp4-eval for a safetensors file (sgfp4_model_output_open,
 * WRITE: the library's output rules, with the files noted by eval_note_input as inputs and
 * `force` for -f); NULL, said why, when it is refused. */
sgfp4_model_output *eval_output_open(const char *path, int force);
/* Notes a file this run reads: no output may be it. */
void eval_note_input(const char *path);

/* --from-llama2c: writes the llama2.c checkpoint bin_path (legacy version 0) as a
 * safetensors model at out_path, by the output rules (an existing file only with `force`)
 * (convert.c). 0, or -1 said why. */
int eval_convert_llama2c(const char *bin_path, const char *out_path, int force);

/* A candidate: how the benchmark quantizes the chosen set of tensors (candidate.c). */
typedef enum eval_kind {
    KIND_F32, KIND_SGFP4, KIND_Q4_0, KIND_AFFINE, KIND_FILE
} eval_kind;

typedef struct eval_candidate {
    char label[96];
    eval_kind kind;
    /* SGFP4: options over the policy's decision; which of them the spec set */
    double bpw;
    int metric, fit, profile, policy, effort; /* -1: the policy's / library's default */
    double threshold;
    char importance[512];    /* an importance (imatrix) file, or "" */
    int importance_use;      /* 1: its column vectors, 2: its row vectors, 3: both */
    int equal;               /* 1: every tensor at the bits of baseline `like` */
    baseline like;
    int bits, group;         /* affine */
    char gptq[512];          /* q4_0, affine: GPTQ with this importance file's Hessians, or "" */
    char path[512];          /* file */
} eval_candidate;

/* Parses "sgfp4:bpw=4.5,metric=row", "sgfp4:equal=affine3", "q4_0", "q4_0:gptq=FILE",
 * "affine:bits=3,group=64", "f32", "file:PATH". */
int eval_candidate_parse(const char *spec, eval_candidate *c);

/* What building a candidate did to the set it quantized. */
typedef struct eval_quantized {
    eval_weights weights;    /* the whole model, the set's tensors replaced */
    uint64_t tensors, weights_in_set;
    double bits;             /* of the set's storage */
    double sse, norm;        /* squared error and squared norm over the set */
    double *attention_row_error; /* per-row relative error of attention matrices in the set */
    size_t attention_rows;
    double predicted_kl;     /* 1/2 sum of Fisher factors times squared errors, per token */
} eval_quantized;

/* Which tensors a candidate quantizes: "default" (the library's default policy), "all" (every
 * float matrix), or a policy file. */
typedef struct eval_set {
    const char *source_path; /* the float32 model */
    const char *selection;
    const eval_weights *fisher; /* an importance file to predict the KL by, or NULL */
    const char *fisher_path;    /* its name, for messages */
    uint64_t seed;              /* the evaluation text's sampling: importance files must */
    int sequences;              /* not come from the same random streams */
} eval_set;

int eval_candidate_build(const eval_candidate *c, const eval_set *set,
                         const eval_weights *reference, eval_quantized *out);
void eval_quantized_free(eval_quantized *q);

#endif
