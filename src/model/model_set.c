/* Sharded sets: opening a Hugging Face index (`model.safetensors.index.json`) as one model,
 * the union of its shards, after checking the index against them.
 *
 * Design: every shard is opened as the single-file model it is (mapped, header checked,
 * manifest parsed), so a shard is checked exactly like a file on its own and stays usable
 * as one (the set writers encode and decode shard by shard). The set is a model whose
 * tensor table points into its shards; lookups, verify, decode and encode work on it
 * unchanged. Format: docs/model.md, "Sharded sets".
 * SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <jansson.h>

#include "model/model_internal.h"

#define INDEX_FAIL(diag, ...) sgfp4_fail(diag, SGFP4_ERR_MODEL_INDEX, -1, -1, -1, __VA_ARGS__)

const char *sgfp4_model_bad_file_name(const char *name)
{
    const size_t n = strlen(name);
    if (n == 0)
        return "is empty";
    if (n > 255)
        return "is longer than 255 bytes";
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return "is not a file name";
    if (strchr(name, '/') || strchr(name, '\\'))
        return "has a folder in it (shards must sit beside the index)";
    return NULL;
}

int sgfp4_compare_strings(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Reads the whole index (at most `limit` bytes) into a NUL-terminated buffer. */
static sgfp4_status read_index(const char *path, int fd, uint64_t size, uint64_t limit,
                               char **out, sgfp4_diag *diag)
{
    if (size > limit)
        return sgfp4_fail(diag, SGFP4_ERR_LIMIT, -1, -1, -1,
                          "index '%.120s': %llu bytes, above the limit of %llu", path,
                          (unsigned long long)size, (unsigned long long)limit);
    char *text = malloc((size_t)size + 1);
    if (!text)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    size_t got = 0;
    while (got < size) {
        const ssize_t r = pread(fd, text + got, (size_t)size - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            free(text);
            return sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1, "index '%.120s': cannot read: %s",
                              path, r < 0 ? strerror(errno) : "file shrank");
        }
        got += (size_t)r;
    }
    text[size] = '\0';
    *out = text;
    return SGFP4_OK;
}

typedef struct set_build {
    sgfp4_model *set;
    json_t *root, *weight_map;
    const char *path;
    sgfp4_diag *diag;
} set_build;

/* The index document: a JSON object with a "weight_map" object of tensor -> shard name,
 * and optionally "metadata" (an object; its total_size a non-negative integer). */
static sgfp4_status parse_index(set_build *b, const char *text, size_t size,
                                uint64_t *total_size, bool *has_total)
{
    sgfp4_diag *diag = b->diag;
    json_error_t err;
    b->root = json_loadb(text, size, JSON_REJECT_DUPLICATES, &err);
    if (!b->root) {
        const bool dup = json_error_code(&err) == json_error_duplicate_key;
        return sgfp4_fail(diag, dup ? SGFP4_ERR_MODEL_DUPLICATE : SGFP4_ERR_MODEL_INDEX,
                          err.position, -1, -1, "index '%.120s': line %d, column %d: %s",
                          b->path, err.line, err.column, err.text);
    }
    if (!json_is_object(b->root))
        return INDEX_FAIL(diag, "index '%.120s': not a JSON object", b->path);
    b->weight_map = json_object_get(b->root, "weight_map");
    if (!json_is_object(b->weight_map))
        return INDEX_FAIL(diag,
                          "index '%.120s': no \"weight_map\" object (tensor name -> shard file)",
                          b->path);
    if (json_object_size(b->weight_map) == 0)
        return INDEX_FAIL(diag, "index '%.120s': \"weight_map\" is empty", b->path);
    const json_t *meta = json_object_get(b->root, "metadata");
    if (meta && !json_is_object(meta))
        return INDEX_FAIL(diag, "index '%.120s': \"metadata\" is not a JSON object", b->path);
    const json_t *total = meta ? json_object_get(meta, "total_size") : NULL;
    *has_total = total != NULL;
    if (total) {
        if (!json_is_integer(total) || json_integer_value(total) < 0)
            return INDEX_FAIL(diag, "index '%.120s': metadata.total_size is not a non-negative "
                              "integer", b->path);
        *total_size = (uint64_t)json_integer_value(total);
    }
    return SGFP4_OK;
}

/* The distinct shard names of the weight_map, sorted: the set's shard order. */
static sgfp4_status collect_shards(set_build *b)
{
    sgfp4_diag *diag = b->diag;
    sgfp4_model *set = b->set;
    const size_t n = json_object_size(b->weight_map);
    const char **names = malloc(n * sizeof *names);
    if (!names)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    size_t k = 0;
    const char *tensor;
    json_t *value;
    json_object_foreach(b->weight_map, tensor, value) {
        const char *file = json_string_value(value);
        const char *why = file ? sgfp4_model_bad_file_name(file) : "is not a string";
        if (why) {
            free(names);
            return INDEX_FAIL(diag, "index '%.120s': weight_map['%.64s']: the shard name %s",
                              b->path, tensor, why);
        }
        names[k++] = file;
    }
    qsort(names, n, sizeof *names, sgfp4_compare_strings);
    size_t distinct = 0;
    for (k = 0; k < n; k++)
        if (distinct == 0 || strcmp(names[distinct - 1], names[k]) != 0)
            names[distinct++] = names[k];
    set->shard_names = calloc(distinct, sizeof *set->shard_names);
    set->shards = calloc(distinct, sizeof *set->shards);
    sgfp4_status s = SGFP4_OK;
    if (!set->shard_names || !set->shards)
        s = sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    for (k = 0; s == SGFP4_OK && k < distinct; k++) {
        if (!(set->shard_names[k] = strdup(names[k])))
            s = sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
        else
            set->shard_count++;
    }
    free(names);
    return s;
}

/* Prefixes diag's message with "shard 'NAME': ". */
static void name_the_shard(sgfp4_diag *diag, const char *name)
{
    if (!diag)
        return;
    char inner[sizeof diag->message];
    memcpy(inner, diag->message, sizeof inner);
    const int used = snprintf(diag->message, sizeof diag->message, "shard '%.80s': ", name);
    const size_t room = sizeof diag->message - (size_t)used - 1;
    const size_t take = strnlen(inner, room);
    memcpy(diag->message + used, inner, take); /* cut where the message is full */
    diag->message[(size_t)used + take] = '\0';
}

/* The limits of the open options count over the whole set, not per shard: the index and
 * every shard's header together within max_header_bytes, the tensors of all shards within
 * max_tensors, and the decompressed copies of .zst shards together within
 * max_decompressed_bytes and the share of the temp folder's free space (taken once, before
 * the first shard). Each shard opens with what is left, so that its own checks (before its
 * header is parsed, while it decompresses) keep memory and disk within the set's bounds. */
typedef struct set_budget {
    uint64_t header_bytes, tensors, decompressed; /* what the set may use in all */
    uint64_t used_header, used_tensors, used_decompressed;
} set_budget;

static uint64_t sat_mul_percent(uint64_t bytes, unsigned percent)
{
    return bytes / 100 * percent + bytes % 100 * percent / 100;
}

static set_budget budget_of(const sgfp4_model_open_options *o, uint64_t index_bytes)
{
    set_budget b = {0};
    b.header_bytes = o->limits.max_header_bytes ? o->limits.max_header_bytes
                                                : SGFP4_DEFAULT_MAX_HEADER;
    b.tensors = o->max_tensors ? o->max_tensors : SGFP4_MODEL_DEFAULT_MAX_TENSORS;
    b.decompressed = o->max_decompressed_bytes ? o->max_decompressed_bytes
                                               : SGFP4_MODEL_DEFAULT_MAX_DECOMPRESSED;
    unsigned percent = o->max_temp_space_percent ? o->max_temp_space_percent
                                                 : SGFP4_MODEL_DEFAULT_TEMP_SPACE_PERCENT;
    if (percent > 100)
        percent = 100;
    struct statvfs vfs;
    if (statvfs(sgfp4_temp_dir(o->temp_dir), &vfs) == 0 && vfs.f_frsize > 0) {
        const uint64_t free_bytes = (uint64_t)vfs.f_bavail > UINT64_MAX / vfs.f_frsize
                                        ? UINT64_MAX
                                        : (uint64_t)vfs.f_bavail * vfs.f_frsize;
        const uint64_t space = sat_mul_percent(free_bytes, percent);
        if (space < b.decompressed)
            b.decompressed = space;
    }
    b.used_header = index_bytes;
    return b;
}

/* What is left of a budget, at least 1 (0 would mean "the default" to the open). */
static uint64_t left(uint64_t all, uint64_t used) { return used < all ? all - used : 1; }

/* The options shard k opens with: the caller's, with what is left of the set's budget. */
static sgfp4_model_open_options shard_options(const sgfp4_model_open_options *o,
                                              const set_budget *b)
{
    sgfp4_model_open_options s = *o;
    s.limits.max_header_bytes = left(b->header_bytes, b->used_header);
    s.max_tensors = left(b->tensors, b->used_tensors);
    s.max_decompressed_bytes = left(b->decompressed, b->used_decompressed);
    return s;
}

/* Appends to a shard's LIMIT message what the files before it used (the limits are the
 * set's); diag messages are short, so this is terse. */
static void note_set_budget(sgfp4_diag *diag, const set_budget *b)
{
    if (!diag)
        return;
    const size_t used = strlen(diag->message);
    snprintf(diag->message + used, sizeof diag->message - used,
             " (counted over the set: %llu header bytes, %llu tensors, %llu decompressed bytes "
             "before it)", (unsigned long long)b->used_header,
             (unsigned long long)b->used_tensors, (unsigned long long)b->used_decompressed);
}

/* After a shard opened: its use counted, and the set's totals checked (a shard within what
 * was left of a budget of 1 may still pass it). */
static sgfp4_status charge_shard(set_budget *b, const sgfp4_model *shard, const char *name,
                                 sgfp4_diag *diag)
{
    const set_budget before = *b;
    b->used_header += shard->data_offset - 8;
    b->used_tensors += shard->count;
    if (shard->compressed)
        b->used_decompressed += shard->size;
    const char *what = NULL;
    uint64_t used = 0, all = 0;
    if (b->used_header > b->header_bytes)
        what = "header bytes", used = b->used_header, all = b->header_bytes;
    else if (b->used_tensors > b->tensors)
        what = "tensors", used = b->used_tensors, all = b->tensors;
    else if (b->used_decompressed > b->decompressed)
        what = "decompressed bytes", used = b->used_decompressed, all = b->decompressed;
    if (!what)
        return SGFP4_OK;
    const sgfp4_status s = sgfp4_fail(diag, SGFP4_ERR_LIMIT, -1, -1, -1,
                                      "shard '%.80s': the set reaches %llu %s, more than its "
                                      "limit of %llu", name, (unsigned long long)used, what,
                                      (unsigned long long)all);
    note_set_budget(diag, &before);
    return s;
}

static sgfp4_status open_shards(set_build *b, const sgfp4_model_open_options *options,
                                uint64_t index_bytes)
{
    sgfp4_diag *diag = b->diag;
    sgfp4_model *set = b->set;
    sgfp4_model_open_options defaults;
    if (!options) {
        sgfp4_model_open_options_init(&defaults);
        options = &defaults;
    }
    set_budget budget = budget_of(options, index_bytes);
    const char *slash = strrchr(b->path, '/');
    const size_t dir = slash ? (size_t)(slash - b->path) + 1 : 0; /* keeps the '/' */
    for (size_t k = 0; k < set->shard_count; k++) {
        const size_t len = dir + strlen(set->shard_names[k]) + 1;
        char *path = malloc(len);
        if (!path)
            return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
        snprintf(path, len, "%.*s%s", (int)dir, b->path, set->shard_names[k]);
        const sgfp4_model_open_options within = shard_options(options, &budget);
        sgfp4_status s = sgfp4_model_open_file(path, &set->shards[k], &within, diag);
        free(path);
        if (s != SGFP4_OK) {
            name_the_shard(diag, set->shard_names[k]);
            if (s == SGFP4_ERR_LIMIT)
                note_set_budget(diag, &budget);
            return s;
        }
        sgfp4_model *shard = set->shards[k];
        if ((s = charge_shard(&budget, shard, set->shard_names[k], diag)) != SGFP4_OK)
            return s;
        if (k > 0 && shard->quantized != set->shards[0]->quantized)
            return INDEX_FAIL(diag,
                              "shard '%.80s' has %s sgfp4 manifest and shard '%.80s' has %s: a "
                              "set is quantized in every shard or in none", set->shard_names[0],
                              shard->quantized ? "no" : "an", set->shard_names[k],
                              shard->quantized ? "one" : "none");
        for (size_t t = 0; t < shard->count; t++)
            shard->entries[t].pub.shard = k;
        if (shard->count > SIZE_MAX / sizeof *set->refs - set->count)
            return sgfp4_fail(diag, SGFP4_ERR_LIMIT, -1, -1, -1, "too many tensors");
        set->count += shard->count;
        set->size += shard->size;
        set->compressed = set->compressed || shard->compressed;
    }
    set->quantized = set->shards[0]->quantized;
    return SGFP4_OK;
}

/* The tensor table (shard order), the name index, and the checks against the weight_map. */
static sgfp4_status check_tensors(set_build *b, const sgfp4_model_open_options *options,
                                  uint64_t total_size, bool has_total)
{
    sgfp4_diag *diag = b->diag;
    sgfp4_model *set = b->set;
    set->refs = malloc((set->count ? set->count : 1) * sizeof *set->refs);
    if (!set->refs)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    size_t n = 0;
    uint64_t data_bytes = 0;
    for (size_t k = 0; k < set->shard_count; k++) {
        const sgfp4_model *shard = set->shards[k];
        data_bytes += shard->size - shard->data_offset;
        for (size_t t = 0; t < shard->count; t++)
            set->refs[n++] = &shard->entries[t].pub;
    }
    sgfp4_status s = sgfp4_model_index_names(set, diag);
    if (s != SGFP4_OK)
        return s;
    for (size_t k = 1; k < set->count; k++) {
        const sgfp4_model_tensor *a = sgfp4_model_tensor_sorted(set, k - 1);
        const sgfp4_model_tensor *c = sgfp4_model_tensor_sorted(set, k);
        if (strcmp(a->name, c->name) == 0)
            return sgfp4_fail(diag, SGFP4_ERR_MODEL_DUPLICATE, -1, -1, -1,
                              "tensor '%.64s' is in two shards: '%.64s' and '%.64s'", a->name,
                              set->shard_names[a->shard], set->shard_names[c->shard]);
    }
    /* Every shard tensor is in the weight_map with its shard ... */
    for (size_t k = 0; k < set->count; k++) {
        const sgfp4_model_tensor *t = set->refs[k];
        const char *file = json_string_value(json_object_get(b->weight_map, t->name));
        if (!file)
            return INDEX_FAIL(diag,
                              "shard '%.64s' holds tensor '%.64s', which the weight_map does not "
                              "list", set->shard_names[t->shard], t->name);
        if (strcmp(file, set->shard_names[t->shard]) != 0)
            return INDEX_FAIL(diag, "tensor '%.64s' is in shard '%.64s' but the weight_map says "
                              "'%.64s'", t->name, set->shard_names[t->shard], file);
    }
    /* ... and every weight_map entry is such a tensor (the names are distinct). */
    if (json_object_size(b->weight_map) != set->count) {
        const char *tensor;
        json_t *value;
        json_object_foreach(b->weight_map, tensor, value) {
            if (!sgfp4_model_tensor_find(set, tensor))
                return INDEX_FAIL(diag,
                                  "the weight_map lists tensor '%.64s' in shard '%.64s', which "
                                  "has no tensor of that name", tensor, json_string_value(value));
        }
        return sgfp4_fail(diag, SGFP4_ERR_INTERNAL, -1, -1, -1, "weight_map count mismatch");
    }
    if (has_total && total_size != data_bytes && !(options && options->ignore_index_total_size))
        return INDEX_FAIL(diag,
                          "index '%.120s': metadata.total_size is %llu but the shards hold %llu "
                          "data bytes", b->path, (unsigned long long)total_size,
                          (unsigned long long)data_bytes);
    return SGFP4_OK;
}

/* The set's __metadata__: every shard's keys (but the per-shard sgfp4 manifests), each once,
 * in shard order; a key whose values differ keeps the first and is noted, so that writers of
 * one file refuse rather than drop a value. */
static sgfp4_status merge_metadata(set_build *b)
{
    sgfp4_diag *diag = b->diag;
    sgfp4_model *set = b->set;
    size_t total = 0;
    for (size_t k = 0; k < set->shard_count; k++)
        total += set->shards[k]->meta_count;
    set->meta_keys = calloc(total ? total : 1, sizeof *set->meta_keys);
    set->meta_values = calloc(total ? total : 1, sizeof *set->meta_values);
    json_t *seen = json_object(); /* key -> index in the merged arrays */
    size_t *first = calloc(total ? total : 1, sizeof *first); /* the shard a key came from */
    sgfp4_status s = SGFP4_OK;
    if (!set->meta_keys || !set->meta_values || !seen || !first)
        s = sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    for (size_t k = 0; s == SGFP4_OK && k < set->shard_count; k++) {
        const sgfp4_model *shard = set->shards[k];
        for (size_t i = 0; s == SGFP4_OK && i < shard->meta_count; i++) {
            const char *key = shard->meta_keys[i], *value = shard->meta_values[i];
            if (strcmp(key, "sgfp4") == 0)
                continue;
            const json_t *at = json_object_get(seen, key);
            if (at) {
                const size_t j = (size_t)json_integer_value(at);
                if (strcmp(set->meta_values[j], value) != 0 && !set->meta_conflict) {
                    char text[256];
                    snprintf(text, sizeof text,
                             "shards '%.64s' and '%.64s' disagree on __metadata__['%.48s']",
                             set->shard_names[first[j]], set->shard_names[k], key);
                    if (!(set->meta_conflict = strdup(text)))
                        s = sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
                }
                continue;
            }
            set->meta_keys[set->meta_count] = strdup(key);
            set->meta_values[set->meta_count] = strdup(value);
            if (!set->meta_keys[set->meta_count] || !set->meta_values[set->meta_count] ||
                json_object_set_new(seen, key, json_integer((json_int_t)set->meta_count)) != 0) {
                free(set->meta_keys[set->meta_count]);
                free(set->meta_values[set->meta_count]);
                s = sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
            } else {
                first[set->meta_count++] = k;
            }
        }
    }
    free(first);
    json_decref(seen);
    return s;
}

sgfp4_status sgfp4_model_open_set(const char *path, int fd, uint64_t size, sgfp4_model **out,
                                  const sgfp4_model_open_options *options, sgfp4_diag *diag)
{
    *out = NULL;
    const uint64_t limit = options && options->limits.max_header_bytes
                               ? options->limits.max_header_bytes
                               : SGFP4_DEFAULT_MAX_HEADER;
    char *text = NULL;
    sgfp4_status s = read_index(path, fd, size, limit, &text, diag);
    if (s != SGFP4_OK)
        return s;
    set_build b = {calloc(1, sizeof(sgfp4_model)), NULL, NULL, path, diag};
    uint64_t total_size = 0;
    bool has_total = false;
    if (!b.set)
        s = sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    if (s == SGFP4_OK)
        s = parse_index(&b, text, (size_t)size, &total_size, &has_total);
    free(text);
    if (s == SGFP4_OK)
        s = collect_shards(&b);
    if (s == SGFP4_OK)
        s = open_shards(&b, options, size);
    if (s == SGFP4_OK)
        s = check_tensors(&b, options, total_size, has_total);
    if (s == SGFP4_OK)
        s = merge_metadata(&b);
    if (s == SGFP4_OK) {
        /* Kept for the writers: the document without its weight_map, which they rebuild. */
        json_object_del(b.root, "weight_map");
        b.set->index_json = json_dumps(b.root, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!b.set->index_json)
            s = sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    }
    json_decref(b.root);
    if (s != SGFP4_OK) {
        if (b.set)
            sgfp4_model_set_free(b.set);
        return s;
    }
    *out = b.set;
    return SGFP4_OK;
}

void sgfp4_model_set_free(sgfp4_model *set)
{
    for (size_t k = 0; set->shards && k < set->shard_count; k++) {
        sgfp4_model_file_free(set->shards[k]);
        free(set->shard_names[k]);
    }
    free(set->shards);
    free(set->shard_names);
    free((void *)set->refs);
    free(set->by_name);
    for (size_t k = 0; k < set->meta_count; k++) {
        free(set->meta_keys[k]);
        free(set->meta_values[k]);
    }
    free(set->meta_keys);
    free(set->meta_values);
    free(set->index_json);
    free(set->meta_conflict);
    free(set->file_path);
    free(set);
}

sgfp4_status sgfp4_model_check_one_file(const sgfp4_model *m, sgfp4_diag *diag)
{
    if (m && m->meta_conflict)
        return sgfp4_fail(diag, SGFP4_ERR_MODEL_INDEX, -1, -1, -1,
                          "%s: one output file cannot keep both values (write a set instead)",
                          m->meta_conflict);
    return SGFP4_OK;
}
