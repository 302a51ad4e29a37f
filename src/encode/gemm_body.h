/* One kernel set of encode/gemm.h, included once per set by gemm.c with:
 *   GEMM_SET       suffix of the functions' names; GEMM_NAME the set's name (a string)
 *   GEMM_TARGET    function attributes (a target), or nothing
 *   GEMM_FLOATS    float32 lanes per vector; GEMM_DOUBLES float64 lanes per vector
 * A tile is 4 rows of C by two vectors of columns, held in 8 accumulators; columns and rows
 * beyond the last whole tile are done one element at a time, in the same order.
 * SPDX-License-Identifier: MIT */
#define GEMM_GLUE2(a, b) a##b
#define GEMM_GLUE(a, b) GEMM_GLUE2(a, b)
#define GEMM_VF GEMM_GLUE(gemm_vf_, GEMM_SET)
#define GEMM_VD GEMM_GLUE(gemm_vd_, GEMM_SET)

typedef float GEMM_VF __attribute__((vector_size(GEMM_FLOATS * 4), aligned(4), may_alias));
typedef double GEMM_VD __attribute__((vector_size(GEMM_DOUBLES * 8), aligned(8), may_alias));

/* GEMM_KERNEL(name, type, vector, lanes, op): the whole kernel for one element type; op is
 * + or - (how acc enters C). */
#define GEMM_KERNEL(name, T, V, LANES, OP)                                                     \
    static GEMM_TARGET void name(unsigned m, unsigned k, unsigned n, const T *a, size_t a_row, \
                                 size_t a_col, const T *b, size_t ldb, T *c, size_t ldc)       \
    {                                                                                          \
        const unsigned tile = 2 * (LANES);                                                     \
        unsigned i = 0;                                                                        \
        for (; i + 4 <= m; i += 4) {                                                           \
            const T *a0 = a + i * a_row, *a1 = a0 + a_row, *a2 = a1 + a_row, *a3 = a2 + a_row; \
            unsigned j = 0;                                                                    \
            for (; j + tile <= n; j += tile) {                                                 \
                V s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, t0 = {0}, t1 = {0}, t2 = {0},        \
                  t3 = {0};                                                                    \
                const T *bp = b + j;                                                           \
                for (unsigned p = 0; p < k; p++, bp += ldb) {                                  \
                    const V x = *(const V *)bp, y = *(const V *)(bp + (LANES));                \
                    const T e0 = a0[p * a_col], e1 = a1[p * a_col], e2 = a2[p * a_col],        \
                            e3 = a3[p * a_col];                                                \
                    s0 += e0 * x;                                                              \
                    t0 += e0 * y;                                                              \
                    s1 += e1 * x;                                                              \
                    t1 += e1 * y;                                                              \
                    s2 += e2 * x;                                                              \
                    t2 += e2 * y;                                                              \
                    s3 += e3 * x;                                                              \
                    t3 += e3 * y;                                                              \
                }                                                                              \
                T *c0 = c + i * ldc + j, *c1 = c0 + ldc, *c2 = c1 + ldc, *c3 = c2 + ldc;       \
                *(V *)c0 = *(V *)c0 OP s0;                                                     \
                *(V *)(c0 + (LANES)) = *(V *)(c0 + (LANES)) OP t0;                             \
                *(V *)c1 = *(V *)c1 OP s1;                                                     \
                *(V *)(c1 + (LANES)) = *(V *)(c1 + (LANES)) OP t1;                             \
                *(V *)c2 = *(V *)c2 OP s2;                                                     \
                *(V *)(c2 + (LANES)) = *(V *)(c2 + (LANES)) OP t2;                             \
                *(V *)c3 = *(V *)c3 OP s3;                                                     \
                *(V *)(c3 + (LANES)) = *(V *)(c3 + (LANES)) OP t3;                             \
            }                                                                                  \
            for (unsigned r = i; r < i + 4; r++)                                               \
                for (unsigned jj = j; jj < n; jj++) {                                          \
                    T acc = 0;                                                                 \
                    for (unsigned p = 0; p < k; p++)                                           \
                        acc += a[r * a_row + p * a_col] * b[p * ldb + jj];                     \
                    c[r * ldc + jj] = c[r * ldc + jj] OP acc;                                  \
                }                                                                              \
        }                                                                                      \
        for (; i < m; i++)                                                                     \
            for (unsigned jj = 0; jj < n; jj++) {                                              \
                T acc = 0;                                                                     \
                for (unsigned p = 0; p < k; p++)                                               \
                    acc += a[i * a_row + p * a_col] * b[p * ldb + jj];                         \
                c[i * ldc + jj] = c[i * ldc + jj] OP acc;                                      \
            }                                                                                  \
    }

GEMM_KERNEL(GEMM_GLUE(gemm_add_f32_, GEMM_SET), float, GEMM_VF, GEMM_FLOATS, +)
GEMM_KERNEL(GEMM_GLUE(gemm_sub_f64_, GEMM_SET), double, GEMM_VD, GEMM_DOUBLES, -)

static const sgfp4_gemm_kernels GEMM_GLUE(gemm_set_, GEMM_SET) = {
    GEMM_NAME, GEMM_GLUE(gemm_add_f32_, GEMM_SET),
    GEMM_GLUE(gemm_sub_f64_, GEMM_SET)};

#undef GEMM_KERNEL
#undef GEMM_VF
#undef GEMM_VD
#undef GEMM_GLUE
#undef GEMM_GLUE2
