/* Progress reports and the closing summary of a whole-model job (encode, decode, single file
 * or set): counts, bytes, bits per weight achieved against the target, and time.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "common/clock.h"
#include "common/results.h"
#include "model/model_internal.h"

static void send(const model_report *r, size_t done, uint64_t bytes_done, const char *current)
{
    if (r->options && r->options->progress) {
        const sgfp4_model_progress p = {done, r->tensors_total, bytes_done, r->bytes_total,
                                        current};
        r->options->progress(r->options->progress_user, &p);
    }
}

void sgfp4_report_begin(model_report *r, const sgfp4_model_write_options *o, size_t tensors,
                        uint64_t bytes)
{
    memset(r, 0, sizeof *r);
    r->options = o;
    r->tensors_total = tensors;
    r->bytes_total = bytes;
    r->start = r->last = sgfp4_now();
    if (o && o->summary) /* its struct_size was checked (sgfp4_model_write_options_read) */
        sgfp4_result_clear(o->summary);
    send(r, 0, 0, NULL);
}

static sgfp4_status counting_write(void *user, const void *data, size_t size)
{
    model_report *r = user;
    const sgfp4_status s = r->inner.write(r->inner.user, data, size);
    if (s == SGFP4_OK)
        r->summary.file_bytes_out += size;
    return s;
}

sgfp4_sink sgfp4_report_sink(model_report *r, const sgfp4_sink *inner)
{
    r->inner = *inner;
    return (sgfp4_sink){counting_write, r};
}

void sgfp4_report_tensor(model_report *r, const sgfp4_model_tensor *t,
                         sgfp4_model_tensor_report *p)
{
    const double now = sgfp4_now();
    p->tensor = t;
    p->index = r->tensors_done;
    p->count = r->tensors_total;
    p->bytes_in = t->nbytes;
    p->seconds = now - r->last;
    r->last = now;
    r->tensors_done++;
    r->bytes_done += t->nbytes;
    sgfp4_model_summary *s = &r->summary;
    s->tensors++;
    s->bytes_in += t->nbytes;
    s->bytes_out += p->bytes_out;
    if (p->quantized) {
        s->quantized++;
        /* The container is the output of encode (t is the source tensor) and the input of
         * decode (t is the quantized tensor, which the manifest describes). */
        if (t->quant) {
            s->quantized_bytes += t->nbytes;
            s->quantized_weights += t->quant->rows * t->quant->cols;
        } else {
            s->quantized_bytes += p->bytes_out;
            s->quantized_weights += t->elements;
        }
        s->calibrated += p->calibrated != 0;
        s->rated += p->rated != 0;
        s->above_target += p->target_miss > 0;
        s->below_target += p->target_miss < 0;
    }
    if (r->options && r->options->tensor_report)
        r->options->tensor_report(r->options->progress_user, p);
    send(r, r->tensors_done, r->bytes_done, t->name);
}

void sgfp4_report_end(model_report *r, size_t files)
{
    sgfp4_model_summary *s = &r->summary;
    s->files = files;
    s->seconds = sgfp4_now() - r->start;
    s->bits_per_weight =
        s->quantized_weights ? 8.0 * (double)s->quantized_bytes / (double)s->quantized_weights : 0;
    if (r->options && r->options->summary)
        sgfp4_result_store(r->options->summary, s);
}

sgfp4_status sgfp4_report_cancelled(const model_report *r, sgfp4_diag *diag)
{
    const sgfp4_model_write_options *o = r->options;
    if (!o || !o->cancel || o->cancel(o->cancel_user) == 0)
        return SGFP4_OK;
    return sgfp4_fail(diag, SGFP4_ERR_CANCELLED, -1, -1, -1, "cancelled by the caller");
}
