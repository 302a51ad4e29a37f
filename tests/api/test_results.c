/* The convention every call that fills a result struct shares (sgfp4.h, "Result structs";
 * docs/api.md, "Conventions"): the caller's struct_size, set by sgfp4_<x>_init(), says how
 * many bytes the library may write. A struct_size that is no layout of the struct (0, too
 * small, one past the struct) is SGFP4_ERR_ARGUMENT and not one byte of the struct is
 * written; a known one is filled, and nothing past it.
 * SPDX-License-Identifier: MIT */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sgfp4.h"
#include "sgfp4_config.h"
#include "sgfp4_model.h"
#include "sgfp4_vulkan.h"
#include "support/buffer_sink.h"

#define SENTINEL 0xA5
#define CANARY_BYTES 64
#define MAX_STRUCT 4096

/* A caller's struct followed by canaries, as its stack would hold it. */
typedef struct slot {
    _Alignas(16) unsigned char bytes[MAX_STRUCT + CANARY_BYTES];
} slot;

/* One call that fills a result struct: `result` is the caller's struct. */
typedef sgfp4_status (*fill_fn)(void *context, void *result);

static void slot_prepare(slot *s, size_t struct_size)
{
    memset(s->bytes, SENTINEL, sizeof s->bytes);
    memcpy(s->bytes, &struct_size, sizeof struct_size);
}

/* Every byte from `from` on is the sentinel. */
static void assert_untouched_from(const slot *s, size_t from)
{
    for (size_t k = from; k < sizeof s->bytes; k++)
        if (s->bytes[k] != SENTINEL)
            fail_msg("byte %zu written", k);
}

/* Unknown sizes are refused with nothing written; the struct's own size is filled within it
 * (the bytes after struct_size no longer all the sentinel) and not past it. */
static void check_result_call(fill_fn fill, void *context, size_t size, sgfp4_status good)
{
    assert_true(size <= MAX_STRUCT);
    const size_t unknown[] = {0, 1, sizeof(size_t), size - 1, size - sizeof(size_t), size + 1,
                              size + sizeof(size_t), (size_t)-1};
    slot s;
    for (size_t k = 0; k < sizeof unknown / sizeof *unknown; k++) {
        slot_prepare(&s, unknown[k]);
        assert_int_equal(fill(context, s.bytes), SGFP4_ERR_ARGUMENT);
        size_t after;
        memcpy(&after, s.bytes, sizeof after);
        assert_int_equal(after, unknown[k]);
        assert_untouched_from(&s, sizeof(size_t));
    }
    slot_prepare(&s, size);
    assert_int_equal(fill(context, s.bytes), good);
    size_t after;
    memcpy(&after, s.bytes, sizeof after);
    assert_int_equal(after, size);
    assert_untouched_from(&s, size);
    bool written = false;
    for (size_t k = sizeof(size_t); k < size; k++)
        written = written || s.bytes[k] != SENTINEL;
    assert_true(written);
}

/* ---- the core library ---------------------------------------------------------------- */

/* A 64x64 v1 container: scale 1, bias 0, every code 1 -> 1.0f. */
static unsigned char container[2056];
static float reference[64 * 64];
static sgfp4_tensor *tensor;

static int setup(void **state)
{
    (void)state;
    const uint32_t header = 0x3C00u << 16;
    memcpy(container, &header, 4);
    memset(container + 8, 0x11, 2048);
    for (int k = 0; k < 64 * 64; k++)
        reference[k] = 1.0f + (float)(k % 7) / 64.0f;
    return sgfp4_tensor_open(container, sizeof container, SGFP4_PROFILE_V1, 64, 64, &tensor,
                             NULL, NULL) == SGFP4_OK
               ? 0
               : -1;
}

static int teardown(void **state)
{
    (void)state;
    sgfp4_tensor_close(tensor);
    return 0;
}

static sgfp4_status fill_tensor_info(void *context, void *result)
{
    (void)context;
    return sgfp4_tensor_get_info(tensor, result);
}

static void tensor_info(void **state)
{
    (void)state;
    check_result_call(fill_tensor_info, NULL, sizeof(sgfp4_tensor_info), SGFP4_OK);
    sgfp4_tensor_info info;
    sgfp4_tensor_info_init(&info);
    assert_int_equal(info.struct_size, sizeof info);
    assert_int_equal(sgfp4_tensor_get_info(tensor, &info), SGFP4_OK);
    assert_int_equal(info.struct_size, sizeof info);
    assert_int_equal(info.rows, 64);
    assert_int_equal(info.blocks, 1);
    assert_int_equal(sgfp4_tensor_get_info(NULL, &info), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_tensor_get_info(tensor, NULL), SGFP4_ERR_ARGUMENT);
}

static sgfp4_status fill_quality(void *context, void *result)
{
    (void)context;
    return sgfp4_tensor_compare(tensor, reference, 0, result, NULL);
}

static void quality(void **state)
{
    (void)state;
    check_result_call(fill_quality, NULL, sizeof(sgfp4_quality), SGFP4_OK);
    sgfp4_quality q;
    sgfp4_quality_init(&q);
    assert_int_equal(sgfp4_tensor_compare(tensor, reference, 0, &q, NULL), SGFP4_OK);
    assert_int_equal(q.struct_size, sizeof q);
    assert_int_equal(q.count, 64 * 64);
    assert_true(q.reference_sq > 0);
}

typedef struct encode_call {
    float weights[64 * 64];
    unsigned char dst[4096];
    size_t written;
} encode_call;

static sgfp4_status fill_encode_report(void *context, void *result)
{
    encode_call *c = context;
    sgfp4_encode_options o;
    sgfp4_encode_options_init(&o);
    o.profile = SGFP4_PROFILE_V1;
    o.report = result;
    c->written = 12345;
    return sgfp4_encode(c->weights, 64, 64, 0, c->dst, sizeof c->dst, &c->written, &o, NULL);
}

static void encode_report(void **state)
{
    (void)state;
    static encode_call c;
    for (int k = 0; k < 64 * 64; k++)
        c.weights[k] = k == 5 ? 70000.0f : (float)(k % 9);
    check_result_call(fill_encode_report, &c, sizeof(sgfp4_encode_report), SGFP4_OK);
    /* Refused before any work: no container either. */
    slot s;
    slot_prepare(&s, sizeof(sgfp4_encode_report) + 8);
    memset(c.dst, SENTINEL, sizeof c.dst);
    assert_int_equal(fill_encode_report(&c, s.bytes), SGFP4_ERR_ARGUMENT);
    for (size_t k = 0; k < sizeof c.dst; k++)
        assert_int_equal(c.dst[k], SENTINEL);
    sgfp4_encode_report report;
    sgfp4_encode_report_init(&report);
    assert_int_equal(fill_encode_report(&c, &report), SGFP4_OK);
    assert_int_equal(report.struct_size, sizeof report);
    assert_int_equal(report.clipped, 1);
    assert_true(report.max_abs == 70000.0);
}

/* ---- the model component ------------------------------------------------------------- */

/* A safetensors file of one 64x64 float32 matrix, w. */
static size_t one_matrix_model(unsigned char *out, size_t capacity)
{
    static const char header[] =
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[64,64],\"data_offsets\":[0,16384]}}";
    const uint64_t n = sizeof header - 1;
    assert_true(8 + n + 16384 <= capacity);
    for (int k = 0; k < 8; k++)
        out[k] = (unsigned char)(n >> (8 * k));
    memcpy(out + 8, header, n);
    for (int k = 0; k < 4096; k++) {
        const float v = (float)(k % 13) - 6.0f;
        memcpy(out + 8 + n + 4 * (size_t)k, &v, 4);
    }
    return 8 + (size_t)n + 16384;
}

typedef struct model_call {
    sgfp4_model *model;
    sgfp4_model_policy *policy;
    buffer out;
} model_call;

static void model_call_open(model_call *c, unsigned char *file, size_t capacity)
{
    memset(c, 0, sizeof *c);
    const size_t size = one_matrix_model(file, capacity);
    assert_int_equal(sgfp4_model_open_memory(file, size, &c->model, NULL, NULL), SGFP4_OK);
    assert_int_equal(sgfp4_model_policy_create(&c->policy), SGFP4_OK);
}

static void model_call_close(model_call *c)
{
    sgfp4_model_policy_free(c->policy);
    sgfp4_model_close(c->model);
    free(c->out.data);
}

static sgfp4_status fill_verify_result(void *context, void *result)
{
    const model_call *c = context;
    return sgfp4_model_verify(c->model, result, NULL);
}

static sgfp4_status fill_summary(void *context, void *result)
{
    model_call *c = context;
    sgfp4_model_write_options o;
    sgfp4_model_write_options_init(&o);
    o.summary = result;
    free(c->out.data);
    memset(&c->out, 0, sizeof c->out);
    const sgfp4_sink sink = {buffer_write, &c->out};
    return sgfp4_model_encode(c->model, c->policy, &sink, &o, NULL);
}

static sgfp4_status fill_decision(void *context, void *result)
{
    const model_call *c = context;
    return sgfp4_model_policy_decide(c->policy, sgfp4_model_tensor_at(c->model, 0), result);
}

static void model_results(void **state)
{
    (void)state;
    static unsigned char file[20000];
    model_call c;
    model_call_open(&c, file, sizeof file);

    check_result_call(fill_verify_result, &c, sizeof(sgfp4_model_verify_result), SGFP4_OK);
    sgfp4_model_verify_result v;
    sgfp4_model_verify_result_init(&v);
    assert_int_equal(sgfp4_model_verify(c.model, &v, NULL), SGFP4_OK);
    assert_int_equal(v.tensors, 1);

    check_result_call(fill_summary, &c, sizeof(sgfp4_model_summary), SGFP4_OK);
    /* Refused before any work: the sink got nothing. */
    slot s;
    slot_prepare(&s, 0);
    sgfp4_diag diag;
    sgfp4_model_write_options o;
    sgfp4_model_write_options_init(&o);
    o.summary = (sgfp4_model_summary *)(void *)s.bytes;
    free(c.out.data);
    memset(&c.out, 0, sizeof c.out);
    const sgfp4_sink sink = {buffer_write, &c.out};
    assert_int_equal(sgfp4_model_encode(c.model, c.policy, &sink, &o, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(c.out.size, 0);
    assert_non_null(strstr(diag.message, "sgfp4_model_summary"));
    sgfp4_model_summary summary;
    sgfp4_model_summary_init(&summary);
    assert_int_equal(fill_summary(&c, &summary), SGFP4_OK);
    assert_int_equal(summary.struct_size, sizeof summary);
    assert_int_equal(summary.tensors, 1);
    assert_int_equal(summary.quantized, 1);
    assert_int_equal(summary.file_bytes_out, c.out.size);

    check_result_call(fill_decision, &c, sizeof(sgfp4_model_decision), SGFP4_OK);
    sgfp4_model_decision d;
    sgfp4_model_decision_init(&d);
    assert_int_equal(fill_decision(&c, &d), SGFP4_OK);
    assert_true(d.quantize);
    assert_int_equal(d.rows, 64);
    /* The decision is also an input: an unknown struct_size is not read. */
    sgfp4_encode_options eo, before;
    sgfp4_encode_options_init(&eo);
    before = eo;
    d.struct_size = 0;
    assert_int_equal(sgfp4_model_decision_options(c.policy, &d, &eo), SGFP4_ERR_ARGUMENT);
    assert_memory_equal(&eo, &before, sizeof eo);
    d.struct_size = sizeof d;
    assert_int_equal(sgfp4_model_decision_options(c.policy, &d, &eo), SGFP4_OK);
    /* No policy: the decision says so, and the call fails. */
    sgfp4_model_decision_init(&d);
    assert_int_equal(sgfp4_model_policy_decide(NULL, sgfp4_model_tensor_at(c.model, 0), &d),
                     SGFP4_ERR_ARGUMENT);
    assert_false(d.quantize);
    assert_string_equal(d.reason, "no policy or no tensor");
    model_call_close(&c);
}

/* ---- the Vulkan backend -------------------------------------------------------------- */

static sgfp4_status fill_device_list(void *context, void *result)
{
    size_t *count = context;
    return sgfp4_vk_list_devices(result, 1, count, NULL);
}

static void vulkan_device_info(void **state)
{
    (void)state;
    size_t count = 0;
    sgfp4_vk_device_info probe;
    sgfp4_vk_device_info_init(&probe);
    const sgfp4_status listed = sgfp4_vk_list_devices(&probe, 1, &count, NULL);
    if (listed == SGFP4_ERR_UNAVAILABLE) /* built without the backend */
        skip();
    if (listed == SGFP4_OK) {
        check_result_call(fill_device_list, &count, sizeof(sgfp4_vk_device_info), SGFP4_OK);
    } else { /* no loader or no device: the refusals still come first */
        assert_int_equal(listed, SGFP4_ERR_VK_NO_DEVICE);
        for (size_t bad = 0; bad < 2; bad++) {
            slot s;
            slot_prepare(&s, bad ? sizeof probe + 8 : 0);
            assert_int_equal(fill_device_list(&count, s.bytes), SGFP4_ERR_ARGUMENT);
            assert_untouched_from(&s, sizeof(size_t));
        }
    }
    /* Each element of an array is checked: a second one not initialised is refused, the
     * first left untouched. */
    sgfp4_vk_device_info two[2];
    sgfp4_vk_device_info_init(&two[0]);
    memset(&two[1], SENTINEL, sizeof two[1]);
    memset((unsigned char *)&two[0] + sizeof(size_t), SENTINEL, sizeof two[0] - sizeof(size_t));
    assert_int_equal(sgfp4_vk_list_devices(two, 2, &count, NULL), SGFP4_ERR_ARGUMENT);
    for (size_t k = sizeof(size_t); k < sizeof two[0]; k++)
        assert_int_equal(((unsigned char *)&two[0])[k], SENTINEL);

    sgfp4_vk_context *ctx = NULL;
    if (listed != SGFP4_OK || sgfp4_vk_context_create(&ctx, NULL, NULL) != SGFP4_OK)
        return;
    slot s;
    slot_prepare(&s, sizeof(sgfp4_vk_device_info) - 1);
    assert_int_equal(sgfp4_vk_context_get_info(ctx, (sgfp4_vk_device_info *)(void *)s.bytes),
                     SGFP4_ERR_ARGUMENT);
    assert_untouched_from(&s, sizeof(size_t));
    sgfp4_vk_device_info info;
    sgfp4_vk_device_info_init(&info);
    assert_int_equal(sgfp4_vk_context_get_info(ctx, &info), SGFP4_OK);
    assert_true(info.name[0] != '\0');
    sgfp4_vk_context_free(ctx);
}

int main(void)
{
    /* The device tests open a Vulkan context: keep lavapipe loaded so that LeakSanitizer can
     * name the module of what it keeps until exit (tests/vulkan/lsan.supp; as
     * test_vulkan_decode.c does). Harmless where it does not exist. */
    (void)dlopen("libvulkan_lvp.so", RTLD_LAZY);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tensor_info),
        cmocka_unit_test(quality),
        cmocka_unit_test(encode_report),
        cmocka_unit_test(model_results),
        cmocka_unit_test(vulkan_device_info),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
