/* Restoring an ordinary safetensors model from a quantized one, streaming: each container is
 * validated and hash-checked, then decoded in bands of rows straight into the output, so
 * memory stays at one band (a few MB) whatever the tensor's size.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "common/options.h"
#include "model/model_internal.h"

#define BAND_BYTES ((size_t)16 << 20)

static sgfp4_st_dtype st_of(sgfp4_dtype d)
{
    return d == SGFP4_DTYPE_F16 ? SGFP4_ST_F16 : d == SGFP4_DTYPE_BF16 ? SGFP4_ST_BF16 : SGFP4_ST_F32;
}

/* The decoder's output dtype for a safetensors dtype: the 8-bit floats are rounded from
 * the float32 decode (sgfp4_st_narrow_f32). */
static sgfp4_dtype dtype_of(sgfp4_st_dtype st)
{
    return st == SGFP4_ST_F16 ? SGFP4_DTYPE_F16 : st == SGFP4_ST_BF16 ? SGFP4_DTYPE_BF16 : SGFP4_DTYPE_F32;
}

static sgfp4_status decode_one(const sgfp4_model *m, const sgfp4_model_tensor *t,
                               sgfp4_st_dtype out, const sgfp4_model_write_options *o,
                               sgfp4_st_writer *w, sgfp4_diag *diag)
{
    const sgfp4_dtype dt = dtype_of(out);
    sgfp4_status s = sgfp4_model_tensor_verify(m, t, diag);
    if (s != SGFP4_OK)
        return s;
    sgfp4_tensor *view = NULL;
    if ((s = sgfp4_model_tensor_open(m, t, &view, NULL, diag)) != SGFP4_OK)
        return s;
    const uint64_t rows = t->quant->rows, cols = t->quant->cols;
    const size_t row_bytes = (size_t)cols * sgfp4_dtype_size(dt);
    /* Bands are whole multiples of 64 rows (one macroblock row) where possible. */
    uint64_t band = BAND_BYTES / (row_bytes ? row_bytes : 1) / 64 * 64;
    if (band == 0)
        band = 1;
    if (band > rows)
        band = rows;
    uint8_t *buf = malloc((size_t)band * row_bytes);
    if (!buf)
        s = sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "tensor '%s': out of memory", t->name);
    for (uint64_t r = 0; s == SGFP4_OK && r < rows; r += band) {
        const uint64_t end = r + band < rows ? r + band : rows;
        const size_t bytes = (size_t)(end - r) * row_bytes;
        s = sgfp4_decode_rows(view, r, end, dt, buf, 0, bytes, o->decode);
        const size_t out_bytes = s == SGFP4_OK && out != st_of(dt)
                                     ? sgfp4_st_narrow_f32(out, buf, bytes / sizeof(float))
                                     : bytes;
        if (s == SGFP4_OK)
            s = sgfp4_st_writer_write(w, buf, out_bytes);
        if (s != SGFP4_OK)
            sgfp4_fail(diag, s, (int64_t)t->offset, -1, -1, "tensor '%s': rows %llu..%llu: %s",
                       t->name, (unsigned long long)r, (unsigned long long)end,
                       sgfp4_status_str(s));
    }
    free(buf);
    sgfp4_tensor_close(view);
    return s;
}

sgfp4_status sgfp4_model_decode_part(const sgfp4_model *m, const sgfp4_sink *out,
                                     const sgfp4_model_write_options *o, model_report *report,
                                     sgfp4_diag *diag)
{
    const sgfp4_sink counted = sgfp4_report_sink(report, out);
    const sgfp4_sink *sink = &counted;
    const size_t n = m->count;
    sgfp4_st_entry *entries = calloc(n ? n : 1, sizeof *entries);
    const char **keys = calloc(m->meta_count + 1, sizeof *keys);
    const char **values = calloc(m->meta_count + 1, sizeof *values);
    uint64_t *bytes_out = calloc(n ? n : 1, sizeof *bytes_out); /* per tensor, for reports */
    if (!entries || !keys || !values || !bytes_out) {
        free(entries);
        free(bytes_out);
        free(keys);
        free(values);
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_sorted(m, i);
        entries[i].name = t->name;
        if (t->quant) {
            entries[i].dtype = o->decode_dtype ? st_of(*o->decode_dtype) : t->quant->source_dtype;
            entries[i].rank = t->quant->original_rank;
            entries[i].shape = t->quant->original_shape;
        } else {
            entries[i].dtype = t->dtype;
            entries[i].rank = t->rank;
            entries[i].shape = t->shape;
        }
        uint64_t elements = 1;
        for (size_t d = 0; d < entries[i].rank; d++)
            elements *= entries[i].shape[d]; /* the manifest checked the product */
        if (sgfp4_st_dtype_bytes(entries[i].dtype, elements, &bytes_out[i]) != 0)
            bytes_out[i] = 0; /* the writer refuses such an entry */
    }
    size_t meta = 0;
    for (size_t k = 0; k < m->meta_count; k++)
        if (strcmp(m->meta_keys[k], "sgfp4") != 0) {
            keys[meta] = m->meta_keys[k];
            values[meta++] = m->meta_values[k];
        }
    sgfp4_st_writer *w = NULL;
    sgfp4_status s = sgfp4_st_writer_begin(entries, n, keys, values, meta, sink, &w, diag);
    for (size_t i = 0; s == SGFP4_OK && i < n; i++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_sorted(m, i);
        if (t->quant) {
            s = decode_one(m, t, entries[i].dtype, o, w, diag);
        } else if ((s = sgfp4_st_writer_write(w, t->data, (size_t)t->nbytes)) != SGFP4_OK) {
            sgfp4_fail(diag, s, -1, -1, -1, "tensor '%s': cannot write: %s", t->name,
                       sgfp4_status_str(s));
        }
        sgfp4_model_tensor_evict(m, t);
        if (s == SGFP4_OK)
            sgfp4_report_tensor(report, t,
                                &(sgfp4_model_tensor_report){.quantized = t->quant != NULL,
                                                             .bytes_out = bytes_out[i]});
    }
    if (s == SGFP4_OK)
        s = sgfp4_st_writer_finish(w, diag);
    sgfp4_st_writer_free(w);
    free(entries);
    free(bytes_out);
    free(keys);
    free(values);
    return s;
}

sgfp4_status sgfp4_model_decode_check(const sgfp4_model *m, const sgfp4_model_write_options *o,
                                      sgfp4_diag *diag)
{
    if (!m->quantized)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "the input is not a quantized model (no sgfp4 manifest)");
    if (o->decode_dtype && sgfp4_dtype_size(*o->decode_dtype) == 0)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "unknown output dtype");
    return SGFP4_OK;
}

sgfp4_status sgfp4_model_decode(const sgfp4_model *m, const sgfp4_sink *sink,
                                const sgfp4_model_write_options *given, sgfp4_diag *diag)
{
    sgfp4_diag_clear(diag);
    if (!m || !sink || !sink->write)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL argument");
    sgfp4_model_write_options o;
    sgfp4_status s = sgfp4_model_write_options_read(given, &o, diag);
    if (s == SGFP4_OK)
        s = sgfp4_model_decode_check(m, &o, diag);
    if (s == SGFP4_OK)
        s = sgfp4_model_check_one_file(m, diag);
    if (s != SGFP4_OK)
        return s;
    model_report report;
    sgfp4_report_begin(&report, &o, m->count, sgfp4_model_data_bytes(m));
    s = sgfp4_model_decode_part(m, sink, &o, &report, diag);
    if (s == SGFP4_OK)
        sgfp4_report_end(&report, 1);
    return s;
}
