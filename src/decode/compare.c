/* How far a container's decoded tensor is from the weights it was made from: the error
 * statistics every tool reports (the CLI's encode summary and --against reports, the model
 * info table, the encoder benchmark), computed once, here.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <string.h>

#include "common/results.h"
#include "container/tensor.h"
#include "decode/bands.h"

typedef struct compare_job {
    const float *reference;
    size_t stride;
    uint64_t cols;
    sgfp4_quality *q;
} compare_job;

/* Row-major order, one element after the other: the sums do not depend on the band size. */
static sgfp4_status compare_band(void *context, uint64_t row_begin, uint64_t row_end,
                                 const float *band)
{
    const compare_job *j = context;
    sgfp4_quality *q = j->q;
    for (uint64_t r = row_begin; r < row_end; r++) {
        const float *ref = j->reference + r * j->stride;
        const float *dec = band + (r - row_begin) * j->cols;
        for (uint64_t c = 0; c < j->cols; c++) {
            if (!isfinite(dec[c]))
                q->nonfinite++;
            const double e = (double)ref[c] - dec[c];
            q->sse += e * e;
            q->reference_sq += (double)ref[c] * ref[c];
            const double a = e < 0 ? -e : e;
            if (a > q->max_abs)
                q->max_abs = a;
        }
    }
    return SGFP4_OK;
}

sgfp4_status sgfp4_tensor_compare(const sgfp4_tensor *tensor, const float *reference,
                                  size_t reference_stride, sgfp4_quality *quality,
                                  const sgfp4_decode_options *options)
{
    if (!tensor || !reference || !quality || !SGFP4_RESULT_KNOWN(sgfp4_quality, quality))
        return SGFP4_ERR_ARGUMENT;
    sgfp4_result_clear(quality);
    if (reference_stride == 0)
        reference_stride = (size_t)tensor->cols;
    if (reference_stride < tensor->cols)
        return SGFP4_ERR_ARGUMENT;
    sgfp4_quality q;
    memset(&q, 0, sizeof q);
    compare_job j = {reference, reference_stride, tensor->cols, &q};
    const sgfp4_status s = sgfp4_decode_bands(tensor, options, compare_band, &j);
    if (s != SGFP4_OK)
        return s;
    q.count = tensor->rows * tensor->cols;
    q.rmse = sqrt(q.sse / (double)q.count);
    q.rel_l2 = q.reference_sq > 0 ? sqrt(q.sse / q.reference_sq) : (q.sse > 0 ? INFINITY : 0.0);
    q.snr_db = q.sse > 0 ? 10.0 * log10(q.reference_sq / q.sse) : INFINITY;
    sgfp4_result_store(quality, &q);
    return SGFP4_OK;
}
