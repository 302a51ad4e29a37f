/* Container bytes that change after sgfp4_tensor_open(), as a file another process rewrites
 * while a runtime holds it mapped: the container sits in a file mapped MAP_SHARED and is
 * rewritten through the file's descriptor (pwrite), so every change is visible through the
 * mapping at once. The open copied every place the decoders locate bytes by (v1 payload
 * offsets; v2 record offsets, layouts, split maps and leaf modes), so rewriting them moves no
 * read: every CPU decode path (each kernel set, row ranges, gathers, threads), the leaf
 * listing, the reserved-symbol count, the products (plans made before and after the change,
 * with and without the repacked layout, every kernel set) and the Vulkan upload (the leaf
 * table, the products' layout and the record walk, where a device exists) give the bytes
 * they gave before the rewrite. The rewrites leave scales, biases and codes alone (those are
 * read in place: a change of them may change values, never addresses). The mapping ends at
 * a page boundary followed by an inaccessible page, so a read past the container faults.
 * Also: a view opened with the copy option keeps decoding after the file is truncated.
 * SPDX-License-Identifier: MIT */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "matvec/matvec_internal.h"
#include "sgfp4_experimental.h"
#include "sgfp4_vulkan.h"
#include "datagen/generator.h"

/* ---- a container in a mapped file ---- */

typedef struct mapped {
    int fd;
    uint8_t *region; /* the file's mapping, then one inaccessible page */
    size_t region_size;
    size_t pad;        /* bytes before the container in the file */
    const uint8_t *data; /* the container, ending at a page boundary */
    size_t size;
} mapped;

static void mapped_create(const uint8_t *bytes, size_t size, mapped *m)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char path[] = "/tmp/sgfp4-mapped-XXXXXX";
    m->fd = mkstemp(path);
    assert_true(m->fd >= 0);
    unlink(path); /* the descriptor and the mapping keep it */
    m->pad = (page - size % page) % page;
    const size_t file_size = m->pad + size;
    uint8_t *zeros = calloc(1, m->pad + 1);
    assert_non_null(zeros);
    assert_int_equal(pwrite(m->fd, zeros, m->pad, 0), (ssize_t)m->pad);
    assert_int_equal(pwrite(m->fd, bytes, size, (off_t)m->pad), (ssize_t)size);
    free(zeros);
    m->region_size = file_size + page;
    m->region = mmap(NULL, m->region_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m->region != MAP_FAILED);
    void *file = mmap(m->region, file_size, PROT_READ, MAP_SHARED | MAP_FIXED, m->fd, 0);
    assert_ptr_equal(file, m->region);
    m->data = m->region + m->pad;
    m->size = size;
}

static void mapped_free(mapped *m)
{
    munmap(m->region, m->region_size);
    close(m->fd);
}

/* Writes n bytes at container offset `at` into the file (seen through the mapping). */
static void rewrite(const mapped *m, uint64_t at, const void *bytes, size_t n)
{
    assert_true(at + n <= m->size);
    assert_int_equal(pwrite(m->fd, bytes, n, (off_t)(m->pad + at)), (ssize_t)n);
}

static void rewrite_u32(const mapped *m, uint64_t at, uint32_t value)
{
    const uint8_t le[4] = {(uint8_t)value, (uint8_t)(value >> 8), (uint8_t)(value >> 16),
                           (uint8_t)(value >> 24)};
    rewrite(m, at, le, 4);
}

/* ---- everything a view gives, as one byte string ---- */

typedef struct transcript {
    uint8_t *bytes;
    size_t size, capacity;
} transcript;

static void put(transcript *tr, const void *data, size_t n)
{
    if (tr->size + n > tr->capacity) {
        tr->capacity = 2 * (tr->size + n);
        tr->bytes = realloc(tr->bytes, tr->capacity);
        assert_non_null(tr->bytes);
    }
    memcpy(tr->bytes + tr->size, data, n);
    tr->size += n;
}

static const sgfp4_backend backends[] = {SGFP4_BACKEND_SCALAR, SGFP4_BACKEND_GENERIC,
                                         SGFP4_BACKEND_AVX2,   SGFP4_BACKEND_AVX512,
                                         SGFP4_BACKEND_NEON,   SGFP4_BACKEND_AUTO};
#define BACKEND_COUNT (sizeof backends / sizeof backends[0])

static void put_decodes(transcript *tr, const sgfp4_tensor *t, uint64_t rows, uint64_t cols)
{
    const size_t bytes = (size_t)(rows * cols * 4);
    uint8_t *out = malloc(bytes);
    assert_non_null(out);
    const uint64_t gathered[] = {rows - 1, 0, rows / 2, rows / 2, rows / 3};
    for (size_t k = 0; k < BACKEND_COUNT; k++)
        for (unsigned threads = 1; threads <= 3; threads += 2) {
            sgfp4_decode_options o;
            sgfp4_decode_options_init(&o);
            o.backend = backends[k];
            o.threads = threads;
            sgfp4_status s = sgfp4_decode(t, SGFP4_DTYPE_F32, out, 0, bytes, &o);
            if (s == SGFP4_ERR_UNAVAILABLE)
                continue;
            assert_int_equal(s, SGFP4_OK);
            put(tr, out, bytes);
            s = sgfp4_decode_rows(t, rows / 3, rows - rows / 4, SGFP4_DTYPE_F16, out, 0,
                                  bytes, &o);
            assert_int_equal(s, SGFP4_OK);
            put(tr, out, (size_t)((rows - rows / 4 - rows / 3) * cols * 2));
            s = sgfp4_decode_gather(t, gathered, 5, SGFP4_DTYPE_BF16, out, 0, bytes, &o);
            assert_int_equal(s, SGFP4_OK);
            put(tr, out, (size_t)(5 * cols * 2));
        }
    free(out);
}

/* The places of every leaf (not the header word, whose value is read in place). */
static void put_leaves(transcript *tr, const sgfp4_tensor *t)
{
    sgfp4_tensor_info info;
    sgfp4_tensor_info_init(&info);
    sgfp4_tensor_get_info(t, &info);
    sgfp4_leaf leaves[256];
    for (uint64_t b = 0; b < info.blocks; b++) {
        const size_t n = sgfp4_tensor_block_leaves(t, b, leaves, 256);
        put(tr, &n, sizeof n);
        for (size_t i = 0; i < n; i++) {
            const uint64_t place[5] = {leaves[i].y, leaves[i].x, leaves[i].size,
                                       leaves[i].mode, leaves[i].payload_offset};
            put(tr, place, sizeof place);
        }
    }
    const uint64_t reserved = sgfp4_tensor_reserved_symbols(t);
    put(tr, &reserved, sizeof reserved);
}

/* Products of plan: Class B and Class A on every kernel set, one and two threads. */
static void put_products(transcript *tr, const sgfp4_matvec_plan *plan, uint64_t rows,
                         uint64_t cols)
{
    enum { BATCH = 3 };
    float *x = malloc((size_t)(BATCH * cols) * sizeof *x);
    float *y = malloc((size_t)(BATCH * rows) * sizeof *y);
    const size_t q8_size = sgfp4_matvec_q8_bytes(cols, BATCH);
    void *q8 = malloc(q8_size);
    assert_true(x && y && q8);
    for (uint64_t j = 0; j < BATCH * cols; j++)
        x[j] = (float)((int)(j * 7919 % 257) - 128) / 64.0f;
    assert_int_equal(sgfp4_matvec_quantize(x, SGFP4_DTYPE_F32, cols, BATCH, 0, q8, q8_size,
                                           NULL, NULL),
                     SGFP4_OK);
    const size_t y_bytes = (size_t)(BATCH * rows) * sizeof *y;
    for (size_t k = 0; k < BACKEND_COUNT; k++)
        for (unsigned threads = 1; threads <= 2; threads++) {
            sgfp4_matvec_options o;
            sgfp4_matvec_options_init(&o);
            o.backend = backends[k];
            o.threads = threads;
            sgfp4_status s =
                sgfp4_matvec_float(plan, x, SGFP4_DTYPE_F32, BATCH, 0, 0, rows, y, 0, y_bytes, &o);
            if (s == SGFP4_ERR_UNAVAILABLE)
                continue;
            assert_int_equal(s, SGFP4_OK);
            put(tr, y, y_bytes);
            s = sgfp4_matvec_q8(plan, q8, q8_size, BATCH, rows / 5, rows, y, 0, y_bytes, &o);
            assert_int_equal(s, SGFP4_OK);
            put(tr, y, (size_t)(BATCH * (rows - rows / 5)) * sizeof *y);
        }
    free(x);
    free(y);
    free(q8);
}

/* Vulkan contexts, where a device exists: the default (v2 through the products' layout),
 * the v2 leaf table and the v2 record walk (both read the uploaded container). */
#define VK_CONTEXTS 3
static sgfp4_vk_context *vk[VK_CONTEXTS];
static int vk_tried;

static void vk_setup(void)
{
    if (vk_tried)
        return;
    vk_tried = 1;
    const unsigned flags[VK_CONTEXTS] = {0, SGFP4_VK_V2_TABLE, SGFP4_VK_V2_WALK};
    for (int c = 0; c < VK_CONTEXTS; c++) {
        sgfp4_vk_context_options o;
        sgfp4_vk_context_options_init(&o);
        o.flags = flags[c];
        if (sgfp4_vk_context_create(&vk[c], &o, NULL) != SGFP4_OK) {
            vk[c] = NULL;
            printf("no Vulkan device: the upload is not checked here\n");
            return;
        }
    }
}

static void put_vulkan(transcript *tr, const sgfp4_tensor *t, uint64_t rows, uint64_t cols)
{
    vk_setup();
    const size_t bytes = (size_t)(rows * cols * 4);
    uint8_t *out = malloc(bytes);
    assert_non_null(out);
    for (int c = 0; c < VK_CONTEXTS && vk[c]; c++) {
        sgfp4_vk_tensor *vt = NULL;
        sgfp4_diag diag;
        assert_int_equal(sgfp4_vk_tensor_create(vk[c], t, &vt, &diag), SGFP4_OK);
        assert_int_equal(
            sgfp4_vk_decode_to_host(vk[c], vt, SGFP4_DTYPE_F32, out, 0, bytes, &diag),
            SGFP4_OK);
        put(tr, out, bytes);
        sgfp4_vk_tensor_free(vk[c], vt);
    }
    free(out);
}

/* Plans made while the bytes were as opened: with and without the repacked layout. */
typedef struct plans {
    sgfp4_matvec_plan *plan[2];
} plans;

static void plans_make(const sgfp4_tensor *t, plans *p)
{
    for (int repack = 0; repack < 2; repack++)
        assert_int_equal(sgfp4_matvec_plan_create_with(t, repack, &p->plan[repack]), SGFP4_OK);
}

static void plans_free(plans *p)
{
    for (int repack = 0; repack < 2; repack++)
        sgfp4_matvec_plan_free(p->plan[repack]);
}

/* Everything t gives: decodes, leaves, products on `early` (plans made before any rewrite)
 * and on plans made now, the Vulkan upload. */
static transcript everything(const sgfp4_tensor *t, uint64_t rows, uint64_t cols,
                             const plans *early)
{
    transcript tr = {0};
    put_decodes(&tr, t, rows, cols);
    put_leaves(&tr, t);
    plans now;
    plans_make(t, &now);
    for (int repack = 0; repack < 2; repack++) {
        put_products(&tr, early->plan[repack], rows, cols);
        put_products(&tr, now.plan[repack], rows, cols);
    }
    plans_free(&now);
    put_vulkan(&tr, t, rows, cols);
    return tr;
}

static void assert_same(const transcript *want, const transcript *got, const char *what)
{
    if (want->size != got->size || memcmp(want->bytes, got->bytes, want->size) != 0) {
        size_t at = 0;
        while (at < want->size && at < got->size && want->bytes[at] == got->bytes[at])
            at++;
        fail_msg("%s: the outputs changed (byte %zu of %zu)", what, at, want->size);
    }
}

/* ---- the rewrites ---- */

/* A generated container of the profile in a mapped file, opened; its outputs in *want. */
typedef struct fixture {
    gen_container c;
    mapped m;
    sgfp4_tensor *t;
    plans early;
    transcript want;
} fixture;

static void fixture_open(fixture *f, int profile, uint64_t rows, uint64_t cols, uint64_t seed,
                         int copy)
{
    gen_params p = gen_shape_params(profile, rows, cols);
    p.halves = GEN_HALVES_LLM;
    gen_rng rng = {seed};
    assert_int_equal(gen_generate(&f->c, &rng, &p), 0);
    mapped_create(f->c.data, f->c.size, &f->m);
    sgfp4_open_options o;
    sgfp4_open_options_init(&o);
    o.copy = copy;
    sgfp4_diag diag;
    const sgfp4_status s =
        sgfp4_tensor_open(f->m.data, f->m.size, SGFP4_PROFILE_AUTO, rows, cols, &f->t, &o, &diag);
    if (s != SGFP4_OK)
        fail_msg("open: %s", diag.message);
    plans_make(f->t, &f->early);
    f->want = everything(f->t, rows, cols, &f->early);
}

static void fixture_check(fixture *f, const char *what)
{
    transcript got = everything(f->t, f->c.rows, f->c.cols, &f->early);
    assert_same(&f->want, &got, what);
    free(got.bytes);
}

/* Puts the original bytes back. */
static void restore(fixture *f)
{
    rewrite(&f->m, 0, f->c.data, f->c.size);
}

static void fixture_close(fixture *f)
{
    plans_free(&f->early);
    sgfp4_tensor_close(f->t);
    mapped_free(&f->m);
    free(f->want.bytes);
    gen_free(&f->c);
}

/* v1: every payload offset pointed 4 GiB away, then at the last payload, then the mode
 * flags flipped. */
static void v1_offsets_rewritten(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, 1, 200, 330, 11, 0);
    const uint64_t B = f.c.blocks;
    for (uint64_t b = 0; b < B; b++)
        rewrite_u32(&f.m, 4 * B + 4 * b, 0xFFFFFFF0u);
    fixture_check(&f, "v1 offsets 0xFFFFFFF0");
    for (uint64_t b = 0; b < B; b++)
        rewrite_u32(&f.m, 4 * B + 4 * b, (uint32_t)(2048 * (B - 1)) | 0xDu);
    fixture_check(&f, "v1 offsets at the last payload, flags set");
    restore(&f);
    for (uint64_t b = 0; b < B; b++) {
        const uint32_t word = sgfp4_load_u32le(f.c.data + 4 * B + 4 * b);
        rewrite_u32(&f.m, 4 * B + 4 * b, word ^ 1u);
    }
    fixture_check(&f, "v1 modes flipped");
    fixture_close(&f);
}

/* v2: the record offsets, every sb_header, every split map and every leaf's mode bit. */
static void v2_places_rewritten(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        fixture f;
        fixture_open(&f, 2, 190 + 40 * seed, 260, seed, 0);
        const uint64_t B = f.c.blocks;
        for (uint64_t b = 0; b < B; b++)
            rewrite_u32(&f.m, 16 + 4 * b, 0xFFFFFFF0u - 16 * (uint32_t)b);
        fixture_check(&f, "v2 record offsets");
        restore(&f);
        for (uint64_t b = 0; b < B; b++)
            rewrite_u32(&f.m, f.c.block[b].record_at, 0xFFFFFFFFu);
        fixture_check(&f, "v2 sb_headers");
        for (uint64_t b = 0; b < B; b++)
            rewrite_u32(&f.m, f.c.block[b].record_at, SGFP4_LAYOUT_FULL_4X4);
        fixture_check(&f, "v2 layouts FULL_4X4");
        restore(&f);
        for (uint64_t b = 0; b < B; b++)
            if (f.c.block[b].layout == SGFP4_LAYOUT_MIXED)
                for (unsigned w = 0; w < 3; w++)
                    rewrite_u32(&f.m, f.c.block[b].record_at + 4 + 4 * w, w ? 0xFFFFFFFFu : 1u);
        fixture_check(&f, "v2 split maps");
        restore(&f);
        for (uint64_t b = 0; b < B; b++)
            for (unsigned i = 0; i < f.c.block[b].leaves_count; i++) {
                const uint64_t at = f.c.block[b].headers_at + 4 * i;
                rewrite_u32(&f.m, at, sgfp4_load_u32le(f.c.data + at) ^ 1u);
            }
        fixture_check(&f, "v2 leaf modes flipped");
        restore(&f);
        fixture_close(&f);
    }
}

/* A view opened with the copy option reads the file no more: truncated, it decodes as
 * before (a view on the mapping would take SIGBUS). */
static void copy_survives_truncation(void **state)
{
    (void)state;
    for (int profile = 1; profile <= 2; profile++) {
        fixture f;
        fixture_open(&f, profile, 150, 200, 7, 1);
        assert_int_equal(ftruncate(f.m.fd, 0), 0);
        fixture_check(&f, "truncated");
        fixture_close(&f);
    }
}

int main(void)
{
    /* The loader unloads lavapipe with the last instance, after which LeakSanitizer cannot
     * name the module of what it keeps until exit (tests/vulkan/lsan.supp): hold a reference
     * so it stays loaded, as test_vulkan_decode does (harmless where it does not exist). */
    (void)dlopen("libvulkan_lvp.so", RTLD_LAZY);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(v1_offsets_rewritten),
        cmocka_unit_test(v2_places_rewritten),
        cmocka_unit_test(copy_survives_truncation),
    };
    const int failed = cmocka_run_group_tests(tests, NULL, NULL);
    for (int c = 0; c < VK_CONTEXTS; c++)
        sgfp4_vk_context_free(vk[c]);
    return failed;
}
