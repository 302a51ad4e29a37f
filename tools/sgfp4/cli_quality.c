/* `verify/info IN --shape OxI --against REF`: how far a container's decoded tensor is from
 * the weights it was made from, and where its bits went.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>

#include "cli_encode.h"

static const unsigned edges[SGFP4_LEAF_SIZES] = {64, 32, 16, 8, 4};

int cli_quality_report(const char *command, const sgfp4_tensor *t, const char *ref_path)
{
    sgfp4_tensor_info info;
    sgfp4_tensor_get_info(t, &info);
    uint64_t rows = info.rows, cols = info.cols;
    float *ref = cli_load_matrix(command, ref_path, &rows, &cols);
    if (!ref)
        return CLI_EXIT_FAIL;
    float *dec = cli_decode_f32(t, 1);
    if (!dec) {
        free(ref);
        return cli_error(command, "cannot decode (out of memory?)");
    }
    cli_quality q;
    cli_quality_measure(ref, dec, rows * cols, &q);
    free(ref);
    free(dec);
    const double rmse = sqrt(q.sse / (double)q.count);
    printf("against %s:\n", ref_path);
    printf("  bits per weight: %.4f\n", info.bits_per_weight);
    printf("  RMSE: %.6g\n", rmse);
    printf("  relative L2 error: %.6f\n", q.ref_sq > 0 ? sqrt(q.sse / q.ref_sq) : 0.0);
    printf("  max abs error: %.6g\n", q.max_abs);
    if (q.sse > 0 && q.ref_sq > 0)
        printf("  SNR: %.2f dB\n", 10.0 * log10(q.ref_sq / q.sse));
    else
        printf("  SNR: %s\n", q.sse > 0 ? "-inf dB" : "inf dB (exact)");
    /* Leaves cover the zero-padded grid, so shares are of the padded weights. */
    const double padded = (double)info.blocks * 4096.0;
    printf("  share of weights (padded grid) per leaf size and mode:\n");
    printf("    size       FP4      T158\n");
    for (int s = 0; s < SGFP4_LEAF_SIZES; s++) {
        const double area = (double)edges[s] * edges[s];
        printf("    %2ux%-2u  %7.2f%%  %7.2f%%\n", edges[s], edges[s],
               100.0 * (double)info.leaves_by_size_mode[s][0] * area / padded,
               100.0 * (double)info.leaves_by_size_mode[s][1] * area / padded);
    }
    return CLI_EXIT_OK;
}
