/* Restoring an ordinary safetensors model from a quantized one, streaming: each container is
 * validated and hash-checked, then decoded in bands of at most BAND_BYTES straight into the
 * output (whole rows, or segments of a row wider than that), so memory stays at one band
 * whatever the tensor's shape. The total output is bounded before anything is written.
 * SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/options.h"
#include "decode/decode_internal.h"
#include "model/model_internal.h"

#define BAND_BYTES SGFP4_MODEL_DECODE_BAND_BYTES

/* The reason a failed sink write gives: the system's, when the sink left one in errno (a
 * file: "No space left on device"), else the status's. */
static const char *write_error(sgfp4_status s, int error)
{
    return s == SGFP4_ERR_IO && error ? strerror(error) : sgfp4_status_str(s);
}

/* Writes to the output; on failure, names the tensor, its rows [r0, r1) (none if r0 == r1)
 * and the reason. */
static sgfp4_status put(sgfp4_st_writer *w, const void *data, size_t size,
                        const sgfp4_model_tensor *t, uint64_t r0, uint64_t r1, sgfp4_diag *diag)
{
    errno = 0;
    const sgfp4_status s = sgfp4_st_writer_write(w, data, size);
    const int error = errno;
    if (s != SGFP4_OK && r1 > r0)
        sgfp4_fail(diag, s, -1, -1, -1, "tensor '%s': rows %llu..%llu: cannot write the output: %s",
                   t->name, (unsigned long long)r0, (unsigned long long)r1, write_error(s, error));
    else if (s != SGFP4_OK)
        sgfp4_fail(diag, s, -1, -1, -1, "tensor '%s': cannot write the output: %s", t->name,
                   write_error(s, error));
    return s;
}

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

/* Narrows `bytes` of float32 output in buf to `out` when that is an 8-bit float (the decoder
 * writes those as float32); returns the bytes to write. */
static size_t narrowed(sgfp4_st_dtype out, sgfp4_dtype dt, uint8_t *buf, size_t bytes)
{
    return out != st_of(dt) ? sgfp4_st_narrow_f32(out, buf, bytes / sizeof(float)) : bytes;
}

/* A row wider than a band: decoded and written in segments of at most BAND_BYTES, through
 * the scalar decoder (the only one that decodes part of a row; the same bits). */
static sgfp4_status decode_wide_rows(const sgfp4_tensor *view, const sgfp4_model_tensor *t,
                                     sgfp4_st_dtype out, sgfp4_dtype dt, uint8_t *buf,
                                     const model_report *report, sgfp4_st_writer *w,
                                     sgfp4_diag *diag)
{
    const size_t elem = sgfp4_dtype_size(dt);
    const uint64_t segment = BAND_BYTES / elem;
    const sgfp4_output dst = {buf, 0, dt};
    sgfp4_status s = SGFP4_OK;
    for (uint64_t r = 0; s == SGFP4_OK && r < view->rows; r++)
        for (uint64_t c = 0; s == SGFP4_OK && c < view->cols; c += segment) {
            const uint64_t end = c + segment < view->cols ? c + segment : view->cols;
            if ((s = sgfp4_report_cancelled(report, diag)) != SGFP4_OK)
                break;
            sgfp4_scalar_decode_row_columns(view, r, c, end, &dst);
            s = put(w, buf, narrowed(out, dt, buf, (size_t)(end - c) * elem), t, r, r + 1, diag);
        }
    return s;
}

static sgfp4_status decode_one(const sgfp4_model *m, const sgfp4_model_tensor *t,
                               sgfp4_st_dtype out, const sgfp4_model_write_options *o,
                               const model_report *report, sgfp4_st_writer *w,
                               sgfp4_diag *diag)
{
    const sgfp4_dtype dt = dtype_of(out);
    sgfp4_status s = sgfp4_model_tensor_verify(m, t, diag);
    if (s != SGFP4_OK)
        return s;
    sgfp4_tensor *view = NULL;
    if ((s = sgfp4_model_tensor_open(m, t, &view, NULL, diag)) != SGFP4_OK)
        return s;
    const uint64_t rows = t->quant->rows, cols = t->quant->cols;
    /* cols <= 2^40 (the open checked the padded grid), so this does not overflow */
    const uint64_t row_bytes = cols * sgfp4_dtype_size(dt);
    /* Bands of whole rows, multiples of 64 (one macroblock row) where that fits. */
    uint64_t band = BAND_BYTES / row_bytes;
    band = band >= 64 ? band / 64 * 64 : band;
    if (band > rows)
        band = rows;
    uint8_t *buf = malloc(band ? (size_t)(band * row_bytes) : BAND_BYTES);
    if (!buf)
        s = sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "tensor '%s': out of memory", t->name);
    else if (band == 0)
        s = decode_wide_rows(view, t, out, dt, buf, report, w, diag);
    for (uint64_t r = 0; s == SGFP4_OK && band && r < rows; r += band) {
        const uint64_t end = r + band < rows ? r + band : rows;
        const size_t bytes = (size_t)((end - r) * row_bytes);
        if ((s = sgfp4_report_cancelled(report, diag)) != SGFP4_OK)
            break;
        s = sgfp4_decode_rows(view, r, end, dt, buf, 0, bytes, o->decode);
        if (s != SGFP4_OK)
            sgfp4_fail(diag, s, (int64_t)t->offset, -1, -1, "tensor '%s': rows %llu..%llu: %s",
                       t->name, (unsigned long long)r, (unsigned long long)end,
                       sgfp4_status_str(s));
        else
            s = put(w, buf, narrowed(out, dt, buf, bytes), t, r, end, diag);
    }
    free(buf);
    sgfp4_tensor_close(view);
    return s;
}

/* What the quantized tensors decode to, and the limit on it: the caller's, or the default
 * of SGFP4_MODEL_DECODE_ELEMENTS_PER_BYTE per container byte. */
static sgfp4_status check_output_size(const sgfp4_model *m, const sgfp4_model_write_options *o,
                                      sgfp4_diag *diag)
{
    uint64_t elements = 0, container_bytes = 0;
    for (size_t k = 0; k < m->count; k++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_k(m, k);
        if (!t->quant)
            continue;
        /* rows * cols is the product of the original shape, checked to fit 64 bits */
        const uint64_t n = t->quant->rows * t->quant->cols;
        elements = elements > UINT64_MAX - n ? UINT64_MAX : elements + n;
        container_bytes += t->nbytes; /* within the files' sizes */
    }
    const uint64_t per_byte = SGFP4_MODEL_DECODE_ELEMENTS_PER_BYTE;
    const uint64_t limit = o->max_output_elements ? o->max_output_elements
                           : container_bytes > UINT64_MAX / per_byte
                               ? UINT64_MAX
                               : container_bytes * per_byte;
    if (elements <= limit)
        return SGFP4_OK;
    if (o->max_output_elements)
        return sgfp4_fail(diag, SGFP4_ERR_LIMIT, -1, -1, -1,
                          "the quantized tensors decode to %llu elements, more than the limit "
                          "of %llu (sgfp4_model_write_options.max_output_elements)",
                          (unsigned long long)elements, (unsigned long long)limit);
    return sgfp4_fail(diag, SGFP4_ERR_LIMIT, -1, -1, -1,
                      "the quantized tensors decode to %llu elements, more than the default "
                      "limit of %llu: %llu per byte of their %llu container bytes, far above "
                      "what an encoder writes (raise sgfp4_model_write_options."
                      "max_output_elements to accept it)",
                      (unsigned long long)elements, (unsigned long long)limit,
                      (unsigned long long)per_byte, (unsigned long long)container_bytes);
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
        if ((s = sgfp4_report_cancelled(report, diag)) != SGFP4_OK)
            break;
        if (t->quant) {
            s = decode_one(m, t, entries[i].dtype, o, report, w, diag);
        } else {
            s = put(w, t->data, (size_t)t->nbytes, t, 0, 0, diag);
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
    /* bad decode options are refused here, before the header is written */
    const sgfp4_status options_ok = sgfp4_decode_options_check(o->decode);
    if (options_ok != SGFP4_OK)
        return sgfp4_fail(diag, options_ok, -1, -1, -1, "decode options: %s (threads at most %d, "
                          "a known backend and store, struct_size from "
                          "sgfp4_decode_options_init)", sgfp4_status_str(options_ok),
                          SGFP4_MAX_THREADS);
    return check_output_size(m, o, diag);
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
