/* LLM-like weight matrices for benchmarks (see generator.h).
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>

#include "datagen/generator.h"

static double uniform01(gen_rng *r) { return ((double)(gen_next(r) >> 11) + 0.5) * 0x1p-53; }

static double normal(gen_rng *r) /* Box-Muller; one value per call is plenty here */
{
    return sqrt(-2.0 * log(uniform01(r))) * cos(6.283185307179586 * uniform01(r));
}

float *gen_llm_weights(uint64_t rows, uint64_t cols, uint64_t seed)
{
    if (rows == 0 || cols == 0 || rows > SIZE_MAX / sizeof(float) / cols)
        return NULL;
    float *w = malloc((size_t)(rows * cols) * sizeof *w);
    uint8_t *outlier = calloc((size_t)cols, 1);
    if (!w || !outlier) {
        free(w);
        free(outlier);
        return NULL;
    }
    gen_rng r = {seed ^ 0x5EEDu};
    for (uint64_t c = 0; c < cols; c++)
        outlier[c] = gen_next(&r) % 200 == 0;
    for (uint64_t i = 0; i < rows; i++) {
        const double row_scale = 0.02 * exp(0.3 * normal(&r));
        for (uint64_t c = 0; c < cols; c++) {
            double chi2 = 0;
            for (int k = 0; k < 4; k++) {
                const double z = normal(&r);
                chi2 += z * z;
            }
            const double t = normal(&r) / sqrt(chi2 / 4.0);
            w[i * cols + c] = (float)(row_scale * t * (outlier[c] ? 8.0 : 1.0));
        }
    }
    free(outlier);
    return w;
}
