/* How long opening a safetensors header of n tensors takes, against its ceiling: jansson
 * parsing the same header text and freeing the tree, which every open does and nothing in
 * the reader can make faster. CPU time of this process, the fastest of `runs` (default 5),
 * for each count given (default 10,000 and 100,000). The header lists its tensors in the
 * reverse of their data order, so the reader's sort has work to do.
 *   header_open_bench [N...]
 * SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sgfp4_model.h"
#include "tool_clock.h"

/* n F32 [1] tensors, keys in reverse data order. */
static unsigned char *make_file(size_t n, size_t *size, size_t *header)
{
    char *h = malloc(64 + n * 72), *p = h;
    *p++ = '{';
    for (size_t k = 0; k < n; k++) {
        const size_t at = n - 1 - k;
        p += sprintf(p, "%s\"t%07zu\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[%zu,%zu]}",
                     k ? "," : "", k, 4 * at, 4 * at + 4);
    }
    *p++ = '}';
    *header = (size_t)(p - h);
    *size = 8 + *header + 4 * n;
    unsigned char *f = calloc(1, *size);
    for (int k = 0; k < 8; k++)
        f[k] = (unsigned char)((unsigned long long)*header >> (8 * k));
    memcpy(f + 8, h, *header);
    free(h);
    return f;
}

int main(int argc, char **argv)
{
    size_t counts[16] = {10000, 100000}, ncounts = 2;
    if (argc > 1) {
        ncounts = 0;
        for (int i = 1; i < argc && ncounts < 16; i++)
            counts[ncounts++] = strtoul(argv[i], NULL, 10);
    }
    const int runs = 5;
    printf("%10s %12s %14s %14s %8s\n", "tensors", "header MB", "jansson s", "open s", "ratio");
    for (size_t c = 0; c < ncounts; c++) {
        size_t size, header;
        unsigned char *f = make_file(counts[c], &size, &header);
        double best_json = 1e30, best_open = 1e30;
        for (int r = 0; r < runs; r++) {
            double t0 = tool_cpu_now();
            json_t *root = json_loadb((const char *)f + 8, header, JSON_REJECT_DUPLICATES, NULL);
            json_decref(root);
            const double tj = tool_cpu_now() - t0;
            t0 = tool_cpu_now();
            sgfp4_model *m = NULL;
            sgfp4_diag diag;
            if (sgfp4_model_open_memory(f, size, &m, NULL, &diag) != SGFP4_OK) {
                fprintf(stderr, "open: %s\n", diag.message);
                return 1;
            }
            sgfp4_model_close(m);
            const double to = tool_cpu_now() - t0;
            best_json = tj < best_json ? tj : best_json;
            best_open = to < best_open ? to : best_open;
        }
        printf("%10zu %12.1f %14.4f %14.4f %8.2f\n", counts[c], (double)header / 1e6, best_json,
               best_open, best_open / best_json);
        free(f);
    }
    return 0;
}
