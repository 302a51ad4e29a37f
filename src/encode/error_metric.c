/* The Laplacian-weighted error used by the reference mode choice and the threshold policy
 * (docs/encoder.md, "Error metrics"). With e = w - decoded over a size x size leaf:
 *     E_lap = sum_i e_i^2 + sum_{2x2 cells} ((e00 + e01 + e10 + e11) / 2)^2
 * The second term is the energy of the orthonormal Haar low band of the error: errors that
 * agree in sign over a neighbourhood (low-frequency structure) count up to twice, isolated
 * high-frequency errors count once.
 * SPDX-License-Identifier: MIT */
#include "encode/block_plan.h"
#include "encode/error_metric.h"
#include "encode/quantize.h"

double sgfp4_laplacian_error(const float *w, unsigned rows, unsigned cols,
                             const sgfp4_leaf_params *p, sgfp4_profile profile, float *scratch,
                             float *max_abs)
{
    (void)profile; /* the stored bias bits already carry the profile's masking */
    const unsigned n = rows * cols;
    const float s = sgfp4_half_to_float(p->scale), b = sgfp4_half_to_float(p->bias);
    float *e = scratch;
    sgfp4_quantize(w, n, p->mode, s, b, e);
    float worst = 0;
    double fine = 0;
    for (unsigned i = 0; i < n; i++) {
        const float product = s * e[i];
        e[i] = w[i] - (product + b);
        const float a = e[i] < 0 ? -e[i] : e[i];
        worst = a > worst ? a : worst;
        fine += (double)e[i] * e[i];
    }
    double coarse = 0;
    if (((rows | cols) & 1u) == 0) { /* whole cells only: every full leaf */
        for (unsigned y = 0; y < rows; y += 2)
            for (unsigned x = 0; x < cols; x += 2) {
                const double sum = (double)e[y * cols + x] + e[y * cols + x + 1] +
                                   e[(y + 1) * cols + x] + e[(y + 1) * cols + x + 1];
                coarse += sum * sum / 4.0;
            }
        if (max_abs)
            *max_abs = worst;
        return fine + coarse;
    }
    /* A cell cut by the edge of the valid part (odd rows or cols) sums the errors it has:
     * padding errors are zero, they are never seen. */
    for (unsigned y = 0; y < rows; y += 2)
        for (unsigned x = 0; x < cols; x += 2) {
            const int right = x + 1 < cols, below = y + 1 < rows;
            const float e01 = right ? e[y * cols + x + 1] : 0.0f;
            const float e10 = below ? e[(y + 1) * cols + x] : 0.0f;
            const float e11 = right && below ? e[(y + 1) * cols + x + 1] : 0.0f;
            const double sum = (double)e[y * cols + x] + e01 + e10 + e11;
            coarse += sum * sum / 4.0;
        }
    if (max_abs)
        *max_abs = worst;
    return fine + coarse;
}
