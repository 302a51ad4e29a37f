/* The API conventions every options-taking call shares (docs/api.md, "Conventions"): options
 * are made by sgfp4_<x>_options_init() only, which passes the caller's sizeof to
 * sgfp4_<x>_options_init_sized(): a caller built against an older header (a shorter struct)
 * gets the defaults of the fields it has and no byte written past its struct; NULL means the
 * defaults, an unknown struct_size is SGFP4_ERR_ARGUMENT, a caller's older layout keeps the
 * defaults of the fields it lacks; `threads` 0 means 1 and above SGFP4_MAX_THREADS is
 * refused; a too-small output is SGFP4_ERR_DST_TOO_SMALL.
 * SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/options.h"
#include "sgfp4.h"
#include "sgfp4_config.h"
#include "sgfp4_model.h"
#include "sgfp4_vulkan.h"

/* A 1x1 v1 container: one block, scale 1.0, bias 0, code 1 -> 1.0f. */
static unsigned char container[2056];

static int setup(void **state)
{
    (void)state;
    const uint32_t header = 0x3C00u << 16;
    memcpy(container, &header, 4);
    container[8] = 0x01;
    return 0;
}

static void init_sets_struct_size_and_defaults(void **state)
{
    (void)state;
    sgfp4_open_options oo;
    memset(&oo, 0x5A, sizeof oo);
    sgfp4_open_options_init(&oo);
    assert_int_equal(oo.struct_size, sizeof oo);
    assert_int_equal(oo.limits.max_elements, 0);
    assert_null(oo.allocator.alloc);

    sgfp4_decode_options d;
    memset(&d, 0x5A, sizeof d);
    sgfp4_decode_options_init(&d);
    assert_int_equal(d.struct_size, sizeof d);
    assert_int_equal(d.backend, SGFP4_BACKEND_AUTO);
    assert_int_equal(d.threads, 0);
    assert_int_equal(d.store, SGFP4_STORE_AUTO);

    sgfp4_encode_options e;
    memset(&e, 0x5A, sizeof e);
    sgfp4_encode_options_init(&e);
    assert_int_equal(e.struct_size, sizeof e);
    assert_int_equal(e.profile, SGFP4_PROFILE_V2);
    assert_true(e.target_bpw == 4.5);
    assert_int_equal(e.threads, 0);

    sgfp4_model_open_options mo;
    sgfp4_model_open_options_init(&mo);
    assert_int_equal(mo.struct_size, sizeof mo);
    assert_null(mo.temp_dir);
    sgfp4_model_write_options mw;
    sgfp4_model_write_options_init(&mw);
    assert_int_equal(mw.struct_size, sizeof mw);
    assert_null(mw.decode);
    assert_null(mw.progress);
    sgfp4_output_options oo2;
    memset(&oo2, 0x5A, sizeof oo2);
    assert_int_equal(sgfp4_output_options_init(&oo2), SGFP4_OK);
    assert_int_equal(oo2.struct_size, sizeof oo2);
    assert_int_equal(oo2.flags, 0);
    assert_null(oo2.inputs);
    assert_null(oo2.force_name);
    assert_int_equal(oo2.zstd_level, 0);

    sgfp4_vk_context_options vk;
    sgfp4_vk_context_options_init(&vk);
    assert_int_equal(vk.struct_size, sizeof vk);
    assert_int_equal(vk.device_index, -1);
    assert_int_equal(vk.flags, 0);

    sgfp4_matvec_options mv;
    memset(&mv, 0x5A, sizeof mv);
    assert_int_equal(sgfp4_matvec_options_init(&mv), SGFP4_OK);
    assert_int_equal(mv.struct_size, sizeof mv);
    assert_int_equal(mv.backend, SGFP4_BACKEND_AUTO);
    assert_int_equal(mv.threads, 0);
    assert_null(mv.pool);

    sgfp4_hessian_options ho;
    memset(&ho, 0x5A, sizeof ho);
    assert_int_equal(sgfp4_hessian_options_init(&ho), SGFP4_OK);
    assert_int_equal(ho.struct_size, sizeof ho);
    assert_true(ho.damping == 0.01);
    assert_int_equal(ho.threads, 0);
    assert_null(ho.allocator.alloc);

    /* init functions refuse NULL */
    assert_int_equal(sgfp4_open_options_init(NULL), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_decode_options_init(NULL), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_encode_options_init(NULL), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_open_options_init(NULL), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_write_options_init(NULL), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_output_options_init(NULL), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_vk_context_options_init(NULL), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_matvec_options_init(NULL), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_hessian_options_init(NULL), SGFP4_ERR_ARGUMENT);
}

/* ---- callers built against older headers ------------------------------------------------
 * Each struct below is an options struct as an earlier published header declared it (its
 * fields up to the first one appended later), written out here from that header, not from
 * the library's registry of layouts. */
typedef struct encode_options_before_metric {
    size_t struct_size;
    sgfp4_profile profile;
    sgfp4_policy policy;
    double target_bpw, delta, threshold;
    sgfp4_fit fit;
    unsigned threads;
    sgfp4_allocator allocator;
} encode_options_before_metric;

typedef struct encode_options_before_report {
    size_t struct_size;
    sgfp4_profile profile;
    sgfp4_policy policy;
    double target_bpw, delta, threshold;
    sgfp4_fit fit;
    unsigned threads;
    sgfp4_allocator allocator;
    sgfp4_error_metric metric;
    const float *column_importance;
    const float *row_importance;
} encode_options_before_report;

typedef struct matvec_options_before_pool {
    size_t struct_size;
    sgfp4_backend backend;
    unsigned threads;
} matvec_options_before_pool;

typedef struct matvec_options_before_fast {
    size_t struct_size;
    sgfp4_backend backend;
    unsigned threads;
    sgfp4_thread_pool *pool;
} matvec_options_before_fast;

typedef struct vk_matvec_options_before_fast {
    size_t struct_size;
    unsigned slices;
    unsigned flags;
} vk_matvec_options_before_fast;

typedef struct model_open_options_first {
    size_t struct_size;
    sgfp4_limits limits;
    const char *temp_dir;
    uint64_t max_decompressed_bytes;
} model_open_options_first;

typedef struct model_open_options_before_max_tensors {
    size_t struct_size;
    sgfp4_limits limits;
    const char *temp_dir;
    uint64_t max_decompressed_bytes;
    int ignore_index_total_size;
} model_open_options_before_max_tensors;

typedef struct model_open_options_before_copy {
    model_open_options_before_max_tensors before;
    uint64_t max_tensors;
    uint64_t max_decompression_ratio;
    unsigned max_temp_space_percent;
} model_open_options_before_copy;

typedef struct open_options_before_copy {
    size_t struct_size;
    sgfp4_limits limits;
    sgfp4_allocator allocator;
} open_options_before_copy;

typedef struct model_write_options_first {
    size_t struct_size;
    const char *temp_dir;
    void (*progress)(void *user, const sgfp4_model_progress *progress);
    void *progress_user;
    const sgfp4_dtype *decode_dtype;
    const sgfp4_decode_options *decode;
} model_write_options_first;

typedef struct model_write_options_before_limit {
    model_write_options_first first;
    void (*tensor_report)(void *user, const sgfp4_model_tensor_report *report);
    sgfp4_model_summary *summary;
} model_write_options_before_limit;

typedef struct model_write_options_before_importance {
    model_write_options_before_limit before;
    uint64_t max_output_elements;
} model_write_options_before_importance;

typedef struct model_write_options_before_cancel {
    model_write_options_before_importance before;
    const sgfp4_model *importance;
} model_write_options_before_cancel;

#define CANARY 0xA5
#define CANARY_BYTES 64

/* A caller's struct of `size` bytes followed by canaries, as its stack would hold it. */
typedef union caller_memory {
    max_align_t align;
    unsigned char bytes[512 + CANARY_BYTES];
} caller_memory;

static void assert_canaries_from(const caller_memory *m, size_t from)
{
    for (size_t k = from; k < from + CANARY_BYTES; k++)
        if (m->bytes[k] != CANARY)
            fail_msg("byte %zu past a %zu-byte struct was written", k - from, from);
}

/* The init function of one options struct, and its size in this header. */
typedef sgfp4_status (*init_sized_fn)(void *options, size_t size);
typedef struct options_kind {
    const char *name;
    init_sized_fn init_sized;
    size_t size;                  /* sizeof now */
    size_t older[4];              /* the earlier layouts' sizeof (0: none) */
    size_t registered;            /* how many layouts the library's registry lists */
} options_kind;

#define INIT_SIZED(type)                                                                       \
    static sgfp4_status init_##type(void *options, size_t size)                                \
    {                                                                                          \
        return type##_init_sized((type *)options, size);                                       \
    }
INIT_SIZED(sgfp4_open_options)
INIT_SIZED(sgfp4_decode_options)
INIT_SIZED(sgfp4_encode_options)
INIT_SIZED(sgfp4_model_open_options)
INIT_SIZED(sgfp4_model_write_options)
INIT_SIZED(sgfp4_output_options)
INIT_SIZED(sgfp4_vk_context_options)
INIT_SIZED(sgfp4_matvec_options)
INIT_SIZED(sgfp4_vk_matvec_options)
INIT_SIZED(sgfp4_vk_decode_options)
INIT_SIZED(sgfp4_hessian_options)

#define KIND(type, ...) {#type, init_##type, sizeof(type), __VA_ARGS__, SGFP4_LAYOUT_COUNT(type)}

static const options_kind kinds[] = {
    KIND(sgfp4_open_options, {sizeof(open_options_before_copy)}),
    KIND(sgfp4_decode_options, {0}),
    KIND(sgfp4_encode_options, {sizeof(encode_options_before_metric),
                                sizeof(encode_options_before_report)}),
    KIND(sgfp4_model_open_options, {sizeof(model_open_options_first),
                                    sizeof(model_open_options_before_max_tensors),
                                    sizeof(model_open_options_before_copy)}),
    KIND(sgfp4_model_write_options, {sizeof(model_write_options_first),
                                     sizeof(model_write_options_before_limit),
                                     sizeof(model_write_options_before_importance),
                                     sizeof(model_write_options_before_cancel)}),
    KIND(sgfp4_output_options, {0}),
    KIND(sgfp4_vk_context_options, {0}),
    KIND(sgfp4_matvec_options,
         {sizeof(matvec_options_before_pool), sizeof(matvec_options_before_fast)}),
    KIND(sgfp4_vk_matvec_options, {sizeof(vk_matvec_options_before_fast)}),
    KIND(sgfp4_vk_decode_options, {0}),
    KIND(sgfp4_hessian_options, {0}),
};

static void init_writes_only_the_callers_bytes(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        const options_kind *kind = &kinds[k];
        assert_true(kind->size <= 512);
        caller_memory full;
        memset(&full, CANARY, sizeof full);
        assert_int_equal(kind->init_sized(full.bytes, kind->size), SGFP4_OK);
        assert_canaries_from(&full, kind->size);
        size_t layouts = 1;
        for (size_t j = 0; j < 4 && kind->older[j]; j++, layouts++) {
            const size_t size = kind->older[j];
            caller_memory older;
            memset(&older, CANARY, sizeof older);
            assert_int_equal(kind->init_sized(older.bytes, size), SGFP4_OK);
            size_t struct_size;
            memcpy(&struct_size, older.bytes, sizeof struct_size);
            assert_int_equal(struct_size, size);
            /* the fields it has hold the same defaults as the current struct's */
            assert_memory_equal(older.bytes + sizeof(size_t), full.bytes + sizeof(size_t),
                                size - sizeof(size_t));
            assert_canaries_from(&older, size);
        }
        /* every layout the library knows is one a header declared, and the reverse */
        if (layouts != kind->registered)
            fail_msg("%s: the test knows %zu layouts, the library %zu", kind->name, layouts,
                     kind->registered);
        /* sizes of no layout: refused, nothing written */
        const size_t wrong[] = {0, 1, sizeof(size_t), kind->size - 1, kind->size + 1,
                                kind->size + 8, kind->older[0] ? kind->older[0] + 4 : 3};
        for (size_t j = 0; j < sizeof wrong / sizeof wrong[0]; j++) {
            caller_memory m;
            memset(&m, CANARY, sizeof m);
            assert_int_equal(kind->init_sized(m.bytes, wrong[j]), SGFP4_ERR_ARGUMENT);
            assert_canaries_from(&m, 0);
        }
        assert_int_equal(kind->init_sized(NULL, kind->size), SGFP4_ERR_ARGUMENT);
    }
}

/* Named defaults in the earlier layouts, checked against the documented values. */
static void older_callers_get_the_documented_defaults(void **state)
{
    (void)state;
    struct {
        encode_options_before_metric o;
        unsigned char canary[CANARY_BYTES];
    } e;
    memset(&e, CANARY, sizeof e);
    assert_int_equal(sgfp4_encode_options_init_sized((sgfp4_encode_options *)(void *)&e.o,
                                                     sizeof e.o),
                     SGFP4_OK);
    assert_int_equal(e.o.struct_size, sizeof e.o);
    assert_int_equal(e.o.profile, SGFP4_PROFILE_V2);
    assert_int_equal(e.o.policy, SGFP4_POLICY_RATE);
    assert_true(e.o.target_bpw == 4.5 && e.o.delta == 0.10 && e.o.threshold == 1.0);
    assert_int_equal(e.o.fit, SGFP4_FIT_BEST);
    assert_int_equal(e.o.threads, 0);
    assert_null(e.o.allocator.alloc);
    for (size_t k = 0; k < CANARY_BYTES; k++)
        assert_int_equal(e.canary[k], CANARY);

    struct {
        model_open_options_first o;
        unsigned char canary[CANARY_BYTES];
    } mo;
    memset(&mo, CANARY, sizeof mo);
    assert_int_equal(sgfp4_model_open_options_init_sized((sgfp4_model_open_options *)(void *)&mo.o,
                                                         sizeof mo.o),
                     SGFP4_OK);
    assert_int_equal(mo.o.struct_size, sizeof mo.o);
    assert_int_equal(mo.o.limits.max_header_bytes, 0);
    assert_null(mo.o.temp_dir);
    assert_int_equal(mo.o.max_decompressed_bytes, 0);
    for (size_t k = 0; k < CANARY_BYTES; k++)
        assert_int_equal(mo.canary[k], CANARY);
}

/* A safetensors file of two float32 scalars, a and b. */
static size_t two_tensor_model(unsigned char *out, size_t capacity)
{
    static const char header[] = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                                 "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}";
    const uint64_t n = sizeof header - 1;
    assert_true(8 + n + 8 <= capacity);
    for (int k = 0; k < 8; k++)
        out[k] = (unsigned char)(n >> (8 * k));
    memcpy(out + 8, header, n);
    memset(out + 8 + n, 0, 8);
    return 8 + (size_t)n + 8;
}

/* A caller's older struct followed by what would be hostile values of the newer fields: the
 * library must not read them (the missing fields take their defaults). The same values inside
 * struct_size change the outcome, which shows that they would be noticed. */
static void older_callers_missing_fields_take_defaults(void **state)
{
    (void)state;
    float weights[64 * 64];
    for (int i = 0; i < 64 * 64; i++)
        weights[i] = (float)((i * 53) % 97 - 48) / 256.0f;
    unsigned char expected[8192], got[8192];
    size_t n_expected = 0, n_got = 0;
    assert_int_equal(
        sgfp4_encode(weights, 64, 64, 0, expected, sizeof expected, &n_expected, NULL, NULL),
        SGFP4_OK);
    /* The fields after metric hold their defaults, so that the call with the whole struct
     * below fails on the metric alone (a garbage report or cancel pointer would be used). */
    sgfp4_encode_options e;
    sgfp4_encode_options_init(&e);
    assert_int_equal(sgfp4_encode_options_init_sized(&e, sizeof(encode_options_before_metric)),
                     SGFP4_OK);
    e.metric = (sgfp4_error_metric)99; /* past the caller's struct: garbage on its stack */
    assert_int_equal(sgfp4_encode(weights, 64, 64, 0, got, sizeof got, &n_got, &e, NULL), SGFP4_OK);
    assert_int_equal(n_got, n_expected);
    assert_memory_equal(got, expected, n_expected);
    e.struct_size = sizeof e;
    assert_int_equal(sgfp4_encode(weights, 64, 64, 0, got, sizeof got, &n_got, &e, NULL),
                     SGFP4_ERR_ARGUMENT);

    unsigned char file[256];
    const size_t file_size = two_tensor_model(file, sizeof file);
    sgfp4_model_open_options mo;
    assert_int_equal(sgfp4_model_open_options_init_sized(&mo, sizeof(model_open_options_first)),
                     SGFP4_OK);
    mo.max_tensors = 1;
    sgfp4_model *m = NULL;
    assert_int_equal(sgfp4_model_open_memory(file, file_size, &m, &mo, NULL), SGFP4_OK);
    assert_int_equal(sgfp4_model_tensor_count(m), 2);
    sgfp4_model_close(m);
    m = NULL;
    mo.struct_size = sizeof mo;
    assert_int_equal(sgfp4_model_open_memory(file, file_size, &m, &mo, NULL), SGFP4_ERR_LIMIT);
    assert_null(m);
}

static void unknown_struct_size_is_refused(void **state)
{
    (void)state;
    const size_t sizes[] = {0, 1, sizeof(sgfp4_open_options) + 8};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        sgfp4_open_options oo;
        sgfp4_open_options_init(&oo);
        oo.struct_size = sizes[k];
        sgfp4_tensor *t = (sgfp4_tensor *)&oo;
        sgfp4_diag diag;
        assert_int_equal(sgfp4_tensor_open(container, sizeof container, SGFP4_PROFILE_V1, 1, 1,
                                           &t, &oo, &diag),
                         SGFP4_ERR_ARGUMENT);
        assert_null(t);
        assert_non_null(strstr(diag.message, "struct_size"));
    }

    sgfp4_tensor *t;
    assert_int_equal(sgfp4_tensor_open(container, sizeof container, SGFP4_PROFILE_V1, 1, 1, &t,
                                       NULL, NULL),
                     SGFP4_OK);
    float out[1] = {0};
    sgfp4_decode_options d;
    sgfp4_decode_options_init(&d);
    d.struct_size = 0; /* zero-initialised by hand: not made by init */
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, out, 0, sizeof out, &d), SGFP4_ERR_ARGUMENT);
    d.struct_size = sizeof d + 4;
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, out, 0, sizeof out, &d), SGFP4_ERR_ARGUMENT);
    d.struct_size = sizeof d;
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, out, 0, sizeof out, &d), SGFP4_OK);
    assert_true(out[0] == 1.0f);
    sgfp4_tensor_close(t);

    const float weights[64] = {0.5f};
    unsigned char encoded[4096];
    size_t written = 0;
    sgfp4_encode_options e;
    sgfp4_encode_options_init(&e);
    e.struct_size = 0;
    assert_int_equal(sgfp4_encode(weights, 8, 8, 0, encoded, sizeof encoded, &written, &e, NULL),
                     SGFP4_ERR_ARGUMENT);

    sgfp4_hessian_options ho;
    sgfp4_hessian_options_init(&ho);
    ho.struct_size = sizeof ho + 8;
    const float one = 1.0f;
    sgfp4_hessian *hessian = NULL;
    assert_int_equal(sgfp4_hessian_create(&one, 1, 0, &ho, &hessian, NULL), SGFP4_ERR_ARGUMENT);
    assert_null(hessian);

    sgfp4_model_open_options mo;
    sgfp4_model_open_options_init(&mo);
    mo.struct_size = sizeof mo - 1;
    sgfp4_model *m = NULL;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_model_open_memory("x", 1, &m, &mo, &diag), SGFP4_ERR_ARGUMENT);
    assert_null(m);
    assert_non_null(strstr(diag.message, "struct_size"));

    sgfp4_vk_context_options vk;
    sgfp4_vk_context_options_init(&vk);
    vk.struct_size = 0;
    sgfp4_vk_context *ctx = NULL;
    const sgfp4_status s = sgfp4_vk_context_create(&ctx, &vk, NULL);
    assert_int_equal(s, SGFP4_HAVE_VULKAN ? SGFP4_ERR_ARGUMENT : SGFP4_ERR_UNAVAILABLE);
    assert_null(ctx);
}

/* The mechanism for layouts to come: a caller built against an older header passes a
 * shorter struct, whose missing fields keep their defaults. */
typedef struct two_layouts {
    size_t struct_size;
    int first;  /* in the first layout */
    int second; /* appended later */
} two_layouts;

static void older_layouts_keep_defaults(void **state)
{
    (void)state;
    const size_t layouts[2] = {offsetof(two_layouts, second), sizeof(two_layouts)};
    const two_layouts defaults = {sizeof(two_layouts), 1, 2};
    two_layouts given = {offsetof(two_layouts, second), 10, 20}, out = defaults;
    assert_int_equal(sgfp4_options_copy(&given, &out, sizeof out, layouts, 2), SGFP4_OK);
    assert_int_equal(out.struct_size, sizeof out);
    assert_int_equal(out.first, 10);
    assert_int_equal(out.second, 2); /* not read: past the caller's struct_size */
    given.struct_size = sizeof given;
    out = defaults;
    assert_int_equal(sgfp4_options_copy(&given, &out, sizeof out, layouts, 2), SGFP4_OK);
    assert_int_equal(out.second, 20);
    given.struct_size = sizeof given - 2; /* no released layout */
    assert_int_equal(sgfp4_options_copy(&given, &out, sizeof out, layouts, 2),
                     SGFP4_ERR_ARGUMENT);
    out = defaults;
    assert_int_equal(sgfp4_options_copy(NULL, &out, sizeof out, layouts, 2), SGFP4_OK);
    assert_int_equal(out.first, 1);
}

static void threads_zero_means_one_and_the_maximum_holds(void **state)
{
    (void)state;
    sgfp4_tensor *t;
    assert_int_equal(sgfp4_tensor_open(container, sizeof container, SGFP4_PROFILE_V1, 1, 1, &t,
                                       NULL, NULL),
                     SGFP4_OK);
    float out[1];
    sgfp4_decode_options d;
    sgfp4_decode_options_init(&d);
    const unsigned counts[] = {0, 1, SGFP4_MAX_THREADS};
    for (size_t k = 0; k < 3; k++) {
        d.threads = counts[k];
        assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, out, 0, sizeof out, &d), SGFP4_OK);
    }
    d.threads = SGFP4_MAX_THREADS + 1;
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, out, 0, sizeof out, &d), SGFP4_ERR_ARGUMENT);
    sgfp4_tensor_close(t);

    float weights[64 * 64];
    for (int i = 0; i < 64 * 64; i++)
        weights[i] = (float)((i * 37) % 101 - 50) / 512.0f;
    unsigned char a[8192], b[8192];
    size_t na = 0, nb = 0;
    sgfp4_encode_options e;
    sgfp4_encode_options_init(&e);
    assert_int_equal(sgfp4_encode(weights, 64, 64, 0, a, sizeof a, &na, &e, NULL), SGFP4_OK);
    e.threads = 3;
    assert_int_equal(sgfp4_encode(weights, 64, 64, 0, b, sizeof b, &nb, &e, NULL), SGFP4_OK);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na);
    e.threads = SGFP4_MAX_THREADS + 1;
    assert_int_equal(sgfp4_encode(weights, 64, 64, 0, b, sizeof b, &nb, &e, NULL),
                     SGFP4_ERR_ARGUMENT);
}

static sgfp4_status discard(void *user, const void *data, size_t size)
{
    (void)user;
    (void)data;
    (void)size;
    return SGFP4_OK;
}

static void zstd_sink_threads(void **state)
{
    (void)state;
    const sgfp4_sink inner = {discard, NULL};
    sgfp4_zstd_sink *zs = NULL;
    assert_int_equal(sgfp4_zstd_sink_begin(&inner, 3, SGFP4_MAX_THREADS + 1, &zs),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_zstd_sink_begin(&inner, 3, 0, &zs), SGFP4_OK);
    assert_int_equal(sgfp4_zstd_sink_finish(zs), SGFP4_OK);
    sgfp4_zstd_sink_free(zs);
    sgfp4_zstd_sink_free(NULL);
}

static void too_small_outputs_have_their_own_status(void **state)
{
    (void)state;
    assert_int_equal(SGFP4_ERR_DST_TOO_SMALL, 8);
    assert_string_equal(sgfp4_status_name(SGFP4_ERR_DST_TOO_SMALL), "DST_TOO_SMALL");
    sgfp4_tensor *t;
    assert_int_equal(sgfp4_tensor_open(container, sizeof container, SGFP4_PROFILE_V1, 2, 2, &t,
                                       NULL, NULL),
                     SGFP4_OK);
    float out[4];
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, out, 0, 15, NULL), SGFP4_ERR_DST_TOO_SMALL);
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, out, 0, 16, NULL), SGFP4_OK);
    const uint64_t rows[2] = {1, 0};
    assert_int_equal(sgfp4_decode_gather(t, rows, 2, SGFP4_DTYPE_F32, out, 0, 8, NULL),
                     SGFP4_ERR_DST_TOO_SMALL);
    assert_int_equal(sgfp4_decode(t, SGFP4_DTYPE_F32, NULL, 0, 16, NULL), SGFP4_ERR_ARGUMENT);
    sgfp4_tensor_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(init_sets_struct_size_and_defaults),
        cmocka_unit_test(init_writes_only_the_callers_bytes),
        cmocka_unit_test(older_callers_get_the_documented_defaults),
        cmocka_unit_test(older_callers_missing_fields_take_defaults),
        cmocka_unit_test(unknown_struct_size_is_refused),
        cmocka_unit_test(older_layouts_keep_defaults),
        cmocka_unit_test(threads_zero_means_one_and_the_maximum_holds),
        cmocka_unit_test(zstd_sink_threads),
        cmocka_unit_test(too_small_outputs_have_their_own_status),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
