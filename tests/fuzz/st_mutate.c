/* The structure-aware safetensors mutator (st_mutate.h).
 * SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "st_mutate.h"

typedef struct rng {
    uint64_t s;
} rng;

static uint32_t next(rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return (uint32_t)((r->s * UINT64_C(2685821657736338717)) >> 32);
}
static uint32_t below(rng *r, uint32_t n) { return n ? next(r) % n : 0; }

/* The header and a copy of the data section. */
typedef struct parsed {
    json_t *root;
    uint8_t *data;
    size_t data_size;
} parsed;

/* Dtypes with their sizes (0: not one the format knows, for odd-dtype tensors). */
static const struct {
    const char *name;
    unsigned size;
} dtypes[] = {{"BOOL", 1}, {"U8", 1},   {"I8", 1},      {"F8_E4M3", 1}, {"F8_E5M2", 1},
              {"I16", 2},  {"U16", 2},  {"F16", 2},     {"BF16", 2},    {"I32", 4},
              {"U32", 4},  {"F32", 4},  {"I64", 8},     {"U64", 8},     {"F64", 8},
              {"F4", 0},   {"C64", 0},  {"f32", 0},     {"", 0},        {"F8_E8M0", 0}};
#define DTYPE_COUNT (sizeof dtypes / sizeof dtypes[0])
#define KNOWN_DTYPES 15

static bool parse(const uint8_t *file, size_t size, parsed *p)
{
    memset(p, 0, sizeof *p);
    if (size < 10)
        return false;
    uint64_t n = 0;
    for (int k = 7; k >= 0; k--)
        n = n << 8 | file[k];
    if (n > size - 8 || n > (1u << 20))
        return false;
    p->root = json_loadb((const char *)file + 8, (size_t)n, 0, NULL);
    if (!json_is_object(p->root)) {
        json_decref(p->root);
        return false;
    }
    p->data_size = size - 8 - (size_t)n;
    p->data = malloc(p->data_size ? p->data_size : 1);
    if (!p->data) {
        json_decref(p->root);
        return false;
    }
    memcpy(p->data, file + 8 + n, p->data_size);
    return true;
}

static void release(parsed *p)
{
    json_decref(p->root);
    free(p->data);
}

/* The names of the tensor entries (not __metadata__), in key order; *count of them. */
static const char **tensor_names(json_t *root, size_t *count)
{
    const char **names = malloc((json_object_size(root) + 1) * sizeof *names);
    *count = 0;
    const char *key;
    json_t *value;
    json_object_foreach(root, key, value) {
        if (strcmp(key, "__metadata__") != 0)
            names[(*count)++] = key;
    }
    return names;
}

/* The entry's [begin, end) if it is a valid range of the data. */
static bool range_of(const parsed *p, json_t *entry, uint64_t *begin, uint64_t *end)
{
    json_t *o = json_object_get(entry, "data_offsets");
    if (!json_is_array(o) || json_array_size(o) != 2 || !json_is_integer(json_array_get(o, 0)) ||
        !json_is_integer(json_array_get(o, 1)))
        return false;
    const json_int_t b = json_integer_value(json_array_get(o, 0));
    const json_int_t e = json_integer_value(json_array_get(o, 1));
    if (b < 0 || e < b || (uint64_t)e > p->data_size)
        return false;
    *begin = (uint64_t)b;
    *end = (uint64_t)e;
    return true;
}

static void set_range(json_t *entry, uint64_t begin, uint64_t end)
{
    json_object_set_new(entry, "data_offsets", json_pack("[II]", (json_int_t)begin,
                                                          (json_int_t)end));
}

/* Rebuilds the root with its keys in `order` (indices into the key list). */
static void reorder_keys(parsed *p, const size_t *order)
{
    const size_t n = json_object_size(p->root);
    const char **keys = malloc(n * sizeof *keys);
    json_t **values = malloc(n * sizeof *values);
    size_t k = 0;
    const char *key;
    json_t *value;
    json_object_foreach(p->root, key, value) {
        keys[k] = key;
        values[k++] = value;
    }
    json_t *root = json_object();
    for (k = 0; k < n; k++)
        json_object_set(root, keys[order[k]], values[order[k]]);
    free(keys);
    free(values);
    json_decref(p->root);
    p->root = root;
}

static void shuffle(rng *r, size_t *order, size_t n)
{
    for (size_t k = 0; k < n; k++)
        order[k] = k;
    for (size_t k = n; k > 1; k--) {
        const size_t j = below(r, (uint32_t)k), t = order[k - 1];
        order[k - 1] = order[j];
        order[j] = t;
    }
}

static bool shuffle_keys(parsed *p, rng *r)
{
    const size_t n = json_object_size(p->root);
    if (n < 2)
        return false;
    size_t *order = malloc(n * sizeof *order);
    shuffle(r, order, n);
    reorder_keys(p, order);
    free(order);
    return true;
}

/* __metadata__ to a random place among the keys (created if missing). */
static bool move_metadata(parsed *p, rng *r)
{
    json_t *meta = json_object_get(p->root, "__metadata__");
    if (!meta)
        json_object_set_new(p->root, "__metadata__", json_pack("{ss}", "format", "pt"));
    const size_t n = json_object_size(p->root);
    size_t *order = malloc(n * sizeof *order), k = 0, meta_at = 0;
    const char *key;
    json_t *value;
    json_object_foreach(p->root, key, value) {
        if (strcmp(key, "__metadata__") == 0)
            meta_at = k;
        k++;
    }
    const size_t place = below(r, (uint32_t)n);
    for (size_t i = 0, j = 0; i < n; i++) {
        if (i == place)
            order[i] = meta_at;
        else {
            if (j == meta_at)
                j++;
            order[i] = j++;
        }
    }
    reorder_keys(p, order);
    free(order);
    return true;
}

/* The tensors' data in a random order, offsets rewritten: a valid file stays valid, with
 * its key order now unrelated to its data order. */
static bool reorder_data(parsed *p, rng *r)
{
    size_t n;
    const char **names = tensor_names(p->root, &n);
    uint64_t *begin = malloc((n + 1) * sizeof *begin), *end = malloc((n + 1) * sizeof *end);
    bool ok = n >= 2;
    for (size_t k = 0; ok && k < n; k++)
        ok = range_of(p, json_object_get(p->root, names[k]), &begin[k], &end[k]);
    uint8_t *data = ok ? malloc(p->data_size + 1) : NULL;
    if (ok && data) {
        size_t *order = malloc(n * sizeof *order);
        shuffle(r, order, n);
        uint64_t at = 0;
        for (size_t i = 0; i < n && at <= p->data_size; i++) {
            const size_t k = order[i];
            const uint64_t len = end[k] - begin[k];
            if (at + len > p->data_size)
                break; /* overlapping ranges: what fits */
            memcpy(data + at, p->data + begin[k], (size_t)len);
            set_range(json_object_get(p->root, names[k]), at, at + len);
            at += len;
        }
        free(order);
        free(p->data);
        p->data = data;
        p->data_size = (size_t)at;
    } else {
        free(data);
        ok = false;
    }
    free(begin);
    free(end);
    free(names);
    return ok;
}

static uint64_t some_boundary(const parsed *p, rng *r)
{
    size_t n;
    const char **names = tensor_names(p->root, &n);
    uint64_t at = below(r, 3) == 0 ? p->data_size : 0;
    if (n) {
        uint64_t b, e;
        if (range_of(p, json_object_get(p->root, names[below(r, (uint32_t)n)]), &b, &e))
            at = below(r, 2) ? b : e;
    }
    free(names);
    return at;
}

static void unique_name(parsed *p, rng *r, char *name, size_t size)
{
    do
        snprintf(name, size, "%s.%u", below(r, 2) ? "z" : "layers.0.extra", below(r, 1000));
    while (json_object_get(p->root, name));
}

/* A zero-size tensor of any dtype (odd ones too) at a boundary of the data. */
static bool add_zero_size(parsed *p, rng *r)
{
    char name[48];
    unique_name(p, r, name, sizeof name);
    json_t *shape = json_array();
    const unsigned rank = 1 + below(r, 3), zero = below(r, rank);
    for (unsigned d = 0; d < rank; d++)
        json_array_append_new(shape, json_integer(d == zero ? 0 : 1 + below(r, 70)));
    const uint64_t at = some_boundary(p, r);
    json_object_set_new(p->root, name,
                        json_pack("{sssos[II]}", "dtype", dtypes[below(r, DTYPE_COUNT)].name,
                                  "shape", shape, "data_offsets", (json_int_t)at,
                                  (json_int_t)at));
    return true;
}

/* A tensor with data appended to the data section, of a known dtype (or an odd one). */
static bool add_tensor(parsed *p, rng *r)
{
    const unsigned dt = below(r, 8) == 0 ? below(r, DTYPE_COUNT) : below(r, KNOWN_DTYPES);
    const unsigned size = dtypes[dt].size ? dtypes[dt].size : 1 + below(r, 8);
    const uint64_t rows = 1 + below(r, 40), cols = 1 + below(r, 40); /* files stay small */
    const bool matrix = below(r, 2);
    const uint64_t bytes = (matrix ? rows * cols : cols) * size;
    if (p->data_size + bytes > (1u << 22))
        return false;
    uint8_t *data = realloc(p->data, p->data_size + bytes + 1);
    if (!data)
        return false;
    p->data = data;
    for (uint64_t k = 0; k < bytes; k++)
        data[p->data_size + k] = (uint8_t)(size >= 2 && k % size == size - 1 ? 0x3C : next(r));
    char name[48];
    unique_name(p, r, name, sizeof name);
    json_t *shape = matrix ? json_pack("[II]", (json_int_t)rows, (json_int_t)cols)
                           : json_pack("[I]", (json_int_t)cols);
    json_object_set_new(p->root, name,
                        json_pack("{sssos[II]}", "dtype", dtypes[dt].name, "shape", shape,
                                  "data_offsets", (json_int_t)p->data_size,
                                  (json_int_t)(p->data_size + bytes)));
    p->data_size += (size_t)bytes;
    return true;
}

static json_t *random_entry(parsed *p, rng *r)
{
    size_t n;
    const char **names = tensor_names(p->root, &n);
    json_t *e = n ? json_object_get(p->root, names[below(r, (uint32_t)n)]) : NULL;
    free(names);
    return json_is_object(e) ? e : NULL;
}

static bool shift_offsets(parsed *p, rng *r)
{
    json_t *e = random_entry(p, r);
    json_t *o = e ? json_object_get(e, "data_offsets") : NULL;
    if (!json_is_array(o) || json_array_size(o) != 2)
        return false;
    static const int deltas[] = {-1, 1, -2, 2, -4, 4, -8, 8, -16, 16, -64, 64, 4096, -4096};
    const int delta = below(r, 4) == 0 ? (int)below(r, 100000) - 50000
                                       : deltas[below(r, sizeof deltas / sizeof deltas[0])];
    const unsigned which = below(r, 3); /* begin, end, both */
    for (unsigned k = 0; k < 2; k++) {
        if (which != 2 && which != k)
            continue;
        json_t *v = json_array_get(o, k);
        const json_int_t now = json_is_integer(v) ? json_integer_value(v) : 0;
        /* now + delta, kept within [0, INT64_MAX] without overflowing */
        const json_int_t moved = delta < 0 ? (now < -delta ? 0 : now + delta)
                                 : now > INT64_MAX - delta ? INT64_MAX : now + delta;
        json_array_set_new(o, k, json_integer(moved < 0 ? 0 : moved));
    }
    return true;
}

/* Two tensors trade their data ranges (and, half the time, shapes and dtypes too, so that the
 * file stays valid when the sizes agree). */
static bool swap_offsets(parsed *p, rng *r)
{
    size_t n;
    const char **names = tensor_names(p->root, &n);
    bool ok = n >= 2;
    if (ok) {
        const size_t a = below(r, (uint32_t)n);
        size_t b = below(r, (uint32_t)n - 1);
        b += b >= a;
        json_t *x = json_object_get(p->root, names[a]), *y = json_object_get(p->root, names[b]);
        ok = json_is_object(x) && json_is_object(y);
        const char *fields[3] = {"data_offsets", "shape", "dtype"};
        for (unsigned f = 0; ok && f < (below(r, 2) ? 3u : 1u); f++) {
            json_t *vx = json_incref(json_object_get(x, fields[f]));
            json_t *vy = json_incref(json_object_get(y, fields[f]));
            if (vx && vy) {
                json_object_set_new(x, fields[f], vy);
                json_object_set_new(y, fields[f], vx);
            } else {
                json_decref(vx);
                json_decref(vy);
            }
        }
    }
    free(names);
    return ok;
}

static bool reshape(parsed *p, rng *r)
{
    json_t *e = random_entry(p, r);
    json_t *s = e ? json_object_get(e, "shape") : NULL;
    if (!json_is_array(s))
        return false;
    const size_t rank = json_array_size(s);
    json_t *t = json_array();
    switch (below(r, 8)) {
    case 0: /* transposed: the same size */
        for (size_t d = rank; d > 0; d--)
            json_array_append(t, json_array_get(s, d - 1));
        break;
    case 1: /* a leading 1 */
        json_array_append_new(t, json_integer(1));
        json_array_extend(t, s);
        break;
    case 2: /* merged into one dimension */
    {
        uint64_t product = 1; /* wraps for absurd shapes: any number will do */
        for (size_t d = 0; d < rank; d++)
            product *= (uint64_t)json_integer_value(json_array_get(s, d));
        json_array_append_new(t, json_integer((json_int_t)(product & INT64_MAX)));
        break;
    }
    case 3: /* one dimension 0 */
        json_array_extend(t, s);
        if (rank)
            json_array_set_new(t, below(r, (uint32_t)rank), json_integer(0));
        break;
    case 4: /* one dimension doubled or huge */
        json_array_extend(t, s);
        if (rank) {
            const size_t d = below(r, (uint32_t)rank);
            const uint64_t v = (uint64_t)json_integer_value(json_array_get(s, d));
            /* doubled with the sign bit cleared (no signed overflow), or 2^32 */
            json_array_set_new(t, d, json_integer(below(r, 2) ? (json_int_t)((2 * v) & INT64_MAX)
                                                              : (json_int_t)1 << 32));
        }
        break;
    case 5: /* rank 0 */
        break;
    case 6: /* rank past the reader's limit */
        for (unsigned d = 0; d < 17; d++)
            json_array_append_new(t, json_integer(1));
        break;
    default: /* a negative or non-integer dimension */
        json_array_extend(t, s);
        json_array_append_new(t, below(r, 2) ? json_integer(-1) : json_real(2.5));
    }
    json_object_set_new(e, "shape", t);
    return true;
}

static bool retype(parsed *p, rng *r)
{
    json_t *e = random_entry(p, r);
    if (!e)
        return false;
    const char *now = json_string_value(json_object_get(e, "dtype"));
    unsigned size = 0;
    for (unsigned k = 0; now && k < KNOWN_DTYPES; k++)
        if (strcmp(now, dtypes[k].name) == 0)
            size = dtypes[k].size;
    unsigned pick = below(r, DTYPE_COUNT);
    if (size && below(r, 2)) /* another dtype of the same size: still valid */
        for (unsigned tries = 0; tries < 32 && dtypes[pick].size != size; tries++)
            pick = below(r, KNOWN_DTYPES);
    json_object_set_new(e, "dtype", json_string(dtypes[pick].name));
    return true;
}

static bool nest_metadata(parsed *p, rng *r)
{
    json_t *meta = json_object_get(p->root, "__metadata__");
    switch (below(r, 5)) {
    case 0: /* a value that is not a string */
        if (!json_is_object(meta))
            return false;
        json_object_set_new(meta, "nested", below(r, 2) ? json_pack("{s{s[i]}}", "a", "b", 1)
                                                        : json_pack("[s]", "x"));
        return true;
    case 1: /* __metadata__ inside a tensor entry */
    {
        json_t *e = random_entry(p, r);
        if (!e)
            return false;
        json_object_set_new(e, "__metadata__", json_pack("{ss}", "k", "v"));
        return true;
    }
    case 2: /* not an object at all */
        json_object_set_new(p->root, "__metadata__",
                            below(r, 2) ? json_string("x") : json_pack("[{}]"));
        return true;
    case 3: /* deep nesting */
    {
        json_t *v = json_string("deep");
        for (unsigned d = 0; d < 2 + below(r, 8); d++)
            v = json_pack("[o]", v);
        json_object_set_new(p->root, below(r, 2) ? "__metadata__" : "deep", v);
        return true;
    }
    default: /* many keys, long values, escapes */
        if (!json_is_object(meta)) {
            meta = json_object();
            json_object_set_new(p->root, "__metadata__", meta);
        }
        for (unsigned k = 0, n = 1 + below(r, 40); k < n; k++) {
            char key[24];
            snprintf(key, sizeof key, "k\"%u\\\xc3\xa9", below(r, 100000));
            json_object_set_new(meta, key, json_string(below(r, 2) ? "" : "v\n\t\"\\"));
        }
        return true;
    }
}

/* The sgfp4 manifest's fields, or a new manifest naming a tensor. */
static bool mutate_manifest(parsed *p, rng *r)
{
    json_t *meta = json_object_get(p->root, "__metadata__");
    const char *text = json_is_object(meta) ? json_string_value(json_object_get(meta, "sgfp4"))
                                            : NULL;
    json_t *m = text ? json_loads(text, 0, NULL) : NULL;
    json_t *tensors = json_object_get(m, "tensors");
    if (!json_is_object(tensors) || json_object_size(tensors) == 0) {
        json_decref(m);
        json_t *e = random_entry(p, r);
        if (!e)
            return false;
        size_t n;
        const char **names = tensor_names(p->root, &n);
        const char *name = names[below(r, (uint32_t)n)];
        m = json_pack("{sssis{s{sss[ii]s[ii]ssssso}}}", "format", "sgfp4-manifest", "version", 1,
                      "tensors", name, "profile", below(r, 2) ? "v1" : "v2", "shape", 64, 64,
                      "original_shape", 64, 64, "dtype", "F32", "sha256",
                      "0000000000000000000000000000000000000000000000000000000000000000",
                      "encoder", json_object());
        free(names);
    } else {
        const char *key;
        json_t *entry = NULL;
        size_t pick = below(r, (uint32_t)json_object_size(tensors)), k = 0;
        json_object_foreach(tensors, key, entry) {
            if (k++ == pick)
                break;
        }
        if (json_is_object(entry)) {
            json_t *shape = json_object_get(entry, "shape");
            json_t *orig = json_object_get(entry, "original_shape");
            switch (below(r, 6)) {
            case 0: /* [O, I] -> [I, O] */
                if (json_is_array(shape) && json_array_size(shape) == 2)
                    json_object_set_new(entry, "shape",
                                        json_pack("[OO]", json_array_get(shape, 1),
                                                  json_array_get(shape, 0)));
                break;
            case 1: /* another original shape of the same size */
                if (json_is_array(orig)) {
                    json_t *t = json_pack("[i]", 1);
                    json_array_extend(t, orig);
                    json_object_set_new(entry, "original_shape", t);
                }
                break;
            case 2:
                json_object_set_new(entry, "profile",
                                    json_string(below(r, 2) ? "v1" : below(r, 2) ? "v2" : "v3"));
                break;
            case 3:
                json_object_set_new(entry, "dtype",
                                    json_string(dtypes[below(r, DTYPE_COUNT)].name));
                break;
            case 4: /* a tensor the header does not have, or the entry gone */
                if (below(r, 2))
                    json_object_set(tensors, "missing.weight", entry);
                else
                    json_object_del(tensors, key);
                break;
            default:
                json_object_set_new(entry, "encoder", below(r, 2) ? json_string("x")
                                                                  : json_object());
            }
        }
    }
    char *dumped = json_dumps(m, JSON_COMPACT);
    json_decref(m);
    if (!dumped)
        return false;
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(p->root, "__metadata__", meta);
    }
    json_object_set_new(meta, "sgfp4", json_string(dumped));
    free(dumped);
    return true;
}

/* Writes the file: 8-byte length, the compact header (a key duplicated in the text when
 * asked: jansson cannot produce one), spaces, the data. */
static size_t emit(const parsed *p, rng *r, bool duplicate_key, uint8_t *out, size_t max_size)
{
    char *text = json_dumps(p->root, JSON_COMPACT);
    if (!text)
        return 0;
    size_t len = strlen(text);
    char *dup = NULL;
    if (duplicate_key && len > 2) {
        /* the first key of an entry, or the first top-level key, once more */
        const char *at = below(r, 2) ? strstr(text, "{\"dtype\"") : text;
        const char *key = at ? at + 1 : NULL, *colon = key ? strstr(key, "\":") : NULL;
        if (colon) {
            const char *value_end = strchr(colon, ',');
            const size_t key_len = (size_t)(colon + 2 - key);
            const size_t value_len = value_end ? (size_t)(value_end - colon - 2) : 0;
            if (value_end && value_len < 64) {
                dup = malloc(len + key_len + value_len + 2);
                const size_t head = (size_t)(key - text);
                memcpy(dup, text, head);
                memcpy(dup + head, key, key_len + value_len);
                dup[head + key_len + value_len] = ',';
                memcpy(dup + head + key_len + value_len + 1, key, len - head);
                len += key_len + value_len + 1;
                dup[len] = '\0';
            }
        }
    }
    const char *header = dup ? dup : text;
    const size_t pad = below(r, 4) == 0 ? below(r, 64) : (8 - (8 + len) % 8) % 8;
    const size_t total = 8 + len + pad + p->data_size;
    size_t written = 0;
    if (total <= max_size) {
        const uint64_t n = len + pad;
        for (int k = 0; k < 8; k++)
            out[k] = (uint8_t)(n >> (8 * k));
        memcpy(out + 8, header, len);
        memset(out + 8 + len, ' ', pad);
        memcpy(out + 8 + len + pad, p->data, p->data_size);
        written = total;
    }
    free(text);
    free(dup);
    return written;
}

size_t st_mutate(uint8_t *file, size_t size, size_t max_size, uint32_t seed)
{
    parsed p;
    if (!parse(file, size, &p))
        return 0;
    rng r = {UINT64_C(0x9E3779B97F4A7C15) ^ ((uint64_t)seed << 17) ^ seed};
    next(&r);
    bool duplicate = false, changed = false;
    for (unsigned steps = 1 + below(&r, 3), k = 0; k < steps; k++) {
        switch (below(&r, 13)) {
        case 0: changed |= shuffle_keys(&p, &r); break;
        case 1: changed |= move_metadata(&p, &r); break;
        case 2:
        case 3: changed |= reorder_data(&p, &r); break;
        case 4: changed |= add_zero_size(&p, &r); break;
        case 5: changed |= add_tensor(&p, &r); break;
        case 6: changed |= shift_offsets(&p, &r); break;
        case 7: changed |= swap_offsets(&p, &r); break;
        case 8: changed |= reshape(&p, &r); break;
        case 9: changed |= retype(&p, &r); break;
        case 10: changed |= nest_metadata(&p, &r); break;
        case 11: changed |= mutate_manifest(&p, &r); break;
        default:
            duplicate = true;
            changed = true;
        }
    }
    const size_t n = changed ? emit(&p, &r, duplicate, file, max_size) : 0;
    release(&p);
    return n;
}
