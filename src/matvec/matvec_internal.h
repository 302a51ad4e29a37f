/* The contract between the public matvec entry points (matvec/matvec.c) and the matvec
 * kernels: the plan, the activations as the kernels read them, and the kernel table that
 * every kernel set fills (the scalar oracle, matvec/matvec_scalar.c, is one of them). Arguments are
 * checked before any kernel runs; kernels never fail and allocate nothing.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_MATVEC_INTERNAL_H
#define SGFP4_MATVEC_INTERNAL_H

#include <float.h>
#include <stdbool.h>

#include "common/cpu.h"
#include "container/tensor.h"

/* D8 asks for every operation in binary32, rounded once: no wider evaluation (x87). */
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "libsgfp4's matrix-vector products need FLT_EVAL_METHOD == 0 (binary32 arithmetic)"
#endif

#define SGFP4_MATVEC_CELLS 16u /* 4-column cells in a macroblock row */

/* The leaves of one v2 block as the plan's table lists them (matvec/matvec_plan.c): entries
 * [first, first + the counts' sum) of the table, grouped by kind (2 * size class + mode,
 * kind 0 = 4x4 FP4 first), each kind in storage order. Empty for the records the kernels
 * read without it (UNIFORM_8 records of FP4 leaves only, UNIFORM_64 FP4 records). */
typedef struct sgfp4_matvec_block_leaves {
    uint32_t first;
    uint16_t count_4x4[2]; /* kinds 0 and 1 (up to 256 leaves) */
    uint8_t count[8];      /* kinds 2..9 */
} sgfp4_matvec_block_leaves;

/* A table entry: the leaf's position (y / 4 << 4 | x / 4), its index in storage order (its
 * header is the record's header number `index`), its payload's offset from the record's
 * start in 16-byte units. */
#define SGFP4_MATVEC_ENTRY(pos, index, payload16) ((uint32_t)(pos) | (uint32_t)(index) << 8 | (uint32_t)(payload16) << 16)
static inline unsigned sgfp4_matvec_entry_y(uint32_t e) { return (e >> 4 & 15u) * 4u; }
static inline unsigned sgfp4_matvec_entry_x(uint32_t e) { return (e & 15u) * 4u; }
static inline unsigned sgfp4_matvec_entry_index(uint32_t e) { return e >> 8 & 255u; }
static inline unsigned sgfp4_matvec_entry_payload(uint32_t e) { return (e >> 16) * 16u; }

/* Whether the kernels read v2 record b without the table: UNIFORM_8 with FP4 leaves only,
 * or UNIFORM_64 with an FP4 leaf (from the view's copy of the layouts and modes). */
static inline bool sgfp4_matvec_record_is_direct(const sgfp4_tensor *t, uint64_t b)
{
    const unsigned layout = sgfp4_record_layout(t, b);
    return (layout == SGFP4_LAYOUT_UNIFORM_64 || layout == SGFP4_LAYOUT_UNIFORM_8) &&
           sgfp4_record_all_fp4(t, b);
}

/* The plan: the tensor and, for v2 tensors, the leaf table the kernels read instead of
 * walking each record's split map on every product (docs/matvec.md, "The plan"). */
struct sgfp4_matvec_plan {
    const sgfp4_tensor *tensor;
    const sgfp4_matvec_block_leaves *blocks; /* v2: one per block; NULL for v1 */
    const uint32_t *entries;
    uint64_t entry_count;
    /* the entries of the records the table leaves out, which are the same in every block:
     * UNIFORM_8 FP4 (64 leaves in raster order) and UNIFORM_64 FP4 */
    uint32_t uniform8_entries[64];
    uint32_t uniform64_entry;
    /* where the fastest kernel set reads it: the repacked layout (matvec/repack.h; v1 and
     * v2); NULL otherwise */
    const uint8_t *repack;
    const uint64_t *repack_offset; /* per block, from repack */
    size_t repack_bytes;
    void *repack_alloc;
    size_t bytes; /* memory this plan holds */
};

/* sgfp4_matvec_plan_create with the repacked layout built (both profiles) or not, whichever
 * kernel set is the fastest here (the tests run the sets on both kinds of plan). */
sgfp4_status sgfp4_matvec_plan_create_with(const sgfp4_tensor *tensor, bool repack,
                                           sgfp4_matvec_plan **out);

/* Block b of a v2 tensor as the kernels walk it: its record, where its leaf headers start,
 * its leaves per kind and their entries (kind 0 first). */
typedef struct sgfp4_matvec_block_view {
    const uint8_t *rec, *headers;
    const uint32_t *entries;
    unsigned count[10]; /* per kind (SGFP4_LEAF_KINDS) */
    unsigned leaves;
} sgfp4_matvec_block_view;

static inline void sgfp4_matvec_block_view_get(const sgfp4_matvec_plan *plan, uint64_t b,
                                               sgfp4_matvec_block_view *v)
{
    const sgfp4_tensor *t = plan->tensor;
    v->rec = sgfp4_record_start(t, b);
    const unsigned layout = sgfp4_record_layout(t, b);
    v->headers = v->rec + sgfp4_record_headers_at(layout);
    for (unsigned k = 0; k < 10; k++)
        v->count[k] = 0;
    if (sgfp4_matvec_record_is_direct(t, b)) {
        const bool eight = layout == SGFP4_LAYOUT_UNIFORM_8;
        v->entries = eight ? plan->uniform8_entries : &plan->uniform64_entry;
        v->leaves = v->count[eight ? 2 : 8] = eight ? 64 : 1;
        return;
    }
    const sgfp4_matvec_block_leaves *bl = &plan->blocks[b];
    v->entries = plan->entries + bl->first;
    v->count[0] = bl->count_4x4[0];
    v->count[1] = bl->count_4x4[1];
    v->leaves = v->count[0] + v->count[1];
    for (unsigned k = 2; k < 10; k++)
        v->leaves += v->count[k] = bl->count[k - 2];
}

/* Class A (q8) activations: vector n starts at data + n * vector_bytes; its q for block b at
 * + b * 64 (int8), its block scales d at + tiles_x * 64 (float32, 0 or 2^e). */
static inline size_t sgfp4_q8_vector_bytes(uint64_t tiles_x)
{
    return (size_t)((tiles_x * 68u + 63u) & ~(uint64_t)63u);
}

/* The activations of one product call, as the kernels read them. */
typedef struct sgfp4_matvec_x {
    const uint8_t *data;
    size_t vector_bytes; /* bytes from one vector to the next */
    sgfp4_dtype dtype;   /* Class B: F32 or F16 (Class A: unused) */
    unsigned batch;      /* 1..SGFP4_MATVEC_MAX_BATCH */
} sgfp4_matvec_x;

static inline const int8_t *sgfp4_q8_q(const sgfp4_matvec_x *x, unsigned n)
{
    return (const int8_t *)(x->data + n * x->vector_bytes);
}

/* Block scale d_b of vector n (the layout is little-endian float32). */
static inline float sgfp4_q8_d(const sgfp4_matvec_x *x, unsigned n, uint64_t tiles_x,
                               uint64_t b)
{
    return sgfp4_bits_to_float(
        sgfp4_load_u32le(x->data + n * x->vector_bytes + tiles_x * 64u + 4u * b));
}

/* Where the results go: y[n * stride + (r - row_begin)] for the call's first row. */
typedef struct sgfp4_matvec_y {
    float *base; /* the result of row_begin for vector 0 */
    size_t stride;
    uint64_t row_begin;
} sgfp4_matvec_y;

/* One kernel set. Each function computes rows [r0, r1) of the plan's tensor, all inside
 * macroblock row r0 / 64 (the unit the fast kernels list a block's leaves for), for every
 * vector of x, and writes them to y. */
typedef struct sgfp4_matvec_kernels {
    const char *name; /* "scalar", later "avx2", ... */
    void (*rows_q8)(const sgfp4_matvec_plan *plan, uint64_t r0, uint64_t r1,
                    const sgfp4_matvec_x *x, const sgfp4_matvec_y *y);
    void (*rows_float)(const sgfp4_matvec_plan *plan, uint64_t r0, uint64_t r1,
                       const sgfp4_matvec_x *x, const sgfp4_matvec_y *y);
    /* Quantizes vector `in` (cols elements of dtype F32/F16, already checked finite) into
     * q (tiles_x * 64 int8) and d (tiles_x float32), pad columns 0 (D8). */
    void (*quantize)(const void *in, sgfp4_dtype dtype, uint64_t cols, int8_t *q, uint8_t *d);
    /* whether its products read the plan's repacked layout where it has one (and
     * so whether sgfp4_matvec_plan_create builds it, for the fastest set) */
    bool reads_repack;
} sgfp4_matvec_kernels;

/* The scalar reference (matvec/matvec_scalar.c, matvec_quantize.c): the oracle of every
 * other kernel set. */
extern const sgfp4_matvec_kernels sgfp4_matvec_kernels_scalar;
/* Portable C on the shared strip loop (matvec/matvec_generic.c): every machine. */
extern const sgfp4_matvec_kernels sgfp4_matvec_kernels_generic;
#ifdef SGFP4_HAVE_X86_KERNELS
/* AVX-512 F/BW/DQ/VL with and without VNNI (matvec/avx512_*.h), AVX2 + FMA + F16C
 * (matvec/matvec_avx2.c): matvec_dispatch.c runs them only where the CPU has them. */
extern const sgfp4_matvec_kernels sgfp4_matvec_kernels_avx512vnni;
extern const sgfp4_matvec_kernels sgfp4_matvec_kernels_avx512;
extern const sgfp4_matvec_kernels sgfp4_matvec_kernels_avx2;
#endif
#ifdef SGFP4_HAVE_NEON_KERNELS
/* NEON with and without DotProd (matvec/neon_body.h). */
extern const sgfp4_matvec_kernels sgfp4_matvec_kernels_neondot;
extern const sgfp4_matvec_kernels sgfp4_matvec_kernels_neon;
#endif

/* The quantizer's floor: the binary32 bits of 2^-40 (a block maximum below it: d = 0). */
#define SGFP4_MATVEC_Q8_FLOOR ((uint32_t)(127 - 40) << 23)

/* e of a block maximum m >= 2^-40 (m: its magnitude bits): m = (1 + f) * 2^p with 1 + f in
 * [1, 2), and 127 * 2^(p - 6) = 1.984375 * 2^p covers m exactly when f <= 63/64 (mantissa
 * <= 0x7E0000); 127 * 2^(p - 7) < 2^p never does. Shared by every quantizer. */
static inline int sgfp4_matvec_block_exponent(uint32_t m)
{
    const int p = (int)(m >> 23) - 127;
    return (m & 0x7FFFFFu) <= 0x7E0000u ? p - 6 : p - 5;
}

/* The reference quantizer of one vector (matvec/matvec_quantize.c). */
void sgfp4_matvec_quantize_scalar(const void *in, sgfp4_dtype dtype, uint64_t cols, int8_t *q,
                                  uint8_t *d);

/* Activation j of a Class B / quantizer input vector, converted exactly to binary32. */
static inline float sgfp4_matvec_x_at(const void *in, sgfp4_dtype dtype, uint64_t j)
{
    const uint8_t *p = (const uint8_t *)in;
    if (dtype == SGFP4_DTYPE_F16)
        return sgfp4_half_to_float((uint16_t)sgfp4_load_u16le(p + 2 * j));
    return sgfp4_bits_to_float(sgfp4_load_u32le(p + 4 * j));
}

/* The threads a product runs on: `count` in all (1 = the calling thread), started per call
 * or, with a pool, the pool's (at most its own count). */
typedef struct sgfp4_matvec_threads {
    unsigned count;
    sgfp4_thread_pool *pool;
} sgfp4_matvec_threads;

/* Runs kernel set k on rows [row_begin, row_end) for every vector of x, on `threads`, in
 * the default floating-point environment: what the public product calls do once their
 * arguments are checked (matvec/matvec.c). Any thread count, pool or not, gives the same
 * bits: every row is computed alone. */
void sgfp4_matvec_run(const sgfp4_matvec_plan *plan, const sgfp4_matvec_kernels *k,
                      bool class_a, const sgfp4_matvec_x *x, const sgfp4_matvec_y *y,
                      uint64_t row_begin, uint64_t row_end, sgfp4_matvec_threads threads);

/* Kernel sets (matvec/matvec_dispatch.c). The fastest this CPU runs. */
const sgfp4_matvec_kernels *sgfp4_matvec_kernels_best(void);
/* Every kernel set this build and CPU run, the scalar reference first, into out[0..cap);
 * returns the count (tests run every one against the reference). */
unsigned sgfp4_matvec_kernel_sets(const sgfp4_matvec_kernels **out, unsigned cap);
/* The kernel set called `name` if this CPU runs it, else NULL. */
const sgfp4_matvec_kernels *sgfp4_matvec_kernels_named(const char *name);
/* The kernels a backend selects (NULL: unknown, or it cannot run here). *known is set false
 * for a value that is no sgfp4_backend at all. */
const sgfp4_matvec_kernels *sgfp4_matvec_kernels_for(sgfp4_backend backend, int *known);

#endif
