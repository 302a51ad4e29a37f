/* `sgfp4 encode` end to end: raw and .npy inputs, v1 and v2 outputs that `sgfp4 verify`
 * accepts, and no output file when the input is bad.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char dir[256];
static const char *cli;

static int run(const char *format, ...)
{
    char command[2048];
    va_list ap;
    va_start(ap, format);
    int n = snprintf(command, sizeof command, "%s ", cli);
    vsnprintf(command + n, sizeof command - (size_t)n, format, ap);
    va_end(ap);
    strncat(command, " 2>/dev/null >/dev/null", sizeof command - strlen(command) - 1);
    const int status = system(command);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void write_raw(const char *path, unsigned count, float bad)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (unsigned i = 0; i < count; i++) {
        float v = (float)sin(i * 0.37) * 0.1f;
        if (i == count / 2)
            v = bad;
        fwrite(&v, 4, 1, f);
    }
    fclose(f);
}

static int exists(const char *path) { return access(path, F_OK) == 0; }

static void encodes_raw_to_v1_and_v2(void **state)
{
    (void)state;
    char in[512], out[512];
    snprintf(in, sizeof in, "%s/w.f32", dir);
    write_raw(in, 100 * 150, 0.5f);
    snprintf(out, sizeof out, "%s/w.sgfp4", dir);
    assert_int_equal(run("encode %s --shape 100x150 -o %s --bpw 3.5 --threads 2", in, out), 0);
    assert_int_equal(run("verify %s --shape 100x150", out), 0);
    assert_int_equal(run("encode %s --shape 100x150 -o %s --policy threshold -f", in, out), 0);
    assert_int_equal(run("verify %s --shape 100x150", out), 0);
    snprintf(out, sizeof out, "%s/w.fp4", dir);
    assert_int_equal(run("encode %s --shape 100x150 -o %s", in, out), 0);
    assert_int_equal(run("verify %s --shape 100x150 --profile v1", out), 0);
}

/* Runs a command and returns its stdout (first 64 KiB), or NULL. */
static char *capture(const char *format, ...)
{
    char command[2048];
    va_list ap;
    va_start(ap, format);
    int n = snprintf(command, sizeof command, "%s ", cli);
    vsnprintf(command + n, sizeof command - (size_t)n, format, ap);
    va_end(ap);
    FILE *p = popen(command, "r");
    if (!p)
        return NULL;
    char *text = calloc(65536, 1);
    const size_t got = text ? fread(text, 1, 65535, p) : 0;
    if (pclose(p) != 0 || !text) {
        free(text);
        return NULL;
    }
    text[got] = '\0';
    return text;
}

static void quality_report_and_leaf_map(void **state)
{
    (void)state;
    char in[512], out[512], png[512];
    snprintf(in, sizeof in, "%s/q.f32", dir);
    write_raw(in, 130 * 200, 0.5f);
    snprintf(out, sizeof out, "%s/q.sgfp4", dir);
    assert_int_equal(run("encode %s --shape 130x200 -o %s --bpw 4", in, out), 0);
    char *text = capture("verify %s --shape 130x200 --against %s", out, in);
    assert_non_null(text);
    assert_non_null(strstr(text, "bits per weight: "));
    assert_non_null(strstr(text, "relative L2 error: "));
    assert_non_null(strstr(text, "SNR: "));
    assert_non_null(strstr(text, "max abs error: "));
    free(text);
    text = capture("info %s --shape 130x200 --against %s", out, in);
    assert_non_null(text);
    assert_non_null(strstr(text, "RMSE: "));
    free(text);
    /* the reference must have the container's shape */
    assert_int_equal(run("verify %s --shape 130x200 --against %s/w.f32", out, dir), 1);
    snprintf(png, sizeof png, "%s/q.png", dir);
    assert_int_equal(run("info %s --shape 130x200 --map %s", out, png), 0);
    FILE *f = fopen(png, "rb");
    assert_non_null(f);
    uint8_t head[24];
    assert_int_equal(fread(head, 1, 24, f), 24);
    fclose(f);
    assert_memory_equal(head, "\x89PNG\r\n\x1a\n", 8);
    /* IHDR: width ceil(200/4) = 50, height ceil(130/4) = 33, big-endian */
    assert_int_equal(head[16] << 24 | head[17] << 16 | head[18] << 8 | head[19], 50);
    assert_int_equal(head[20] << 24 | head[21] << 16 | head[22] << 8 | head[23], 33);
}

static void encodes_npy(void **state)
{
    (void)state;
    char in[512], out[512];
    snprintf(in, sizeof in, "%s/w.npy", dir);
    FILE *f = fopen(in, "wb");
    assert_non_null(f);
    const char header[] = "{'descr': '<f2', 'fortran_order': False, 'shape': (70, 80), }";
    char padded[128];
    memset(padded, ' ', sizeof padded);
    memcpy(padded, header, strlen(header));
    padded[128 - 10 - 1] = '\n';
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    const uint16_t hl = 128 - 10;
    fwrite(&hl, 2, 1, f);
    fwrite(padded, 1, 128 - 10, f);
    for (unsigned i = 0; i < 70 * 80; i++) {
        const uint16_t h = (uint16_t)(0x3C00u + (i % 512)); /* 1.0 .. 1.5 */
        fwrite(&h, 2, 1, f);
    }
    fclose(f);
    snprintf(out, sizeof out, "%s/h.sgfp4", dir);
    assert_int_equal(run("encode %s -o %s", in, out), 0);
    assert_int_equal(run("verify %s --shape 70x80", out), 0);
}

/* --tensor NAME of a safetensors file (the real weights; skipped without them). */
static void encodes_one_safetensors_tensor(void **state)
{
    (void)state;
    const char *shared = getenv("SGFP4_SHARED_DIR");
    char model[1024], out[512];
    snprintf(model, sizeof model, "%s/weights/stories260K/stories260K.safetensors",
             shared ? shared : "../shared");
    if (!exists(model))
        skip();
    snprintf(out, sizeof out, "%s/wq.sgfp4", dir);
    assert_int_equal(run("encode %s --tensor layers.0.attention.wq.weight -o %s --bpw 4",
                         model, out), 0);
    assert_int_equal(run("verify %s --shape 64x64", out), 0);
    assert_int_equal(run("encode %s --tensor no.such.tensor -o %s/x.sgfp4", model, dir), 1);
}

static void bad_input_leaves_no_file(void **state)
{
    (void)state;
    char in[512], out[512];
    snprintf(in, sizeof in, "%s/bad.f32", dir);
    write_raw(in, 64 * 64, NAN);
    snprintf(out, sizeof out, "%s/bad.sgfp4", dir);
    assert_int_not_equal(run("encode %s --shape 64x64 -o %s", in, out), 0);
    assert_false(exists(out));
    assert_int_equal(run("encode %s --shape 64x65 -o %s", in, out), 1); /* wrong size */
    assert_false(exists(out));
    assert_int_equal(run("encode %s -o %s", in, out), 2); /* raw needs a shape: usage */
    assert_int_equal(run("encode %s --shape 64x64 -o %s --bpw 3 --policy threshold", in, out),
                     2);
    assert_false(exists(out));
}

int main(void)
{
    cli = getenv("SGFP4_CLI");
    if (!cli)
        return 77;
    snprintf(dir, sizeof dir, "/tmp/sgfp4_encode_cli_%ld", (long)getpid());
    char command[512];
    snprintf(command, sizeof command, "mkdir -p %s", dir);
    if (system(command) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(encodes_raw_to_v1_and_v2),
        cmocka_unit_test(encodes_npy),
        cmocka_unit_test(quality_report_and_leaf_map),
        cmocka_unit_test(encodes_one_safetensors_tensor),
        cmocka_unit_test(bad_input_leaves_no_file),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    snprintf(command, sizeof command, "rm -rf %s", dir);
    if (system(command) != 0)
        return 1;
    return rc;
}
