/* The Vulkan backend against the scalar decoder, bit for bit: golden vectors, the MNN
 * fixtures, random v1/v2 containers of odd shapes, every dtype, row strides, the shader
 * variants (RTE float + leaf table, RTE float + record walk, integer-exact, and the three
 * ways of rounding f16 outputs), weights on the edges of f16 rounding, caller buffers at
 * offsets, run-to-run identity, and one 4096x4096 tensor. Exits 77 (skip) where no Vulkan
 * device exists.
 * SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <dlfcn.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "sgfp4.h"
#include "sgfp4_config.h"
#include "sgfp4_vulkan.h"
#include "sgfp4_experimental.h"
#include "support/options.h"
#if SGFP4_HAVE_VULKAN
#include <vulkan/vulkan.h>
#endif
#include "datagen/generator.h"

/* v2 from the leaf table for every output (f16 by the device's conversion where it can be
 * declared exact, as on lavapipe and the H200), the record walk, the integer pipeline and f16
 * by the f32 add (adopted devices), both from the leaf table; the default context with the
 * subnormal check of devices that do not preserve f16 denormals (so v2 from the products'
 * layout for every output, the default choice); then v2 from the
 * products' layout for every output (SGFP4_VK_V2_LAYOUT) with the device's f16 conversion,
 * the integer pipeline and f16 by the f32 add. */
enum { CTX_TABLE, CTX_WALK, CTX_INTEGER, CTX_F16_ADD, CTX_F16_GUARD, CTX_LAYOUT,
       CTX_LAYOUT_INTEGER, CTX_LAYOUT_F16_ADD, CTX_COUNT };
static sgfp4_vk_context *contexts[CTX_COUNT];
static const char *const context_names[CTX_COUNT] = {
    "rte+table", "rte+walk", "integer", "f16 add", "f16 guard",
    "rte+layout", "integer+layout", "f16 add+layout"};

/* Decodes `bytes` with the scalar oracle and on context c as dtype with row stride
 * (elements, >= cols); asserts identical output, gaps between rows untouched. */
static void check_one(const char *what, int c, const uint8_t *bytes, size_t size,
                      sgfp4_profile profile, uint64_t rows, uint64_t cols, sgfp4_dtype dtype,
                      size_t stride)
{
    sgfp4_tensor *t = NULL;
    sgfp4_diag diag;
    const sgfp4_status so = sgfp4_tensor_open(bytes, size, profile, rows, cols, &t, NULL, &diag);
    if (so != SGFP4_OK)
        fail_msg("%s: open failed: %s", what, diag.message);
    const size_t elem = sgfp4_dtype_size(dtype);
    const size_t cap = ((rows - 1) * stride + cols) * elem;
    uint8_t *want = malloc(cap), *got = malloc(cap);
    assert_non_null(want);
    assert_non_null(got);
    memset(want, 0xA5, cap);
    memset(got, 0xA5, cap);
    const sgfp4_decode_options scalar = decode_options(SGFP4_BACKEND_SCALAR, 1, SGFP4_STORE_AUTO);
    assert_int_equal(sgfp4_decode(t, dtype, want, stride, cap, &scalar), SGFP4_OK);

    sgfp4_vk_tensor *vt = NULL;
    sgfp4_status s = sgfp4_vk_tensor_create(contexts[c], t, &vt, &diag);
    if (s != SGFP4_OK)
        fail_msg("%s: upload: %s", what, diag.message);
    sgfp4_tensor_close(t); /* the resident copy needs no host view */
    /* the source each context reads: by default v2 from the layout */
    const int from_layout = profile == SGFP4_PROFILE_V2 && (c >= CTX_LAYOUT || c == CTX_F16_GUARD);
    if (sgfp4_vk_decode_reads_layout(contexts[c], vt, dtype) != from_layout)
        fail_msg("%s [%s, dtype %d]: the decode %s the products' layout", what, context_names[c],
                 (int)dtype, from_layout ? "does not read" : "reads");
    /* a tensor whose decodes read the layout keeps no copy of its container bytes; any other
     * keeps them beside its tables */
    const uint64_t held = sgfp4_vk_tensor_device_bytes(vt);
    const uint64_t tables = sgfp4_vk_tensor_table_bytes(vt);
    if (from_layout ? held >= tables + size : held < tables + size)
        fail_msg("%s [%s]: %llu device bytes for a %zu-byte container and %llu of tables", what,
                 context_names[c], (unsigned long long)held, size, (unsigned long long)tables);
    s = sgfp4_vk_decode_to_host(contexts[c], vt, dtype, got, stride, cap, &diag);
    if (s != SGFP4_OK)
        fail_msg("%s: decode: %s", what, diag.message);
    sgfp4_vk_tensor_free(contexts[c], vt);
    if (memcmp(want, got, cap) != 0) {
        size_t i = 0;
        while (want[i] == got[i])
            i++;
        const size_t e = i / elem;
        fail_msg("%s [%s, dtype %d, stride %zu]: first difference at element %zu (row %zu, "
                 "col %zu)",
                 what, context_names[c], (int)dtype, stride, e, e / stride, e % stride);
    }
    free(want);
    free(got);
}

/* Every context, every dtype, packed and strided. */
static void check_all(const char *what, const uint8_t *bytes, size_t size,
                      sgfp4_profile profile, uint64_t rows, uint64_t cols)
{
    for (int c = 0; c < CTX_COUNT; c++) {
        if (profile == SGFP4_PROFILE_V1 && (c == CTX_WALK || c >= CTX_LAYOUT))
            continue; /* v1 has one kernel */
        for (int d = 0; d < 3; d++)
            check_one(what, c, bytes, size, profile, rows, cols, (sgfp4_dtype)d,
                      (size_t)cols + (d == 1 ? 0 : (size_t)(d + 1)));
    }
}

static uint8_t *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *d = malloc(n > 0 ? (size_t)n : 1);
    if (d && fread(d, 1, (size_t)n, f) != (size_t)n) {
        free(d);
        d = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return d;
}

static sgfp4_profile profile_of(const char *name)
{
    return strcmp(name, "v1") == 0 ? SGFP4_PROFILE_V1 : SGFP4_PROFILE_V2;
}

static void test_golden_vectors(void **state)
{
    (void)state;
    const char *src = getenv("SGFP4_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/golden/manifest.json", src ? src : ".");
    json_t *root = json_load_file(path, 0, NULL);
    if (!root)
        skip(); /* the golden set is not in this checkout */
    json_t *vectors = json_object_get(root, "vectors");
    size_t i, checked = 0;
    json_t *v;
    json_array_foreach(vectors, i, v)
    {
        if (strcmp(json_string_value(json_object_get(v, "expect")), "decode") != 0)
            continue;
        const char *file = json_string_value(json_object_get(v, "file"));
        json_t *shape = json_object_get(v, "shape");
        snprintf(path, sizeof path, "%s/golden/%s", src, file);
        size_t size;
        uint8_t *bytes = read_file(path, &size);
        assert_non_null(bytes);
        check_all(file, bytes, size, profile_of(json_string_value(json_object_get(v, "profile"))),
                  (uint64_t)json_integer_value(json_array_get(shape, 0)),
                  (uint64_t)json_integer_value(json_array_get(shape, 1)));
        free(bytes);
        checked++;
    }
    json_decref(root);
    assert_true(checked > 0);
    print_message("golden: %zu decode vectors bit-identical\n", checked);
}

static void test_mnn_fixtures(void **state)
{
    (void)state;
    const char *shared = getenv("SGFP4_SHARED_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/conformance/mnn/manifest.json", shared ? shared : ".");
    json_t *root = json_load_file(path, 0, NULL);
    if (!root)
        skip(); /* no shared/ folder beside this checkout */
    size_t i, checked = 0;
    json_t *v;
    json_array_foreach(root, i, v)
    {
        const char *file = json_string_value(json_object_get(v, "file"));
        json_t *shape = json_object_get(v, "shape");
        snprintf(path, sizeof path, "%s/conformance/mnn/%s", shared, file);
        size_t size;
        uint8_t *bytes = read_file(path, &size);
        assert_non_null(bytes);
        check_all(file, bytes, size, profile_of(json_string_value(json_object_get(v, "profile"))),
                  (uint64_t)json_integer_value(json_array_get(shape, 0)),
                  (uint64_t)json_integer_value(json_array_get(shape, 1)));
        free(bytes);
        checked++;
    }
    json_decref(root);
    print_message("mnn: %zu fixtures bit-identical\n", checked);
}

/* Random container `seed` of a profile, shape and layout mix, with every corner of the
 * format and edge-case scales and biases (the generator's defaults). */
static uint8_t *random_container(int profile, uint64_t rows, uint64_t cols, gen_layouts layouts,
                                 uint64_t seed, size_t *size)
{
    gen_params p = gen_shape_params(profile, rows, cols);
    p.layouts = layouts;
    return gen_container_bytes(&p, seed, size);
}

/* Odd shapes: every remainder of cols modulo 8 (v1 decodes 16-bit outputs eight columns at
 * a time), rows and columns just past a block. */
static const uint64_t shapes[][2] = {{1, 1},    {3, 70},    {64, 64},  {65, 129}, {130, 67},
                                     {200, 201}, {17, 300}, {256, 64}, {45, 61},  {33, 127},
                                     {66, 134},  {7, 66}};

static void test_random_v1(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        size_t size;
        uint8_t *bytes = random_container(1, shapes[i][0], shapes[i][1], GEN_LAYOUTS_ALL, 100 + i,
                                          &size);
        assert_non_null(bytes);
        char what[64];
        snprintf(what, sizeof what, "random v1 %llux%llu", (unsigned long long)shapes[i][0],
                 (unsigned long long)shapes[i][1]);
        check_all(what, bytes, size, SGFP4_PROFILE_V1, shapes[i][0], shapes[i][1]);
        free(bytes);
    }
}

static void test_random_v2(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        for (int mix = 0; mix < 3; mix++) {
            size_t size;
            uint8_t *bytes = random_container(2, shapes[i][0], shapes[i][1], (gen_layouts)mix,
                                              200 + 3 * i + (uint64_t)mix, &size);
            assert_non_null(bytes);
            char what[64];
            snprintf(what, sizeof what, "random v2 mix %d %llux%llu", mix,
                     (unsigned long long)shapes[i][0], (unsigned long long)shapes[i][1]);
            check_all(what, bytes, size, SGFP4_PROFILE_V2, shapes[i][0], shapes[i][1]);
            free(bytes);
        }
    }
}

/* One large tensor (lavapipe is slow: f32, the default kernel and the walk only). */
static void test_large_4096(void **state)
{
    (void)state;
    size_t size;
    uint8_t *bytes = random_container(2, 4096, 4096, GEN_LAYOUTS_ALL, 3, &size);
    assert_non_null(bytes);
    check_one("random v2 4096x4096", CTX_TABLE, bytes, size, SGFP4_PROFILE_V2, 4096, 4096,
              SGFP4_DTYPE_F32, 4096);
    check_one("random v2 4096x4096", CTX_LAYOUT, bytes, size, SGFP4_PROFILE_V2, 4096, 4096,
              SGFP4_DTYPE_F16, 4096);
    free(bytes);
    bytes = random_container(1, 4096, 4096, GEN_LAYOUTS_ALL, 4, &size);
    assert_non_null(bytes);
    check_one("random v1 4096x4096", CTX_INTEGER, bytes, size, SGFP4_PROFILE_V1, 4096, 4096,
              SGFP4_DTYPE_F32, 4096);
    free(bytes);
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* fp16 bits of +-2^e (-24 <= e <= 15), or of m * 2^e for an 11-bit m. */
static uint16_t half_pow2(int e)
{
    return e >= -14 ? (uint16_t)((e + 15) << 10) : (uint16_t)(1u << (e + 24));
}

/* A v1 container, one 64x64 block per (S, B) header, random codes, every fourth block T158:
 * weights chosen to land on the edges of f16 rounding. Computed by the same scalar oracle
 * as everything else; here the inputs are chosen, not random. */
static uint8_t *make_f16_edges(uint64_t *rows, uint64_t *cols, size_t *size)
{
    uint32_t headers[256];
    unsigned n = 0;
    for (int e = -13; e <= 15; e++) {
        /* S = half the f16 quantum at B's binade: odd q gives exact ties (to even); S = 3/4
         * of it, near-ties on both sides; both signs of B. */
        const uint16_t b = half_pow2(e), half_q = half_pow2(e - 11);
        headers[n++] = (uint32_t)half_q << 16 | b;
        headers[n++] = (uint32_t)half_q << 16 | (b | 0x8000u);
        if (e - 12 >= -14) /* S = 1.5 * 2^(e-12): three quarters of half a quantum */
            headers[n++] = (uint32_t)(half_pow2(e - 12) | 0x200u) << 16 | (uint32_t)(b + 1u);
    }
    /* f16 subnormal results: tiny scales (a scale's sign may only be that of -0), biases
     * zero, -0 or a negative subnormal. */
    for (int e = -24; e <= -14; e += 2) {
        headers[n++] = (uint32_t)half_pow2(e) << 16;
        headers[n++] = (uint32_t)half_pow2(e) << 16 | 0x8000u;
        headers[n++] = (uint32_t)half_pow2(e) << 16 | 0x8123u;
    }
    /* The overflow edge: 65504 + 16 q crosses 65520 (a tie that rounds to infinity);
     * 32768 + 8192 q reaches 65536; large negative biases. */
    headers[n++] = 0x4C00u << 16 | 0x7BFFu;          /* S = 16, B = 65504 */
    headers[n++] = 0x4C00u << 16 | 0xFBFFu;          /* S = 16, B = -65504 */
    headers[n++] = 0x7000u << 16 | 0x7800u;          /* S = 8192, B = 32768 */
    headers[n++] = 0x7BFFu << 16 | 0xFBFFu;          /* S = 65504, B = -65504 */
    headers[n++] = 0x4A00u << 16 | 0x7BF0u;          /* S = 12, B = 65024 */
    headers[n++] = 0x8000u << 16 | 0x8000u;          /* S = -0, B = -0: all weights -0 */
    headers[n++] = 0x0000u << 16 | 0x8000u;          /* S = +0, B = -0 */
    const uint64_t bx = 8, by = (n + bx - 1) / bx, B = bx * by;
    *rows = by * 64;
    *cols = bx * 64 - 5; /* a cropped last column of blocks */
    *size = (size_t)(B * 2056);
    uint8_t *d = malloc(*size);
    assert_non_null(d);
    gen_rng rng = {77};
    for (uint64_t b = 0; b < B; b++) {
        const uint32_t mode = b % 4 == 3;
        put32(d + 4 * b, headers[b % n]);
        put32(d + 4 * B + 4 * b, (uint32_t)(b * 2048) | mode);
        uint8_t *payload = d + 8 * B + b * 2048;
        for (unsigned i = 0; i < 2048; i++)
            payload[i] = mode && i >= 1024 ? 0 : (uint8_t)gen_next(&rng);
    }
    return d;
}

static void test_f16_edges(void **state)
{
    (void)state;
    uint64_t rows, cols;
    size_t size;
    uint8_t *bytes = make_f16_edges(&rows, &cols, &size);
    check_all("f16 rounding edges", bytes, size, SGFP4_PROFILE_V1, rows, cols);
    free(bytes);
}

/* The same decode, repeated, gives the same bytes (every context, f16 and bf16). */
static void test_run_to_run(void **state)
{
    (void)state;
    const uint64_t n = 1024;
    size_t size;
    uint8_t *bytes = random_container(2, n, n, GEN_LAYOUTS_ALL, 7, &size);
    assert_non_null(bytes);
    sgfp4_tensor *t = NULL;
    assert_int_equal(sgfp4_tensor_open(bytes, size, SGFP4_PROFILE_V2, n, n, &t, NULL, NULL),
                     SGFP4_OK);
    const size_t cap = n * n * 2;
    uint8_t *first = malloc(cap), *again = malloc(cap);
    assert_non_null(first);
    assert_non_null(again);
    for (int c = 0; c < CTX_COUNT; c++) {
        sgfp4_vk_tensor *vt = NULL;
        assert_int_equal(sgfp4_vk_tensor_create(contexts[c], t, &vt, NULL), SGFP4_OK);
        for (int d = 1; d <= 2; d++) {
            assert_int_equal(sgfp4_vk_decode_to_host(contexts[c], vt, (sgfp4_dtype)d, first, 0,
                                                     cap, NULL),
                             SGFP4_OK);
            for (int r = 0; r < 3; r++) {
                memset(again, 0x5A, cap);
                assert_int_equal(sgfp4_vk_decode_to_host(contexts[c], vt, (sgfp4_dtype)d,
                                                         again, 0, cap, NULL),
                                 SGFP4_OK);
                assert_memory_equal(first, again, cap);
            }
        }
        sgfp4_vk_tensor_free(contexts[c], vt);
    }
    free(first);
    free(again);
    sgfp4_tensor_close(t);
    free(bytes);
}

#if SGFP4_HAVE_VULKAN
/* A host-visible, mapped storage buffer made with raw Vulkan on the context's device, as a
 * runtime would own one. */
typedef struct host_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    void *mapped;
} host_buffer;

static void host_buffer_create(sgfp4_vk_context *ctx, VkDeviceSize size, host_buffer *hb)
{
    sgfp4_vk_handles h;
    sgfp4_vk_context_get_handles(ctx, &h);
    const VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                                    .size = size,
                                    .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                    .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    assert_int_equal(vkCreateBuffer(h.device, &bci, NULL, &hb->buffer), VK_SUCCESS);
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(h.device, hb->buffer, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(h.physical_device, &mp);
    const VkMemoryPropertyFlags want =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < mp.memoryTypeCount && type == UINT32_MAX; i++)
        if ((req.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want)
            type = i;
    assert_int_not_equal(type, UINT32_MAX);
    const VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                      .allocationSize = req.size,
                                      .memoryTypeIndex = type};
    assert_int_equal(vkAllocateMemory(h.device, &mai, NULL, &hb->memory), VK_SUCCESS);
    assert_int_equal(vkBindBufferMemory(h.device, hb->buffer, hb->memory, 0), VK_SUCCESS);
    assert_int_equal(vkMapMemory(h.device, hb->memory, 0, VK_WHOLE_SIZE, 0, &hb->mapped),
                     VK_SUCCESS);
}

static void host_buffer_destroy(sgfp4_vk_context *ctx, host_buffer *hb)
{
    sgfp4_vk_handles h;
    sgfp4_vk_context_get_handles(ctx, &h);
    vkDestroyBuffer(h.device, hb->buffer, NULL);
    vkFreeMemory(h.device, hb->memory, NULL);
}

/* sgfp4_vk_tensor_create_from_buffer (container in the caller's buffer at an offset) and
 * decode_to_buffer into the caller's buffer at offsets (aligned and not, for 16-byte stores)
 * with a stride, for v1 and v2, on our device and on an adopted one (import). */
static void check_caller_buffers(int profile, sgfp4_vk_context *adopted)
{
    const uint64_t rows = 77, cols = 150;
    size_t size;
    uint8_t *bytes = random_container(profile, rows, cols, GEN_LAYOUTS_ALL, 5, &size);
    sgfp4_tensor *t = NULL;
    assert_int_equal(sgfp4_tensor_open(bytes, size, (sgfp4_profile)profile, rows, cols, &t, NULL,
                                       NULL),
                     SGFP4_OK);
    sgfp4_diag diag;
    sgfp4_vk_context *both[2] = {contexts[CTX_TABLE], adopted};
    for (int c = 0; c < 2; c++) {
        for (int d = 0; d < 3; d++) {
            for (size_t first = 6; first <= 8; first += 2) {
                const sgfp4_dtype dtype = (sgfp4_dtype)d;
                const size_t elem = sgfp4_dtype_size(dtype);
                const size_t stride = cols + (first == 8 ? 2 : 5), out_offset = first * elem;
                const size_t out_bytes = ((rows - 1) * stride + cols) * elem;
                host_buffer in, out;
                host_buffer_create(both[c], 36 + size, &in);
                host_buffer_create(both[c], out_offset + out_bytes + 4, &out);
                memcpy((uint8_t *)in.mapped + 36, bytes, size);
                memset(out.mapped, 0x5A, out_offset + out_bytes + 4);
                uint8_t *want = malloc(out_offset + out_bytes + 4);
                memset(want, 0x5A, out_offset + out_bytes + 4);
                const sgfp4_decode_options scalar =
                    decode_options(SGFP4_BACKEND_SCALAR, 1, SGFP4_STORE_AUTO);
                assert_int_equal(sgfp4_decode(t, dtype, want + out_offset, stride, out_bytes,
                                              &scalar),
                                 SGFP4_OK);
                sgfp4_vk_tensor *vt = NULL;
                assert_int_equal(
                    sgfp4_vk_tensor_create_from_buffer(both[c], t, in.buffer, 36, &vt, &diag),
                    SGFP4_OK);
                if (sgfp4_vk_decode_to_buffer(both[c], vt, dtype, out.buffer, out_offset, stride,
                                              out_offset + out_bytes + 4, NULL, &diag) != SGFP4_OK)
                    fail_msg("decode_to_buffer: %s", diag.message);
                assert_memory_equal(out.mapped, want, out_offset + out_bytes + 4);
                sgfp4_vk_tensor_free(both[c], vt);
                host_buffer_destroy(both[c], &in);
                host_buffer_destroy(both[c], &out);
                free(want);
            }
        }
    }
    assert_int_equal(sgfp4_vk_tensor_create_from_buffer(adopted, t, (VkBuffer)VK_NULL_HANDLE, 0,
                                                        NULL, &diag),
                     SGFP4_ERR_ARGUMENT);
    sgfp4_tensor_close(t);
    free(bytes);
}

/* Records `op` into a command buffer of our own on the context's queue, between the barriers
 * its contract asks for (host writes before, host reads after), submits it and waits. */
static void record_and_wait(sgfp4_vk_context *ctx, const sgfp4_vk_op *op)
{
    sgfp4_vk_handles h;
    sgfp4_vk_context_get_handles(ctx, &h);
    const VkCommandPoolCreateInfo cpci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                          .queueFamilyIndex = h.queue_family};
    VkCommandPool pool;
    assert_int_equal(vkCreateCommandPool(h.device, &cpci, NULL, &pool), VK_SUCCESS);
    const VkCommandBufferAllocateInfo cbai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1};
    VkCommandBuffer cmd;
    assert_int_equal(vkAllocateCommandBuffers(h.device, &cbai, &cmd), VK_SUCCESS);
    const VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    assert_int_equal(vkBeginCommandBuffer(cmd, &bi), VK_SUCCESS);
    const VkMemoryBarrier before = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                                    .srcAccessMask = VK_ACCESS_HOST_WRITE_BIT,
                                    .dstAccessMask =
                                        VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_HOST_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0,
                         1, &before, 0, NULL, 0, NULL);
    sgfp4_vk_op_record(op, cmd);
    const VkMemoryBarrier after = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                                   .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                                   .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0,
                         1, &after, 0, NULL, 0, NULL);
    assert_int_equal(vkEndCommandBuffer(cmd), VK_SUCCESS);
    const VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    assert_int_equal(vkCreateFence(h.device, &fci, NULL, &fence), VK_SUCCESS);
    const VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                             .commandBufferCount = 1,
                             .pCommandBuffers = &cmd};
    assert_int_equal(vkQueueSubmit(h.queue, 1, &si, fence), VK_SUCCESS);
    assert_int_equal(vkWaitForFences(h.device, 1, &fence, VK_TRUE, UINT64_MAX), VK_SUCCESS);
    vkDestroyFence(h.device, fence, NULL);
    vkDestroyCommandPool(h.device, pool, NULL);
}

/* sgfp4_vk_decode_create: the op recorded into the caller's command buffer, then run by
 * sgfp4_vk_op_run, gives the scalar decoder's bits at an offset with a row stride, gaps
 * untouched; v1 and v2 tensors of several shapes, every dtype, the kernels of three
 * contexts. */
static void test_decode_op(void **state)
{
    (void)state;
    static const uint64_t op_shapes[][2] = {{3, 70}, {65, 129}, {130, 67}};
    static const int op_contexts[2][2] = {{CTX_TABLE, CTX_INTEGER}, {CTX_TABLE, CTX_LAYOUT}};
    for (int profile = 1; profile <= 2; profile++) {
        for (size_t i = 0; i < sizeof op_shapes / sizeof op_shapes[0]; i++) {
            const uint64_t rows = op_shapes[i][0], cols = op_shapes[i][1];
            size_t size;
            uint8_t *bytes = random_container(profile, rows, cols, GEN_LAYOUTS_ALL, 300 + i, &size);
            sgfp4_tensor *t = NULL;
            assert_int_equal(sgfp4_tensor_open(bytes, size, (sgfp4_profile)profile, rows, cols,
                                               &t, NULL, NULL),
                             SGFP4_OK);
            for (int k = 0; k < 2; k++) {
                sgfp4_vk_context *ctx = contexts[op_contexts[profile - 1][k]];
                sgfp4_vk_tensor *vt = NULL;
                assert_int_equal(sgfp4_vk_tensor_create(ctx, t, &vt, NULL), SGFP4_OK);
                for (int d = 0; d < 3; d++) {
                    const sgfp4_dtype dtype = (sgfp4_dtype)d;
                    const size_t elem = sgfp4_dtype_size(dtype), stride = cols + 3;
                    const size_t out_offset = 5 * elem;
                    const size_t cap = out_offset + ((rows - 1) * stride + cols) * elem + 4;
                    uint8_t *want = malloc(cap);
                    assert_non_null(want);
                    memset(want, 0x5A, cap);
                    const sgfp4_decode_options scalar =
                        decode_options(SGFP4_BACKEND_SCALAR, 1, SGFP4_STORE_AUTO);
                    assert_int_equal(sgfp4_decode(t, dtype, want + out_offset, stride,
                                                  cap - out_offset, &scalar),
                                     SGFP4_OK);
                    host_buffer out;
                    host_buffer_create(ctx, cap, &out);
                    memset(out.mapped, 0x5A, cap);
                    sgfp4_vk_decode_options o;
                    assert_int_equal(sgfp4_vk_decode_options_init(&o), SGFP4_OK);
                    sgfp4_vk_op *op = NULL;
                    sgfp4_diag diag;
                    if (sgfp4_vk_decode_create(ctx, vt, dtype, out.buffer, out_offset, stride,
                                               cap, &o, &op, &diag) != SGFP4_OK)
                        fail_msg("decode_create: %s", diag.message);
                    record_and_wait(ctx, op);
                    assert_memory_equal(out.mapped, want, cap);
                    memset(out.mapped, 0x5A, cap);
                    assert_int_equal(sgfp4_vk_op_run(op, &diag), SGFP4_OK);
                    assert_memory_equal(out.mapped, want, cap);
                    sgfp4_vk_op_free(op);
                    host_buffer_destroy(ctx, &out);
                    free(want);
                }
                sgfp4_vk_tensor_free(ctx, vt);
            }
            sgfp4_tensor_close(t);
            free(bytes);
        }
    }
}

/* The arguments of sgfp4_vk_decode_create and sgfp4_vk_decode_to_buffer are checked: nothing
 * is created or written on an error, and a destination one word short is too small. */
static void test_decode_op_arguments(void **state)
{
    (void)state;
    sgfp4_vk_context *ctx = contexts[CTX_TABLE];
    size_t size;
    uint8_t *bytes = random_container(2, 10, 10, GEN_LAYOUTS_ALL, 7, &size);
    sgfp4_tensor *t = NULL;
    assert_int_equal(sgfp4_tensor_open(bytes, size, SGFP4_PROFILE_V2, 10, 10, &t, NULL, NULL),
                     SGFP4_OK);
    sgfp4_vk_tensor *vt = NULL;
    assert_int_equal(sgfp4_vk_tensor_create(ctx, t, &vt, NULL), SGFP4_OK);
    host_buffer out;
    host_buffer_create(ctx, 512, &out);
    const VkBuffer b = out.buffer;
    const sgfp4_dtype f32 = SGFP4_DTYPE_F32, f16 = SGFP4_DTYPE_F16;
    sgfp4_vk_op *op = (sgfp4_vk_op *)&out; /* must come back NULL */
    sgfp4_diag diag;
    assert_int_equal(sgfp4_vk_decode_create(NULL, vt, f32, b, 0, 0, 512, NULL, &op, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_null(op);
    assert_int_equal(sgfp4_vk_decode_create(ctx, NULL, f32, b, 0, 0, 512, NULL, &op, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_vk_decode_create(ctx, vt, f32, b, 0, 0, 512, NULL, NULL, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_vk_decode_create(ctx, vt, (sgfp4_dtype)7, b, 0, 0, 512, NULL, &op,
                                            &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_vk_decode_create(ctx, vt, f32, (VkBuffer)VK_NULL_HANDLE, 0, 0, 512,
                                            NULL, &op, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_vk_decode_create(ctx, vt, f32, b, 0, 9, 512, NULL, &op, &diag),
                     SGFP4_ERR_ARGUMENT); /* row stride below cols */
    assert_int_equal(sgfp4_vk_decode_create(ctx, vt, f32, b, 2, 0, 512, NULL, &op, &diag),
                     SGFP4_ERR_ARGUMENT); /* offset not a multiple of the element size */
    sgfp4_vk_decode_options bad = {.struct_size = 3};
    assert_int_equal(sgfp4_vk_decode_create(ctx, vt, f32, b, 0, 0, 512, &bad, &op, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_non_null(strstr(diag.message, "struct_size"));
    sgfp4_vk_decode_options flagged;
    assert_int_equal(sgfp4_vk_decode_options_init(&flagged), SGFP4_OK);
    assert_int_equal(flagged.flags, 0u);
    flagged.flags = 1;
    assert_int_equal(sgfp4_vk_decode_create(ctx, vt, f32, b, 0, 0, 512, &flagged, &op, &diag),
                     SGFP4_ERR_ARGUMENT);
    /* 100 f32 = 400 bytes: 399 is too small, 400 fits; at offset 8, 407 is too small */
    assert_int_equal(sgfp4_vk_decode_create(ctx, vt, f32, b, 0, 0, 399, NULL, &op, &diag),
                     SGFP4_ERR_DST_TOO_SMALL);
    assert_int_equal(sgfp4_vk_decode_create(ctx, vt, f32, b, 8, 0, 407, NULL, &op, &diag),
                     SGFP4_ERR_DST_TOO_SMALL);
    assert_int_equal(sgfp4_vk_decode_create(ctx, vt, f32, b, 600, 0, 512, NULL, &op, &diag),
                     SGFP4_ERR_DST_TOO_SMALL); /* offset past the end */
    assert_int_equal(sgfp4_vk_decode_create(ctx, vt, f32, b, 0, UINT64_MAX / 2, 512, NULL, &op,
                                            &diag),
                     SGFP4_ERR_DST_TOO_SMALL); /* a stride whose span overflows */
    assert_null(op);
    /* f16 at offset 2, packed: elements end at byte 202, their word at 204 */
    assert_int_equal(sgfp4_vk_decode_create(ctx, vt, f16, b, 2, 0, 203, NULL, &op, &diag),
                     SGFP4_ERR_DST_TOO_SMALL);
    assert_int_equal(sgfp4_vk_decode_to_buffer(ctx, vt, f16, b, 2, 0, 203, NULL, &diag),
                     SGFP4_ERR_DST_TOO_SMALL);
    assert_int_equal(sgfp4_vk_decode_to_buffer(ctx, vt, f32, b, 0, 0, 399, NULL, &diag),
                     SGFP4_ERR_DST_TOO_SMALL);
    assert_int_equal(sgfp4_vk_decode_to_buffer(ctx, vt, f32, b, 0, 0, 512, &bad, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_vk_decode_create(ctx, vt, f16, b, 2, 0, 204, NULL, &op, &diag),
                     SGFP4_OK);
    assert_non_null(op);
    sgfp4_vk_op_free(op);
    assert_int_equal(sgfp4_vk_decode_to_buffer(ctx, vt, f32, b, 0, 0, 400, NULL, &diag),
                     SGFP4_OK);
    host_buffer_destroy(ctx, &out);
    sgfp4_vk_tensor_free(ctx, vt);
    sgfp4_tensor_close(t);
    free(bytes);
}

static void test_caller_buffers(void **state)
{
    (void)state;
    sgfp4_vk_handles h;
    sgfp4_vk_context_get_handles(contexts[CTX_TABLE], &h);
    sgfp4_vk_context_options walk;
    sgfp4_vk_context_options_init(&walk);
    walk.flags = SGFP4_VK_V2_WALK;
    sgfp4_vk_context *adopted = NULL;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_vk_context_import(&h, &adopted, &walk, &diag), SGFP4_OK);
    sgfp4_vk_device_info info;
    sgfp4_vk_device_info_init(&info);
    sgfp4_vk_context_get_info(adopted, &info);
    if (!info.exact_path) /* an adopted device may lack shaderFloat16: f16 by the add */
        assert_int_equal(info.f16_conversion, SGFP4_VK_F16_FLOAT_ADD);
    check_caller_buffers(1, adopted);
    check_caller_buffers(2, adopted);
    sgfp4_vk_context_free(adopted); /* leaves the adopted device alone: contexts[0] still works */
}
#else
static void test_caller_buffers(void **state)
{
    (void)state;
    skip();
}
static void test_decode_op(void **state)
{
    (void)state;
    skip();
}
static void test_decode_op_arguments(void **state)
{
    (void)state;
    skip();
}
#endif

/* Arguments are checked; nothing aborts. */
static void test_bad_arguments(void **state)
{
    (void)state;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_vk_tensor_create(contexts[0], NULL, NULL, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_vk_decode_to_host(contexts[0], NULL, SGFP4_DTYPE_F32, NULL, 0, 0,
                                             &diag),
                     SGFP4_ERR_ARGUMENT);
    size_t size;
    uint8_t *bytes = random_container(1, 10, 10, GEN_LAYOUTS_ALL, 6, &size);
    sgfp4_tensor *t = NULL;
    assert_int_equal(sgfp4_tensor_open(bytes, size, SGFP4_PROFILE_V1, 10, 10, &t, NULL, NULL),
                     SGFP4_OK);
    sgfp4_vk_tensor *vt = NULL;
    assert_int_equal(sgfp4_vk_tensor_create(contexts[0], t, &vt, &diag), SGFP4_OK);
    float small[99];
    assert_int_equal(sgfp4_vk_decode_to_host(contexts[0], vt, SGFP4_DTYPE_F32, small, 10,
                                             sizeof small, &diag),
                     SGFP4_ERR_DST_TOO_SMALL);
    assert_int_equal(sgfp4_vk_decode_to_host(contexts[0], vt, (sgfp4_dtype)7, small, 10,
                                             sizeof small, &diag),
                     SGFP4_ERR_ARGUMENT);
    sgfp4_vk_tensor_free(contexts[0], vt);
    sgfp4_tensor_close(t);
    free(bytes);
    sgfp4_vk_context_free(NULL);
    sgfp4_vk_tensor_free(contexts[0], NULL);
}

int main(void)
{
    /* lavapipe (through LLVM and libxml2) keeps an allocation until exit, and the loader
     * unloads the driver with the last instance, after which LeakSanitizer cannot name the
     * module for tests/vulkan/lsan.supp. Hold a reference to the driver so it stays loaded
     * (harmless where it does not exist). */
    (void)dlopen("libvulkan_lvp.so", RTLD_LAZY);
    const unsigned flags[CTX_COUNT] = {SGFP4_VK_V2_TABLE, SGFP4_VK_V2_WALK,
                                       SGFP4_VK_FORCE_INTEGER_PATH | SGFP4_VK_V2_TABLE,
                                       SGFP4_VK_F16_NO_DEVICE_CONVERSION | SGFP4_VK_V2_TABLE,
                                       SGFP4_VK_F16_GUARD,
                                       SGFP4_VK_V2_LAYOUT,
                                       SGFP4_VK_V2_LAYOUT | SGFP4_VK_FORCE_INTEGER_PATH,
                                       SGFP4_VK_V2_LAYOUT | SGFP4_VK_F16_NO_DEVICE_CONVERSION};
    for (int c = 0; c < CTX_COUNT; c++) {
        sgfp4_vk_context_options o;
        sgfp4_vk_context_options_init(&o);
        o.flags = flags[c];
        sgfp4_diag diag;
        const sgfp4_status s = sgfp4_vk_context_create(&contexts[c], &o, &diag);
        if (s == SGFP4_ERR_UNAVAILABLE || s == SGFP4_ERR_VK_NO_DEVICE) {
            printf("skip: %s\n", diag.message);
            return 77;
        }
        if (s != SGFP4_OK) {
            printf("sgfp4_vk_create: %s\n", diag.message);
            return 1;
        }
    }
    static const char *const f16_names[3] = {"integer code", "f32 add", "device conversion"};
    for (int c = 0; c < CTX_COUNT; c++) {
        sgfp4_vk_device_info info;
        sgfp4_vk_device_info_init(&info);
        sgfp4_vk_context_get_info(contexts[c], &info);
        if (c == 0)
            printf("device: %s (RTE float32 %d, float16 %d, RTE float16 %d, signed zeros "
                   "32/16 %d/%d, denorm preserve 16 %d)\n",
                   info.name, info.rte_float32, info.shader_float16, info.rte_float16,
                   info.signed_zero_preserve_float32, info.signed_zero_preserve_float16,
                   info.denorm_preserve_float16);
        printf("context %s: %s pipeline, f16 by %s\n", context_names[c],
               info.exact_path ? "integer" : "RTE float", f16_names[info.f16_conversion]);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments),  cmocka_unit_test(test_caller_buffers),
        cmocka_unit_test(test_decode_op),      cmocka_unit_test(test_decode_op_arguments),
        cmocka_unit_test(test_random_v1),
        cmocka_unit_test(test_random_v2),      cmocka_unit_test(test_golden_vectors),
        cmocka_unit_test(test_mnn_fixtures),   cmocka_unit_test(test_large_4096),
        cmocka_unit_test(test_f16_edges),      cmocka_unit_test(test_run_to_run),
    };
    const int failed = cmocka_run_group_tests(tests, NULL, NULL);
    for (int c = 0; c < CTX_COUNT; c++)
        sgfp4_vk_context_free(contexts[c]);
    return failed;
}
