/* Memory and huge headers. jansson does not fail cleanly when an allocation fails in the
 * middle of a parse (it hangs or crashes), so the reader estimates, from a linear pre-scan,
 * what the parse will allocate and refuses with SGFP4_ERR_NOMEM when that cannot be had.
 * Checked here: the estimate is an upper bound of what jansson really allocates at its peak,
 * over the shapes that cost it most per byte (measured through json_set_alloc_funcs in this
 * process); and under an address-space limit a huge header fails as out of memory, with a
 * message that says so, in a child process, while a limit that leaves room opens it.
 * SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <malloc.h>

#include "model/json_scan.h"
#include "sgfp4_model.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* ---- jansson's real peak ----------------------------------------------------------------- */

static size_t live, peak;
static void *counting_malloc(size_t n)
{
    void *p = malloc(n);
    if (p) {
        live += malloc_usable_size(p) + 16; /* + the allocator's chunk header */
        peak = live > peak ? live : peak;
    }
    return p;
}
static void counting_free(void *p)
{
    if (p)
        live -= malloc_usable_size(p) + 16;
    free(p);
}

/* Text made of `count` copies of `unit` joined by `sep`, between `open` and `close`. */
static char *repeat(const char *open, const char *unit, const char *sep, size_t count,
                    const char *close, size_t *length)
{
    const size_t u = strlen(unit), s = strlen(sep);
    char *text = malloc(strlen(open) + count * (u + s) + strlen(close) + 1), *p = text;
    assert_non_null(text);
    p += sprintf(p, "%s", open);
    for (size_t k = 0; k < count; k++) {
        if (k) {
            memcpy(p, sep, s);
            p += s;
        }
        memcpy(p, unit, u);
        p += u;
    }
    p += sprintf(p, "%s", close);
    *length = (size_t)(p - text);
    return text;
}

/* Keys "%x" of `count` entries, each followed by `value`. */
static char *keyed(size_t count, const char *value, size_t *length)
{
    char *text = malloc(16 + count * (24 + strlen(value))), *p = text;
    assert_non_null(text);
    *p++ = '{';
    for (size_t k = 0; k < count; k++)
        p += sprintf(p, "%s\"%zx\":%s", k ? "," : "", k, value);
    *p++ = '}';
    *length = (size_t)(p - text);
    return text;
}

static void check_bound(const char *what, const char *text, size_t length)
{
    json_scan scan;
    json_scan_run(text, length, NULL, &scan);
    const uint64_t bound = json_scan_parse_memory(&scan);
    json_scan_free(&scan);
    live = peak = 0;
    json_set_alloc_funcs(counting_malloc, counting_free);
    json_error_t err;
    json_t *root = json_loadb(text, length, JSON_REJECT_DUPLICATES, &err);
    json_decref(root);
    json_set_alloc_funcs(malloc, free);
    if (!root)
        fail_msg("%s: %s", what, err.text);
    print_message("%-28s %9zu bytes: jansson peak %10zu, bound %10llu (%.1fx)\n", what, length,
                  peak, (unsigned long long)bound, (double)bound / (double)peak);
    if (bound < peak)
        fail_msg("%s: the bound %llu is below jansson's peak %zu", what,
                 (unsigned long long)bound, peak);
}

static void estimate_bounds_jansson(void **state)
{
    (void)state;
    static const struct {
        const char *name, *unit;
    } arrays[] = {{"integers", "0"},  {"reals", "1.5"},   {"empty strings", "\"\""},
                  {"empty arrays", "[]"}, {"empty objects", "{}"}, {"literals", "true"},
                  {"strings of 32", "\"abcdefghijklmnopqrstuvwxyz012345\""},
                  {"nested arrays", "[[[0]]]"}, {"escapes", "\"\\u00e9\\n\""}};
    for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++) {
        size_t n;
        char *text = repeat("[", arrays[k].unit, ",", 50000, "]", &n);
        check_bound(arrays[k].name, text, n);
        free(text);
    }
    static const struct {
        const char *name, *value;
    } objects[] = {{"keys with integers", "0"},
                   {"keys with objects", "{}"},
                   {"tensor entries", "{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}"},
                   {"entries of rank 16", "{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1,1,1,1,"
                                          "1,1,1,1],\"data_offsets\":[0,4]}"}};
    for (size_t k = 0; k < sizeof objects / sizeof objects[0]; k++) {
        size_t n;
        char *text = keyed(50000, objects[k].value, &n);
        check_bound(objects[k].name, text, n);
        free(text);
    }
    /* one long string: the lexer's buffer grows by doubling, then the value is copied */
    const size_t big = 20u << 20;
    char *text = malloc(big + 8);
    assert_non_null(text);
    memcpy(text, "[\"", 2);
    memset(text + 2, 'x', big);
    memcpy(text + 2 + big, "\"]", 2);
    check_bound("one 20 MB string", text, big + 4);
    free(text);
}

/* ---- under an address-space limit -------------------------------------------------------- */

#ifndef UNDER_ASAN

/* A safetensors file whose header is one __metadata__ string of `n` bytes. */
static uint8_t *string_header(size_t n, size_t *size)
{
    const char head[] = "{\"__metadata__\":{\"k\":\"", tail[] = "\"}}";
    const size_t len = sizeof head - 1 + n + sizeof tail - 1;
    uint8_t *f = malloc(8 + len);
    assert_non_null(f);
    for (int k = 0; k < 8; k++)
        f[k] = (uint8_t)((uint64_t)len >> (8 * k));
    memcpy(f + 8, head, sizeof head - 1);
    memset(f + 8 + sizeof head - 1, 'x', n);
    memcpy(f + 8 + sizeof head - 1 + n, tail, sizeof tail - 1);
    *size = 8 + len;
    return f;
}

/* The address space this process uses now, in bytes. */
static uint64_t address_space_used(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long pages = 0;
    if (!f || fscanf(f, "%llu", &pages) != 1)
        fail_msg("cannot read /proc/self/statm");
    fclose(f);
    return pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Opens the file in a child whose address space may grow by `room` bytes; returns the
 * status it got (or -1 if it did not exit normally: a crash, a hang past 60 s). */
static int open_with_room(const uint8_t *f, size_t size, uint64_t room, char *message,
                          size_t message_size)
{
    int pipe_fd[2];
    assert_int_equal(pipe(pipe_fd), 0);
    const pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        close(pipe_fd[0]);
        alarm(60);
        const struct rlimit limit = {address_space_used() + room, RLIM_INFINITY};
        if (setrlimit(RLIMIT_AS, &limit) != 0)
            _exit(100);
        sgfp4_model *m = NULL;
        sgfp4_diag diag;
        const sgfp4_status s = sgfp4_model_open_memory(f, size, &m, NULL, &diag);
        sgfp4_model_close(m);
        if (s != SGFP4_OK && write(pipe_fd[1], diag.message, strlen(diag.message)) < 0)
            _exit(101);
        _exit((int)s);
    }
    close(pipe_fd[1]);
    const ssize_t got = read(pipe_fd[0], message, message_size - 1);
    message[got > 0 ? got : 0] = '\0';
    close(pipe_fd[0]);
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

#endif

static void huge_header_under_memory_limit(void **state)
{
    (void)state;
#ifdef UNDER_ASAN
    skip(); /* ASan reserves terabytes of shadow address space: no RLIMIT_AS possible */
#else
    size_t size;
    uint8_t *f = string_header(64u << 20, &size); /* parsing it needs about 300 MB */
    char message[256];
    /* 128 MB of room: refused up front as out of memory, not a crash or a hang */
    int s = open_with_room(f, size, UINT64_C(128) << 20, message, sizeof message);
    if (s != SGFP4_ERR_NOMEM)
        fail_msg("128 MB: status %d (%s), want NOMEM", s, message);
    assert_non_null(strstr(message, "out of memory"));
    /* 1.5 GB of room: it opens */
    s = open_with_room(f, size, UINT64_C(1536) << 20, message, sizeof message);
    if (s != SGFP4_OK)
        fail_msg("1.5 GB: status %d (%s), want OK", s, message);
    free(f);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(estimate_bounds_jansson),
        cmocka_unit_test(huge_header_under_memory_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
