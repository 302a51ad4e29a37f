/* Writing sharded sets: encode or decode a model shard by shard into the caller's files,
 * then the index. Each output shard is the single-file job on its source shard, so it is a
 * complete model (for encode, a D6 quantized model with its own manifest); the index is
 * built from what was written. Format: docs/model.md, "Sharded sets".
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "model/model_internal.h"

typedef sgfp4_status (*part_job)(const sgfp4_model *part, const void *context,
                                 const sgfp4_sink *sink, const sgfp4_model_write_options *options,
                                 model_report *report, sgfp4_diag *diag);

/* What every shard of an encode shares: the policy and the rates planned over the set. */
typedef struct encode_plan {
    const sgfp4_model_policy *policy;
    const model_rates *rates;
} encode_plan;

static sgfp4_status encode_job(const sgfp4_model *part, const void *context,
                               const sgfp4_sink *sink, const sgfp4_model_write_options *options,
                               model_report *report, sgfp4_diag *diag)
{
    const encode_plan *plan = context;
    return sgfp4_model_encode_part(part, plan->policy, plan->rates, sink, options, report, diag);
}

static sgfp4_status decode_job(const sgfp4_model *part, const void *unused,
                               const sgfp4_sink *sink, const sgfp4_model_write_options *options,
                               model_report *report, sgfp4_diag *diag)
{
    (void)unused;
    return sgfp4_model_decode_part(part, sink, options, report, diag);
}

/* The output names: one plain file name per shard and one for the index, all distinct. */
static sgfp4_status check_names(const sgfp4_model *source, const char *const *shard_names,
                                const char *index_name, sgfp4_diag *diag)
{
    const size_t n = sgfp4_model_shard_count(source);
    const char **all = malloc((n + 1) * sizeof *all);
    if (!all)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    sgfp4_status s = SGFP4_OK;
    for (size_t k = 0; s == SGFP4_OK && k <= n; k++) {
        const char *name = k < n ? shard_names[k] : index_name;
        const char *why = name ? sgfp4_model_bad_file_name(name) : "is missing (NULL)";
        if (why && k < n)
            s = sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "the name of output shard %zu %s",
                           k, why);
        else if (why)
            s = sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "the name of the output index %s",
                           why);
        all[k] = name;
    }
    if (s == SGFP4_OK) {
        qsort(all, n + 1, sizeof *all, sgfp4_compare_strings);
        for (size_t k = 1; s == SGFP4_OK && k <= n; k++)
            if (strcmp(all[k - 1], all[k]) == 0)
                s = sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                               "output name '%.80s' is given twice", all[k]);
    }
    free(all);
    return s;
}

char *sgfp4_model_index_text(const sgfp4_model *source, const char *const *shard_names,
                        uint64_t data_bytes)
{
    json_t *root = source->index_json ? json_loads(source->index_json, 0, NULL) : json_object();
    json_t *map = json_object();
    if (!root || !map) {
        json_decref(root);
        json_decref(map);
        return NULL;
    }
    json_t *meta = json_object_get(root, "metadata");
    if (!meta) {
        meta = json_object();
        json_object_set_new(root, "metadata", meta);
    }
    bool ok = meta && json_object_set_new(meta, "total_size", json_integer((json_int_t)data_bytes)) == 0;
    for (size_t k = 0; ok && k < source->count; k++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_k(source, k);
        ok = json_object_set_new(map, t->name, json_string(shard_names[t->shard])) == 0;
    }
    ok = ok && json_object_set_new(root, "weight_map", map) == 0;
    char *body = ok ? json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    if (!ok)
        json_decref(map);
    json_decref(root);
    char *text = body ? malloc(strlen(body) + 2) : NULL;
    if (text)
        strcat(strcpy(text, body), "\n");
    free(body);
    return text;
}

/* Calls open(); makes sure a failure carries a message. */
static sgfp4_status open_output(const sgfp4_model_set_sinks *sinks, size_t file,
                                const char *name, sgfp4_sink *sink, sgfp4_diag *diag)
{
    sgfp4_diag_clear(diag);
    const sgfp4_status s = sinks->open(sinks->user, file, name, sink, diag);
    if (s != SGFP4_OK && (!diag || diag->status == SGFP4_OK))
        return sgfp4_fail(diag, s, -1, -1, -1, "output '%.80s': cannot open: %s", name,
                          sgfp4_status_str(s));
    if (s == SGFP4_OK && !sink->write)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "output '%.80s': open() gave a sink without write()", name);
    return s;
}

/* Calls close() with the job's status; a failing close() becomes the job's status. */
static sgfp4_status close_output(const sgfp4_model_set_sinks *sinks, size_t file,
                                 const char *name, sgfp4_status job, sgfp4_diag *diag)
{
    sgfp4_diag scratch, *d = job == SGFP4_OK ? diag : &scratch;
    sgfp4_diag_clear(d);
    const sgfp4_status s = sinks->close(sinks->user, file, job, d);
    if (job != SGFP4_OK)
        return job;
    if (s != SGFP4_OK && (!diag || diag->status == SGFP4_OK))
        return sgfp4_fail(diag, s, -1, -1, -1, "output '%.80s': cannot close: %s", name,
                          sgfp4_status_str(s));
    return s;
}

static sgfp4_status write_set(const sgfp4_model *source, part_job job, const void *context,
                              const char *const *shard_names, const char *index_name,
                              const sgfp4_model_set_sinks *sinks,
                              const sgfp4_model_write_options *options, sgfp4_diag *diag)
{
    sgfp4_status s = check_names(source, shard_names, index_name, diag);
    if (s != SGFP4_OK)
        return s;
    const size_t n = sgfp4_model_shard_count(source);
    model_report report;
    sgfp4_report_begin(&report, options, source->count, sgfp4_model_data_bytes(source));
    for (size_t k = 0; s == SGFP4_OK && k < n; k++) {
        sgfp4_sink sink = {0};
        if ((s = open_output(sinks, k, shard_names[k], &sink, diag)) != SGFP4_OK)
            break;
        s = job(sgfp4_model_shard(source, k), context, &sink, options, &report, diag);
        s = close_output(sinks, k, shard_names[k], s, diag);
    }
    if (s == SGFP4_OK) {
        char *text = sgfp4_model_index_text(source, shard_names, report.summary.bytes_out);
        sgfp4_sink sink = {0};
        if (!text)
            return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
        if ((s = open_output(sinks, n, index_name, &sink, diag)) == SGFP4_OK) {
            const sgfp4_sink counted = sgfp4_report_sink(&report, &sink);
            s = sgfp4_sink_put(&counted, text, strlen(text));
            if (s != SGFP4_OK)
                sgfp4_fail(diag, s, -1, -1, -1, "output '%.80s': cannot write the index: %s",
                           index_name, sgfp4_status_str(s));
            s = close_output(sinks, n, index_name, s, diag);
        }
        free(text);
    }
    if (s == SGFP4_OK)
        sgfp4_report_end(&report, n + 1);
    return s;
}

static bool sinks_ok(const sgfp4_model_set_sinks *sinks)
{
    return sinks && sinks->open && sinks->close;
}

sgfp4_status sgfp4_model_encode_set(const sgfp4_model *source, const sgfp4_model_policy *policy,
                                    const char *const *shard_names, const char *index_name,
                                    const sgfp4_model_set_sinks *sinks,
                                    const sgfp4_model_write_options *given, sgfp4_diag *diag)
{
    sgfp4_diag_clear(diag);
    if (!source || !policy || !shard_names || !sinks_ok(sinks))
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL argument");
    sgfp4_model_write_options options;
    sgfp4_status s = sgfp4_model_write_options_read(given, &options, diag);
    if (s == SGFP4_OK && source->quantized)
        s = sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                       "the input is already a quantized model (it has an sgfp4 manifest)");
    if (s != SGFP4_OK)
        return s;
    model_rates rates;
    s = sgfp4_model_plan_rates(source, policy, options.importance, &rates, diag);
    if (s != SGFP4_OK)
        return s;
    const encode_plan plan = {policy, &rates};
    s = write_set(source, encode_job, &plan, shard_names, index_name, sinks, &options, diag);
    sgfp4_model_rates_free(&rates);
    return s;
}

sgfp4_status sgfp4_model_decode_set(const sgfp4_model *quantized, const char *const *shard_names,
                                    const char *index_name, const sgfp4_model_set_sinks *sinks,
                                    const sgfp4_model_write_options *given, sgfp4_diag *diag)
{
    sgfp4_diag_clear(diag);
    if (!quantized || !shard_names || !sinks_ok(sinks))
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL argument");
    sgfp4_model_write_options options;
    sgfp4_status s = sgfp4_model_write_options_read(given, &options, diag);
    if (s == SGFP4_OK)
        s = sgfp4_model_decode_check(quantized, &options, diag);
    if (s != SGFP4_OK)
        return s;
    return write_set(quantized, decode_job, NULL, shard_names, index_name, sinks, &options, diag);
}
