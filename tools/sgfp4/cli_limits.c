/* The limits on model inputs (docs/cli.md, "Limits"): the command line's --max-* options
 * as the library's open options, the library's messages in the tool's words, and the
 * output-size check that verify and `decode --tensor` apply as model decode does.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "cli.h"

void cli_model_open_options(const cli_args *a, sgfp4_model_open_options *o)
{
    sgfp4_model_open_options_init(o);
    o->ignore_index_total_size = a->given[KEY_IGNORE_TOTAL_SIZE];
    if (a->max_header_bytes)
        o->limits.max_header_bytes = a->max_header_bytes;
    if (a->max_tensors)
        o->max_tensors = a->max_tensors;
    if (a->max_zstd_ratio)
        o->max_decompression_ratio = a->max_zstd_ratio;
    if (a->max_temp_space)
        o->max_temp_space_percent = a->max_temp_space;
    if (a->max_decompressed)
        o->max_decompressed_bytes = a->max_decompressed;
}

/* The library's option fields and the tool's options that set them. */
static const struct {
    const char *field, *option;
} option_of[] = {
    {"sgfp4_model_open_options.max_decompression_ratio", "--max-zstd-ratio"},
    {"sgfp4_model_open_options.max_temp_space_percent", "--max-temp-space"},
    {"sgfp4_model_open_options.max_decompressed_bytes", "--max-decompressed"},
    {"sgfp4_model_open_options.max_tensors", "--max-tensors"},
    {"sgfp4_model_write_options.max_output_elements", "--max-output-elements"},
    {"or another temp_dir", "or another TMPDIR"},
};

/* A LIMIT message without a field: the option that raises it, by the bound the message
 * names. The reader's fixed limits (a shape's rank, the address space) have no option: their
 * messages get none. */
static const char *option_for(const char *message)
{
    if (strstr(message, "header length ") || strstr(message, " header bytes") ||
        strstr(message, "index '"))
        return "--max-header-bytes";
    if (strstr(message, "reaches ") && strstr(message, " tensors"))
        return "--max-tensors";
    if (strstr(message, "decompressed"))
        return "--max-decompressed or --max-temp-space";
    return NULL;
}

const char *cli_diag_text(sgfp4_status status, const char *message, char *buf, size_t size)
{
    size_t used = 0;
    bool named = false;
    buf[0] = '\0';
    for (const char *m = message; *m && used + 1 < size;) {
        size_t k = 0, n = sizeof option_of / sizeof option_of[0];
        while (k < n && strncmp(m, option_of[k].field, strlen(option_of[k].field)) != 0)
            k++;
        if (k < n) {
            used += (size_t)snprintf(buf + used, size - used, "%s", option_of[k].option);
            m += strlen(option_of[k].field);
            named = true;
        } else {
            buf[used++] = *m++;
            buf[used] = '\0';
        }
        if (used >= size)
            used = size - 1;
    }
    const char *option = status == SGFP4_ERR_LIMIT && !named ? option_for(message) : NULL;
    if (option && used + 1 < size)
        snprintf(buf + used, size - used, " (%s raises it)", option);
    return buf;
}

int cli_check_output_elements(const cli_args *a, const sgfp4_model *m,
                              const sgfp4_model_tensor *only)
{
    uint64_t elements = 0, container_bytes = 0;
    const size_t n = only ? 1 : sgfp4_model_tensor_count(m);
    for (size_t k = 0; k < n; k++) {
        const sgfp4_model_tensor *t = only ? only : sgfp4_model_tensor_at(m, k);
        if (!t || !t->quant)
            continue;
        const uint64_t e = t->quant->rows * t->quant->cols; /* checked to fit by the open */
        elements = elements > UINT64_MAX - e ? UINT64_MAX : elements + e;
        container_bytes += t->nbytes;
    }
    const uint64_t per_byte = SGFP4_MODEL_DECODE_ELEMENTS_PER_BYTE;
    const uint64_t limit = a->max_output_elements ? a->max_output_elements
                           : container_bytes > UINT64_MAX / per_byte ? UINT64_MAX
                                                                     : container_bytes * per_byte;
    if (elements <= limit)
        return -1;
    const char *what = only ? "the tensor's container decodes" : "the quantized tensors decode";
    if (a->max_output_elements)
        return cli_error(a->command, "%s: %s to %llu elements, more than --max-output-elements "
                                     "%llu [LIMIT]", a->in, what, (unsigned long long)elements,
                         (unsigned long long)limit);
    return cli_error(a->command, "%s: %s to %llu elements, more than the default limit of %llu "
                                 "(%llu per byte of %llu container bytes, far above what an "
                                 "encoder writes; --max-output-elements raises it) [LIMIT]",
                     a->in, what, (unsigned long long)elements, (unsigned long long)limit,
                     (unsigned long long)per_byte, (unsigned long long)container_bytes);
}
