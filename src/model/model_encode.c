/* Quantizing a whole model into a D6 manifest file, streaming.
 *
 * Design: the safetensors header must come first but holds every container's size, which is
 * known only after encoding. Encoding twice is too slow, and holding all containers in memory
 * is unbounded, so pass 1 encodes one tensor at a time (float32 copy -> container -> validate
 * -> sha256) and appends the container to an unlinked spool file; pass 2 writes the header,
 * copies the v2 then v1 containers from the spool and the pass-through tensors from the
 * mapping. Peak memory: one tensor's float32 copy, its container and the encoder's
 * workspace; the spool costs disk about the size of the quantized tensors.
 * SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/options.h"
#include "model/model_internal.h"

#define COPY_CHUNK ((size_t)1 << 20)

typedef struct planned {
    sgfp4_model_decision decision;
    sgfp4_encode_options options;   /* the decision's, for this tensor's encode */
    uint64_t spool_offset, bytes;   /* the container in the spool (quantized tensors) */
    unsigned importance;            /* importance vectors used: 1 columns, 2 rows */
    uint64_t clipped;               /* weights beyond the fp16 range (sgfp4_encode_report) */
    int calibrated;                 /* encoded with the input's Hessian */
    int rated;                      /* its target chosen by sensitivity */
    char sha256[65];
} planned;

typedef struct encode_job {
    const sgfp4_model *src;
    const sgfp4_model *importance; /* NULL: none */
    const sgfp4_model_write_options *options;
    const model_report *report;
    const model_rates *rates;      /* targets chosen by sensitivity */
    hessian_cache hessians;        /* the importance file's, prepared */
    planned *plan;
    int spool;
    uint64_t spool_end;
    uint8_t *chunk;
    sgfp4_diag *diag;
} encode_job;

static bool host_is_little_endian(void)
{
    const uint16_t one = 1;
    uint8_t first;
    memcpy(&first, &one, 1);
    return first == 1;
}

static bool pwrite_all(int fd, const uint8_t *p, size_t n, uint64_t at)
{
    while (n) {
        const ssize_t w = pwrite(fd, p, n, (off_t)at);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
        at += (uint64_t)w;
    }
    return true;
}

sgfp4_status sgfp4_importance_vector(const sgfp4_model *importance, const sgfp4_model_tensor *t,
                                     const char *suffix, uint64_t n, float **out,
                                     sgfp4_diag *diag)
{
    *out = NULL;
    char key[1024];
    if (snprintf(key, sizeof key, "%s%s", t->name, suffix) >= (int)sizeof key)
        return SGFP4_OK;
    const sgfp4_model_tensor *v = sgfp4_model_tensor_find(importance, key);
    if (!v)
        return SGFP4_OK;
    if (v->elements != n || n > SIZE_MAX / sizeof(float))
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, (int64_t)v->offset, -1, -1,
                          "importance '%s': %llu values for %llu %s of tensor '%s'", key,
                          (unsigned long long)v->elements, (unsigned long long)n,
                          suffix[0] ? "rows" : "columns", t->name);
    if (!(*out = malloc((size_t)n * sizeof(float))))
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    const sgfp4_status s = sgfp4_model_tensor_to_f32(v, 1, *out, (size_t)n * sizeof(float), diag);
    if (s != SGFP4_OK) {
        free(*out);
        *out = NULL;
    }
    return s;
}

sgfp4_status sgfp4_model_tensor_floats(const sgfp4_model_tensor *t, const float **values,
                                       float **owned, sgfp4_diag *diag)
{
    *values = NULL;
    *owned = NULL;
    /* A little-endian F32 tensor at a 4-aligned address is read straight from the map,
     * after the same finiteness check the conversion does. */
    if (t->dtype == SGFP4_ST_F32 && host_is_little_endian() &&
        ((uintptr_t)t->data % sizeof(float)) == 0) {
        *values = (const float *)(const void *)t->data;
        return sgfp4_model_tensor_to_f32_check(t, diag);
    }
    if (t->elements > SIZE_MAX / sizeof(float) ||
        !(*owned = malloc((size_t)t->elements * sizeof(float))))
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, (int64_t)t->offset, -1, -1,
                          "tensor '%s': out of memory for its float32 copy", t->name);
    *values = *owned;
    return sgfp4_model_tensor_to_f32(t, 1, *owned, (size_t)t->elements * sizeof(float), diag);
}

/* Pass 1 for one tensor: convert, encode, validate, hash, spool. */
static sgfp4_status encode_one(encode_job *job, const sgfp4_model_tensor *t, planned *p)
{
    sgfp4_diag *diag = job->diag;
    sgfp4_model_decision *d = &p->decision;
    if (t->elements > SIZE_MAX / sizeof(float))
        return sgfp4_fail(diag, SGFP4_ERR_LIMIT, (int64_t)t->offset, -1, -1,
                          "tensor '%s': too large for this address space", t->name);
    float *columns = NULL, *rows = NULL;
    if (job->importance) {
        sgfp4_status si =
            sgfp4_importance_vector(job->importance, t, "", d->cols, &columns, diag);
        if (si == SGFP4_OK)
            si = sgfp4_importance_vector(job->importance, t, ":rows", d->rows, &rows, diag);
        if (si != SGFP4_OK) {
            free(columns);
            return si;
        }
        p->options.column_importance = columns;
        p->options.row_importance = rows;
        const sgfp4_hessian *hessian = NULL;
        si = sgfp4_importance_hessian(job->importance, t, d->cols, p->options.threads,
                                      &job->hessians, &hessian, diag);
        if (si != SGFP4_OK) {
            free(columns);
            free(rows);
            return si;
        }
        p->options.hessian = hessian;
    }
    const double rate = sgfp4_model_rate_of(job->rates, t);
    if (rate > 0)
        p->options.target_bpw = rate;
    p->rated = rate > 0;
    const float *src = NULL;
    float *owned = NULL;
    sgfp4_status s = sgfp4_model_tensor_floats(t, &src, &owned, diag);
    void *container = NULL;
    size_t size = 0;
    if (s == SGFP4_OK) {
        sgfp4_encode_report report;
        sgfp4_encode_report_init(&report);
        sgfp4_diag why;
        p->options.report = &report;
        if (job->options->cancel) { /* the job's hook, asked while the tensor is encoded */
            p->options.cancel = job->options->cancel;
            p->options.cancel_user = job->options->cancel_user;
        }
        s = sgfp4_encode_alloc(src, d->rows, d->cols, 0, &container, &size, &p->options, &why);
        p->options.report = NULL;
        p->clipped = report.clipped;
        if (s == SGFP4_ERR_CANCELLED)
            sgfp4_fail(diag, s, -1, -1, -1, "cancelled by the caller");
        else if (s != SGFP4_OK)
            sgfp4_fail(diag, s, (int64_t)t->offset, -1, -1, "tensor '%s' [%llu x %llu]: encoder "
                       "failed: %s", t->name, (unsigned long long)d->rows,
                       (unsigned long long)d->cols,
                       why.message[0] ? why.message : sgfp4_status_str(s));
    }
    free(owned);
    /* The manifest records that importance was used; the vectors themselves go. */
    p->importance = (columns ? 1u : 0u) | (rows ? 2u : 0u);
    p->calibrated = p->options.hessian != NULL;
    free(columns);
    free(rows);
    p->options.column_importance = NULL;
    p->options.row_importance = NULL;
    p->options.hessian = NULL; /* the cache owns it */
    if (s != SGFP4_OK)
        return s;
    /* Self-check: the container we are about to publish must pass strict validation. */
    sgfp4_tensor *view = NULL;
    sgfp4_diag inner;
    s = sgfp4_tensor_open(container, size, p->options.profile, d->rows, d->cols, &view, NULL,
                          &inner);
    sgfp4_tensor_close(view);
    if (s != SGFP4_OK) {
        sgfp4_free(container);
        if (s == SGFP4_ERR_NOMEM) /* the check could not run: not a bad container */
            return sgfp4_fail(diag, s, (int64_t)t->offset, -1, -1,
                              "tensor '%s': out of memory to check the encoded container",
                              t->name);
        return sgfp4_fail(diag, SGFP4_ERR_INTERNAL, (int64_t)t->offset, -1, -1,
                          "tensor '%s': the encoder wrote an invalid container (%s)", t->name,
                          inner.message);
    }
    sgfp4_sha256_hex(container, size, p->sha256);
    p->spool_offset = job->spool_end;
    p->bytes = size;
    const bool ok = pwrite_all(job->spool, container, size, job->spool_end);
    sgfp4_free(container);
    if (!ok)
        return sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1,
                          "tensor '%s': cannot write to the spool file: %s", t->name,
                          strerror(errno));
    job->spool_end += size;
    return SGFP4_OK;
}

static json_t *encoder_json(const sgfp4_encode_options *o, unsigned importance, int calibrated)
{
    json_t *e = json_object();
    json_object_set_new(e, "library", json_string(sgfp4_version_string()));
    json_object_set_new(e, "policy",
                        json_string(o->policy == SGFP4_POLICY_RATE ? "rate" : "threshold"));
    if (o->policy == SGFP4_POLICY_RATE)
        json_object_set_new(e, "target_bpw", json_real(o->target_bpw));
    else
        json_object_set_new(e, "threshold", json_real(o->threshold));
    json_object_set_new(e, "delta", json_real(o->delta));
    json_object_set_new(e, "fit", json_string(o->fit == SGFP4_FIT_BEST   ? "best"
                                              : o->fit == SGFP4_FIT_FAST ? "fast"
                                                                         : "reference"));
    if (o->policy == SGFP4_POLICY_RATE && o->profile != SGFP4_PROFILE_V1) {
        json_object_set_new(e, "metric",
                            json_string(o->metric == SGFP4_METRIC_SSE ? "sse" : "row"));
        if (importance)
            json_object_set_new(e, "importance",
                                json_string(importance == 3   ? "both"
                                            : importance == 1 ? "columns"
                                                              : "rows"));
    }
    if (calibrated)
        json_object_set_new(e, "calibration", json_string("hessian"));
    return e;
}

static json_t *shape_array(const uint64_t *shape, size_t rank)
{
    json_t *a = json_array();
    for (size_t d = 0; d < rank; d++)
        json_array_append_new(a, json_integer((json_int_t)shape[d]));
    return a;
}

/* The manifest document (D6) as compact JSON text; NULL when out of memory. */
static char *manifest_text(const sgfp4_model *src, const planned *plan)
{
    json_t *root = json_object(), *tensors = json_object();
    json_object_set_new(root, "format", json_string("sgfp4-manifest"));
    json_object_set_new(root, "version", json_integer(1));
    json_object_set_new(root, "tensors", tensors);
    for (size_t k = 0; k < src->count; k++) {
        if (!plan[k].decision.quantize)
            continue;
        const sgfp4_model_tensor *t = sgfp4_model_tensor_k(src, k);
        const sgfp4_model_decision *d = &plan[k].decision;
        json_t *e = json_object();
        json_object_set_new(e, "profile",
                            json_string(d->profile == SGFP4_PROFILE_V1 ? "v1" : "v2"));
        json_object_set_new(e, "shape", json_pack("[II]", (json_int_t)d->rows,
                                                  (json_int_t)d->cols));
        json_object_set_new(e, "original_shape", shape_array(t->shape, t->rank));
        json_object_set_new(e, "dtype", json_string(sgfp4_st_dtype_name(t->dtype)));
        json_object_set_new(e, "sha256", json_string(plan[k].sha256));
        json_object_set_new(e, "encoder",
                            encoder_json(&plan[k].options, plan[k].importance, plan[k].calibrated));
        json_object_set_new(tensors, t->name, e);
    }
    char *text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    return text;
}

/* D6 order: v2 containers, then v1 containers, then pass-through, each in file order. */
static int group_of(const planned *p)
{
    if (!p->decision.quantize)
        return 2;
    return p->decision.profile == SGFP4_PROFILE_V1 ? 1 : 0;
}

static sgfp4_status copy_spool(encode_job *job, sgfp4_st_writer *w, const planned *p,
                               const char *name)
{
    uint64_t done = 0;
    while (done < p->bytes) {
        const sgfp4_status c = sgfp4_report_cancelled(job->report, job->diag);
        if (c != SGFP4_OK)
            return c;
        const size_t n = (size_t)(p->bytes - done < COPY_CHUNK ? p->bytes - done : COPY_CHUNK);
        const ssize_t got = pread(job->spool, job->chunk, n, (off_t)(p->spool_offset + done));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return sgfp4_fail(job->diag, SGFP4_ERR_IO, -1, -1, -1,
                              "tensor '%s': cannot read back the spool file: %s", name,
                              got < 0 ? strerror(errno) : "short read");
        errno = 0;
        const sgfp4_status s = sgfp4_st_writer_write(w, job->chunk, (size_t)got);
        if (s != SGFP4_OK) /* errno: the reason a file sink gives (ENOSPC) */
            return sgfp4_fail(job->diag, s, -1, -1, -1, "tensor '%s': cannot write: %s", name,
                              s == SGFP4_ERR_IO && errno ? strerror(errno)
                                                         : sgfp4_status_str(s));
        done += (uint64_t)got;
    }
    return SGFP4_OK;
}

/* Pass 2: header, then data in D6 order. */
static sgfp4_status assemble(encode_job *job, const sgfp4_sink *sink)
{
    const sgfp4_model *src = job->src;
    sgfp4_diag *diag = job->diag;
    char *manifest = manifest_text(src, job->plan);
    sgfp4_st_entry *entries = calloc(src->count ? src->count : 1, sizeof *entries);
    size_t *order = calloc(src->count ? src->count : 1, sizeof *order);
    const char **keys = calloc(src->meta_count + 1, sizeof *keys);
    const char **values = calloc(src->meta_count + 1, sizeof *values);
    sgfp4_status s = SGFP4_OK;
    if (!manifest || !entries || !order || !keys || !values)
        s = sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    size_t n = 0, meta = 0;
    for (int group = 0; s == SGFP4_OK && group < 3; group++)
        for (size_t k = 0; k < src->count; k++) {
            if (group_of(&job->plan[k]) != group)
                continue;
            const sgfp4_model_tensor *t = sgfp4_model_tensor_k(src, k);
            entries[n].name = t->name;
            if (group < 2) {
                entries[n].dtype = SGFP4_ST_U8;
                entries[n].rank = 1;
                entries[n].shape = &job->plan[k].bytes;
            } else {
                entries[n].dtype = t->dtype;
                entries[n].rank = t->rank;
                entries[n].shape = t->shape;
            }
            order[n++] = k;
        }
    for (size_t k = 0; s == SGFP4_OK && k < src->meta_count; k++)
        if (strcmp(src->meta_keys[k], "sgfp4") != 0) {
            keys[meta] = src->meta_keys[k];
            values[meta++] = src->meta_values[k];
        }
    keys[meta] = "sgfp4";
    values[meta++] = manifest;
    sgfp4_st_writer *w = NULL;
    if (s == SGFP4_OK)
        s = sgfp4_st_writer_begin(entries, n, keys, values, meta, sink, &w, diag);
    for (size_t i = 0; s == SGFP4_OK && i < n; i++) {
        const size_t k = order[i];
        const sgfp4_model_tensor *t = sgfp4_model_tensor_k(src, k);
        if (job->plan[k].decision.quantize) {
            s = copy_spool(job, w, &job->plan[k], t->name);
            continue;
        }
        s = sgfp4_report_cancelled(job->report, diag);
        if (s != SGFP4_OK)
            break;
        errno = 0;
        s = sgfp4_st_writer_write(w, t->data, (size_t)t->nbytes);
        if (s != SGFP4_OK) /* errno: the reason a file sink gives (ENOSPC) */
            sgfp4_fail(diag, s, -1, -1, -1, "tensor '%s': cannot write: %s", t->name,
                       s == SGFP4_ERR_IO && errno ? strerror(errno) : sgfp4_status_str(s));
        sgfp4_model_tensor_evict(src, t);
    }
    if (s == SGFP4_OK)
        s = sgfp4_st_writer_finish(w, diag);
    sgfp4_st_writer_free(w);
    free(manifest);
    free(entries);
    free(order);
    free(keys);
    free(values);
    return s;
}

/* What the report says about a tensor just planned (and, if quantized, encoded). */
static void describe(const sgfp4_model_tensor *t, const planned *p, sgfp4_model_tensor_report *r)
{
    const sgfp4_model_decision *d = &p->decision;
    r->quantized = d->quantize;
    r->calibrated = p->calibrated;
    r->rated = p->rated;
    r->reason = d->reason;
    r->clipped = p->clipped;
    r->importance = (int)p->importance;
    r->bytes_out = d->quantize ? p->bytes : t->nbytes;
    if (!d->quantize || t->elements == 0)
        return;
    const double weights = (double)t->elements;
    r->bits_per_weight = 8.0 * (double)p->bytes / weights;
    if (d->profile == SGFP4_PROFILE_V2 && d->policy == SGFP4_POLICY_RATE) {
        r->target_bpw = p->options.target_bpw; /* the decision's, or the chosen rate */
        /* The rate control's own budget (docs/encoder.md): at most target * weights / 8
         * bytes and, where the tensor can get there, within 1% below. */
        const double budget = p->options.target_bpw * weights / 8.0;
        r->target_miss = (double)p->bytes > budget ? 1 : (double)p->bytes < 0.99 * budget ? -1 : 0;
    }
}

sgfp4_status sgfp4_model_encode_part(const sgfp4_model *src, const sgfp4_model_policy *policy,
                                     const model_rates *rates, const sgfp4_sink *sink,
                                     const sgfp4_model_write_options *options,
                                     model_report *report, sgfp4_diag *diag)
{
    encode_job job = {src,     options->importance, options, report, rates,
                      {{NULL, NULL}, {NULL, NULL}, 0}, NULL, -1, 0, NULL, diag};
    job.plan = calloc(src->count ? src->count : 1, sizeof *job.plan);
    job.chunk = malloc(COPY_CHUNK);
    if (!job.plan || !job.chunk) {
        free(job.plan);
        free(job.chunk);
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    }
    sgfp4_status s = SGFP4_OK;
    job.spool = sgfp4_temp_file(options->temp_dir);
    if (job.spool < 0)
        s = sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1, "cannot create a spool file in %s: %s",
                       sgfp4_temp_dir(options->temp_dir), strerror(errno));
    for (size_t k = 0; s == SGFP4_OK && k < src->count; k++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_k(src, k);
        if ((s = sgfp4_report_cancelled(report, diag)) != SGFP4_OK)
            break;
        sgfp4_model_decision_init(&job.plan[k].decision);
        sgfp4_model_policy_decide(policy, t, &job.plan[k].decision);
        sgfp4_encode_options_init(&job.plan[k].options);
        sgfp4_model_decision_options(policy, &job.plan[k].decision, &job.plan[k].options);
        if (job.plan[k].decision.quantize)
            s = encode_one(&job, t, &job.plan[k]);
        sgfp4_model_tensor_evict(src, t);
        if (s == SGFP4_OK) {
            sgfp4_model_tensor_report r = {0};
            describe(t, &job.plan[k], &r);
            sgfp4_report_tensor(report, t, &r);
        }
    }
    const sgfp4_sink counted = sgfp4_report_sink(report, sink);
    if (s == SGFP4_OK)
        s = assemble(&job, &counted);
    if (job.spool >= 0)
        close(job.spool);
    sgfp4_hessian_cache_free(&job.hessians);
    free(job.plan);
    free(job.chunk);
    return s;
}

uint64_t sgfp4_model_data_bytes(const sgfp4_model *m)
{
    uint64_t bytes = 0;
    for (size_t k = 0; m && k < m->count; k++)
        bytes += sgfp4_model_tensor_k(m, k)->nbytes;
    return bytes;
}

sgfp4_status sgfp4_model_encode(const sgfp4_model *src, const sgfp4_model_policy *policy,
                                const sgfp4_sink *sink, const sgfp4_model_write_options *given,
                                sgfp4_diag *diag)
{
    sgfp4_diag_clear(diag);
    if (!src || !policy || !sink || !sink->write)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL argument");
    sgfp4_model_write_options options;
    sgfp4_status s = sgfp4_model_write_options_read(given, &options, diag);
    if (s == SGFP4_OK && src->quantized)
        s = sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                       "the input is already a quantized model (it has an sgfp4 manifest)");
    if (s == SGFP4_OK)
        s = sgfp4_model_check_one_file(src, diag);
    if (s != SGFP4_OK)
        return s;
    model_rates rates;
    s = sgfp4_model_plan_rates(src, policy, options.importance, &rates, diag);
    if (s != SGFP4_OK)
        return s;
    model_report report;
    sgfp4_report_begin(&report, &options, src->count, sgfp4_model_data_bytes(src));
    s = sgfp4_model_encode_part(src, policy, &rates, sink, &options, &report, diag);
    if (s == SGFP4_OK)
        sgfp4_report_end(&report, 1);
    sgfp4_model_rates_free(&rates);
    return s;
}
