/* Preparing an input's Hessian for the calibrated sweep (encode/hessian.h): checks, damping,
 * and the factorization H + lambda I = V V^T with V upper triangular, in float64, blocked by
 * 64 columns from the last block to the first (right-looking: each block's diagonal part is
 * factored, the rows above it solved, then every earlier block updated by one product of
 * encode/gemm.h). Every element is computed by the same operations in the same order
 * whatever the thread count: threads only split the rows of a step.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <string.h>

#include "common/alloc.h"
#include "common/diag.h"
#include "common/options.h"
#include "encode/gemm.h"
#include "encode/hessian.h"
#include "encode/simd.h"
#include "encode/team.h"

/* The largest dimension accepted: its float64 work is 2^49 bytes, beyond any machine today
 * but not beyond size_t arithmetic. */
#define MAX_DIM (UINT64_C(1) << 24)
/* Two elements H[i][j], H[j][i] may differ by this much, relative to sqrt(H[i][i] H[j][j])
 * (the largest |H[i][j]| a positive semidefinite matrix allows): sums of products taken in
 * another order differ by far less. */
#define SYMMETRY_TOLERANCE 1e-3

sgfp4_status sgfp4_hessian_options_init_sized(sgfp4_hessian_options *options, size_t size)
{
    sgfp4_hessian_options defaults;
    memset(&defaults, 0, sizeof defaults);
    defaults.damping = 0.01;
    return SGFP4_OPTIONS_INIT(sgfp4_hessian_options, options, size, &defaults);
}

uint64_t sgfp4_hessian_dim(const sgfp4_hessian *hessian) { return hessian ? hessian->dim : 0; }

void sgfp4_hessian_free(sgfp4_hessian *hessian)
{
    if (!hessian)
        return;
    const sgfp4_allocator allocator = hessian->allocator;
    sgfp4_free_with(&allocator, hessian->factor);
    sgfp4_free_with(&allocator, hessian->diagonal);
    sgfp4_free_with(&allocator, hessian);
}

/* The factorization's state: the float64 panels (the layout of hessian.h, V in place of Vu
 * and G) and the step in progress. */
typedef struct factor_job {
    const sgfp4_gemm_kernels *kernels;
    uint64_t dim;
    unsigned panels;
    double *v;
    double *t;          /* the current panel's rows above its diagonal block, transposed */
    unsigned c;         /* the panel being factored */
    float *out;         /* the result panels */
} factor_job;

static unsigned panel_width(uint64_t dim, unsigned c)
{
    return dim - (uint64_t)c * 64 < 64 ? (unsigned)(dim - (uint64_t)c * 64) : 64u;
}

/* Factors the w x w diagonal block of a panel (rows 64 apart) from its last column back.
 * Returns the first column whose pivot is not positive, or w when there is none. */
static unsigned factor_diagonal(double *b, unsigned w)
{
    for (unsigned x = w; x-- > 0;) {
        double s = b[x * 64 + x];
        for (unsigned m = x + 1; m < w; m++)
            s -= b[x * 64 + m] * b[x * 64 + m];
        if (!(s > 0))
            return x;
        const double d = sqrt(s);
        b[x * 64 + x] = d;
        for (unsigned j = 0; j < x; j++) {
            double acc = b[j * 64 + x];
            for (unsigned m = x + 1; m < w; m++)
                acc -= b[j * 64 + m] * b[x * 64 + m];
            b[j * 64 + x] = acc / d;
        }
    }
    return w;
}

/* Rows [64 item, ..) above panel c's diagonal block: V[j][block] solves V[j][block] D^T =
 * A[j][block] (D the factored diagonal block), eight rows a vector, in the transposed copy t
 * (which the update of the earlier panels reads), then written back into the panel. */
SGFP4_VECTOR_CLONES
static void solve_rows(void *ctx, uint64_t item, unsigned worker)
{
    (void)worker;
    const factor_job *f = ctx;
    const unsigned c0 = f->c * 64, w = panel_width(f->dim, f->c);
    double *p = f->v + sgfp4_hessian_panel(f->c);
    const double *d = p + (size_t)c0 * 64;
    const unsigned r0 = (unsigned)item * 64, r1 = r0 + 64 < c0 ? r0 + 64 : c0;
    for (unsigned x = 0; x < w; x++)
        for (unsigned j = r0; j < r1; j++)
            f->t[(size_t)x * c0 + j] = p[(size_t)j * 64 + x];
    for (unsigned x = w; x-- > 0;) {
        double *restrict tx = f->t + (size_t)x * c0;
        for (unsigned m = x + 1; m < w; m++) {
            const double *restrict tm = f->t + (size_t)m * c0;
            const double dxm = d[x * 64 + m];
            for (unsigned j = r0; j < r1; j++)
                tx[j] -= dxm * tm[j];
        }
        const double dxx = d[x * 64 + x];
        for (unsigned j = r0; j < r1; j++)
            tx[j] /= dxx;
    }
    for (unsigned x = 0; x < w; x++)
        for (unsigned j = r0; j < r1; j++)
            p[(size_t)j * 64 + x] = f->t[(size_t)x * c0 + j];
}

/* One 64-row chunk of an earlier panel c' < c: A[j][k'] -= sum over panel c's columns m of
 * V[j][m] V[k'][m]. Items enumerate (c', chunk) with chunk <= c'. */
static void update_chunk(void *ctx, uint64_t item, unsigned worker)
{
    (void)worker;
    const factor_job *f = ctx;
    unsigned target = 0;
    while (item > target) { /* panel c' has c' + 1 chunks */
        item -= target + 1;
        target++;
    }
    const unsigned c0 = f->c * 64, w = panel_width(f->dim, f->c);
    const unsigned r0 = (unsigned)item * 64;
    const double *p = f->v + sgfp4_hessian_panel(f->c);
    double *q = f->v + sgfp4_hessian_panel(target);
    f->kernels->sub_f64(64, w, 64, p + (size_t)r0 * 64, 64, 1, f->t + (size_t)target * 64, c0,
                        q + (size_t)r0 * 64, 64);
}

/* Panel c of the result: Vu above the diagonal block, then G_c (hessian.h). */
static void convert_panel(void *ctx, uint64_t item, unsigned worker)
{
    (void)worker;
    const factor_job *f = ctx;
    const unsigned c = (unsigned)item, c0 = c * 64, w = panel_width(f->dim, c);
    const double *p = f->v + sgfp4_hessian_panel(c);
    float *out = f->out + sgfp4_hessian_panel(c);
    double pivot[64], unit[64][64], g[64][64];
    for (unsigned x = 0; x < w; x++)
        pivot[x] = p[(size_t)(c0 + x) * 64 + x];
    for (unsigned j = 0; j < c0; j++)
        for (unsigned x = 0; x < 64; x++)
            out[(size_t)j * 64 + x] = x < w ? (float)(p[(size_t)j * 64 + x] / pivot[x]) : 0.0f;
    for (unsigned a = 0; a < w; a++)
        for (unsigned x = a + 1; x < w; x++)
            unit[a][x] = p[(size_t)(c0 + a) * 64 + x] / pivot[x];
    /* G = inverse of the unit upper block, column by column from its diagonal up. */
    for (unsigned x = 0; x < w; x++) {
        g[x][x] = 1.0;
        for (unsigned a = x; a-- > 0;) {
            double acc = 0;
            for (unsigned m = a + 1; m <= x; m++)
                acc -= unit[a][m] * g[m][x];
            g[a][x] = acc;
        }
    }
    for (unsigned a = 0; a < w; a++)
        for (unsigned x = 0; x < 64; x++)
            out[(size_t)(c0 + a) * 64 + x] = x < w && x >= a ? (float)g[a][x] : 0.0f;
}

/* Fills the float64 panels with (H + H^T) / 2 + lambda I, checking every value and pair. */
static sgfp4_status fill(const float *h, uint64_t dim, size_t stride, double lambda,
                         const sgfp4_hessian *out, double *v, sgfp4_diag *diag)
{
    for (unsigned c = 0; c < out->panels; c++) {
        const uint64_t c0 = (uint64_t)c * 64;
        const unsigned w = panel_width(dim, c);
        double *p = v + sgfp4_hessian_panel(c);
        for (uint64_t j = 0; j < c0 + w; j++)
            for (unsigned x = 0; x < w; x++) {
                const uint64_t k = c0 + x;
                const double a = h[j * stride + k], b = h[k * stride + j];
                if (j < k) {
                    if (!isfinite(a) || !isfinite(b))
                        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                                          "hessian: element [%llu][%llu] is not finite",
                                          (unsigned long long)(isfinite(a) ? k : j),
                                          (unsigned long long)(isfinite(a) ? j : k));
                    const double limit =
                        SYMMETRY_TOLERANCE * sqrt((double)out->diagonal[j] * out->diagonal[k]);
                    if (!(fabs(a - b) <= limit))
                        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                                          "hessian: not symmetric: [%llu][%llu] = %g but "
                                          "[%llu][%llu] = %g",
                                          (unsigned long long)j, (unsigned long long)k, a,
                                          (unsigned long long)k, (unsigned long long)j, b);
                }
                p[j * 64 + x] = j == k ? a + lambda : 0.5 * (a + b);
            }
    }
    return SGFP4_OK;
}

/* Factors the filled panels (job f); returns the column whose pivot failed, or dim. */
static uint64_t factor(factor_job *f, sgfp4_team *team)
{
    for (unsigned c = f->panels; c-- > 0;) {
        f->c = c;
        const unsigned w = panel_width(f->dim, c);
        const unsigned bad = factor_diagonal(f->v + sgfp4_hessian_panel(c) + (size_t)c * 4096, w);
        if (bad < w)
            return (uint64_t)c * 64 + bad;
        if (c == 0)
            break;
        sgfp4_team_run(team, c, solve_rows, f);
        sgfp4_team_run(team, (uint64_t)c * (c + 1) / 2, update_chunk, f);
    }
    return f->dim;
}

sgfp4_status sgfp4_hessian_create(const float *h, uint64_t dim, size_t stride,
                                  const sgfp4_hessian_options *options, sgfp4_hessian **out,
                                  sgfp4_diag *diag)
{
    sgfp4_diag_clear(diag);
    sgfp4_hessian_options o;
    if (out)
        *out = NULL;
    if (!h || !out || dim == 0)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "hessian: %s", dim == 0 ? "dimension 0" : "NULL argument");
    if (SGFP4_OPTIONS_READ(sgfp4_hessian_options, options, &o) != SGFP4_OK ||
        !(o.damping > 0 && o.damping <= 1000) || sgfp4_threads_resolve(o.threads) == 0)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "hessian: bad options");
    if (dim > MAX_DIM)
        return sgfp4_fail(diag, SGFP4_ERR_LIMIT, -1, -1, -1,
                          "hessian: dimension %llu is above 2^24", (unsigned long long)dim);
    if (stride == 0)
        stride = (size_t)dim;
    if (stride < dim)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "hessian: row stride %zu below the dimension %llu", stride,
                          (unsigned long long)dim);
    const sgfp4_allocator *alloc = &o.allocator;
    sgfp4_hessian *hs = sgfp4_alloc_with(alloc, sizeof *hs);
    if (!hs)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "hessian: out of memory");
    memset(hs, 0, sizeof *hs);
    hs->dim = dim;
    hs->panels = (unsigned)((dim + 63) / 64);
    hs->allocator = o.allocator;
    const size_t elements = sgfp4_hessian_elements(dim);
    hs->diagonal = sgfp4_alloc_with(alloc, (size_t)dim * sizeof(float));
    hs->factor = sgfp4_alloc_with(alloc, elements * sizeof(float));
    double *v = sgfp4_alloc_with(alloc, elements * sizeof(double));
    double *t = sgfp4_alloc_with(alloc, (size_t)dim * 64 * sizeof(double));
    const unsigned threads = sgfp4_threads_resolve(o.threads);
    sgfp4_team *team = sgfp4_team_create(threads, alloc, NULL, NULL);
    sgfp4_status s = SGFP4_OK;
    if (!hs->diagonal || !hs->factor || !v || !t || !team) {
        s = sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1,
                       "hessian: out of memory for a %llu x %llu factorization",
                       (unsigned long long)dim, (unsigned long long)dim);
        goto done;
    }
    double trace = 0;
    for (uint64_t j = 0; j < dim; j++) {
        const float d = h[j * stride + j];
        if (!isfinite(d) || d < 0) {
            s = sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                           "hessian: diagonal element [%llu][%llu] = %g is %s",
                           (unsigned long long)j, (unsigned long long)j, (double)d,
                           isfinite(d) ? "negative" : "not finite");
            goto done;
        }
        hs->diagonal[j] = d;
        trace += d;
    }
    if (!(trace > 0) || !isfinite(trace)) {
        s = sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                       "hessian: the diagonal is %s", trace > 0 ? "too large" : "all zero");
        goto done;
    }
    const double lambda = o.damping * (trace / (double)dim);
    s = fill(h, dim, stride, lambda, hs, v, diag);
    if (s != SGFP4_OK)
        goto done;
    factor_job f = {sgfp4_gemm_kernels_best(), dim, hs->panels, v, t, 0, hs->factor};
    const uint64_t bad = factor(&f, team);
    if (bad < dim) {
        s = sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                       "hessian: not positive semidefinite (the damped matrix has a "
                       "non-positive pivot at column %llu)",
                       (unsigned long long)bad);
        goto done;
    }
    sgfp4_team_run(team, hs->panels, convert_panel, &f);
done:
    sgfp4_team_free(team);
    sgfp4_free_with(alloc, v);
    sgfp4_free_with(alloc, t);
    if (s != SGFP4_OK) {
        sgfp4_hessian_free(hs);
        return s;
    }
    *out = hs;
    return SGFP4_OK;
}
