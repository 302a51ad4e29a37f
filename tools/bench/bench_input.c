/* The container a CPU benchmark times (bench_cpu.h).
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "bench_cpu.h"
#include "datagen/generator.h"

/* A synthetic container (malloc'ed) of shape rows x cols: random codes near --bpw
 * (--codes random), or an LLM-like tensor encoded at --bpw. Describes it in source[]; NULL
 * after reporting an error. */
static uint8_t *synthetic(const cli_args *a, uint64_t rows, uint64_t cols, sgfp4_profile profile,
                          size_t *size, char *source, size_t source_size)
{
    if (a->random_codes) {
        gen_params p = gen_shape_params(profile, rows, cols);
        p.halves = GEN_HALVES_LLM;
        p.target_bpw = profile == SGFP4_PROFILE_V2 ? a->bpw : 0;
        p.corners = 0;
        uint8_t *bytes = gen_container_bytes(&p, a->seed, size);
        if (!bytes)
            cli_error(a->command, "cannot build a %llux%llu synthetic container",
                      (unsigned long long)rows, (unsigned long long)cols);
        snprintf(source, source_size, "random codes in mixed layouts, seed %u", a->seed);
        return bytes;
    }
    float *weights = gen_llm_weights(rows, cols, a->seed);
    if (!weights)
        return cli_error(a->command, "out of memory"), NULL;
    sgfp4_encode_options eo;
    sgfp4_encode_options_init(&eo);
    eo.profile = profile;
    eo.target_bpw = a->bpw;
    eo.threads = a->threads;
    if (cli_verbosity > 0 && !a->given[KEY_JSON])
        fprintf(stderr, "sgfp4: bench: encoding a %llux%llu LLM-like tensor...\n",
                (unsigned long long)rows, (unsigned long long)cols);
    void *encoded = NULL;
    const sgfp4_status st = sgfp4_encode_alloc(weights, rows, cols, 0, &encoded, size, &eo, NULL);
    free(weights);
    if (st != SGFP4_OK)
        return cli_error(a->command, "encoding the synthetic tensor failed: %s",
                         sgfp4_status_str(st)),
               NULL;
    /* a copy the bench owns (sgfp4_free releases library memory; free() the copy) */
    uint8_t *owned = malloc(*size);
    if (owned)
        memcpy(owned, encoded, *size);
    else
        cli_error(a->command, "out of memory");
    sgfp4_free(encoded);
    snprintf(source, source_size, "LLM-like tensor encoded at %s, seed %u",
             profile == SGFP4_PROFILE_V1 ? "v1" : "the requested rate", a->seed);
    return owned;
}

int bench_input_open(cli_args *a, bench_input *in)
{
    memset(in, 0, sizeof *in);
    if (a->in && !a->given[KEY_SHAPE])
        return cli_usage_error(a->command, "--shape is required with a file");
    if (a->given[KEY_BPW] && (a->bpw < 2.0 || a->bpw > 10.0))
        return cli_usage_error(a->command, "--bpw wants a rate from 2 to 10");
    if (!a->given[KEY_SHAPE])
        a->rows = a->cols = 4096;
    if (a->in) {
        const int rc = cli_container_open(a, &in->c);
        if (rc >= 0)
            return rc;
        snprintf(in->source, sizeof in->source, "file %s", a->in);
        in->data = in->c.in.data;
        in->size = in->c.in.size;
        in->profile = in->c.profile;
        return -1;
    }
    in->profile = a->given[KEY_PROFILE] ? a->profile : SGFP4_PROFILE_V2;
    in->owned =
        synthetic(a, a->rows, a->cols, in->profile, &in->size, in->source, sizeof in->source);
    if (!in->owned)
        return CLI_EXIT_FAIL;
    sgfp4_diag diag;
    if (sgfp4_tensor_open(in->owned, in->size, in->profile, a->rows, a->cols, &in->c.tensor, NULL,
                          &diag) != SGFP4_OK) {
        cli_error(a->command, "synthetic container: %s", diag.message);
        bench_input_close(in);
        return CLI_EXIT_FAIL;
    }
    in->data = in->owned;
    return -1;
}

void bench_input_close(bench_input *in)
{
    cli_container_close(&in->c);
    free(in->owned);
    in->owned = NULL;
}
