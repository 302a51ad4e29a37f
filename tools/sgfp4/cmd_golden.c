/* sgfp4 verify --golden DIR [--only NAME]: runs the vector set described by
 * DIR/manifest.json (docs/cli.md, "verify"): each vector must decode to its sha256 or be
 * rejected with its status; then the matrix-vector vectors of DIR/matvec/manifest.json.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include <jansson.h>

#include "cli.h"

/* DIR/NAME without a doubled '/' when DIR ends in one. */
static void join(char *path, size_t size, const char *dir, const char *name)
{
    const size_t n = strlen(dir);
    snprintf(path, size, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name);
}

/* Runs one vector; true when it passes, else why[] says what happened. */
static bool run_vector(const cli_args *a, json_t *v, char *why, size_t why_size)
{
    const char *file = json_string_value(json_object_get(v, "file"));
    const char *expect = json_string_value(json_object_get(v, "expect"));
    json_t *shape = json_object_get(v, "shape");
    sgfp4_profile profile;
    if (!file || !expect || !json_is_array(shape) || json_array_size(shape) != 2 ||
        !cli_parse_profile(json_string_value(json_object_get(v, "profile")), &profile))
        return snprintf(why, why_size, "malformed vector entry in manifest.json"), false;
    const uint64_t rows = (uint64_t)json_integer_value(json_array_get(shape, 0));
    const uint64_t cols = (uint64_t)json_integer_value(json_array_get(shape, 1));
    char path[4096], err[FILEIO_ERROR_SIZE];
    join(path, sizeof path, a->golden, file);
    fileio_input in;
    if (!fileio_read(path, &in, err))
        return snprintf(why, why_size, "%s", err), false;
    sgfp4_tensor *t = NULL;
    sgfp4_diag diag;
    const sgfp4_status s =
        sgfp4_tensor_open(in.data, in.size, profile, rows, cols, &t, NULL, &diag);
    bool pass = false;
    if (strcmp(expect, "reject") == 0) {
        const char *want = json_string_value(json_object_get(v, "status"));
        if (s == SGFP4_OK)
            snprintf(why, why_size, "accepted, but must be rejected with %s",
                     want ? want : "an error");
        else if (want && strcmp(want, sgfp4_status_name(s)) != 0)
            snprintf(why, why_size, "rejected with %s, expected %s (%s)", sgfp4_status_name(s),
                     want, diag.message);
        else
            pass = true;
    } else if (s != SGFP4_OK) {
        snprintf(why, why_size, "rejected: %s [%s]", diag.message, sgfp4_status_name(s));
    } else {
        const char *want = json_string_value(json_object_get(v, "sha256"));
        const sgfp4_decode_options d = cli_decode_options(a);
        char hex[65];
        if (sgfp4_tensor_decoded_sha256(t, hex, &d) != SGFP4_OK)
            snprintf(why, why_size, "decode failed");
        else if (!want || strcmp(hex, want) != 0)
            snprintf(why, why_size, "decoded sha256 %s, expected %s", hex, want ? want : "(none)");
        else
            pass = true;
    }
    sgfp4_tensor_close(t);
    fileio_input_release(&in);
    return pass;
}

/* --json: one object on stdout, {"golden": DIR, "ok", "passed", "failed", "vectors": [{"name",
 * "ok", "error" when it failed}]}, or {"golden", "ok": false, "error"} when the set cannot
 * be run. */
static int print_json(const cli_args *a, json_t *results, size_t passed, size_t failed, int rc)
{
    json_t *root = rc == CLI_EXIT_OK || results
                       ? json_pack("{s:s,s:b,s:I,s:I,s:O}", "golden", a->golden, "ok",
                                   rc == CLI_EXIT_OK, "passed", (json_int_t)passed, "failed",
                                   (json_int_t)failed, "vectors", results)
                       : json_pack("{s:s,s:b,s:s}", "golden", a->golden, "ok", 0, "error",
                                   cli_last_error);
    cli_print_json(root);
    return rc;
}

/* Runs the vectors of the manifest (those named --only NAME); *results gets one entry each
 * for --json. */
static int run_set(const cli_args *a, json_t *results, size_t *passed, size_t *failed)
{
    char path[4096];
    join(path, sizeof path, a->golden, "manifest.json");
    fileio_input in;
    char err[FILEIO_ERROR_SIZE];
    if (!fileio_read(path, &in, err))
        return cli_error(a->command, "%s", err);
    json_error_t jerr;
    json_t *root = json_loadb((const char *)in.data, in.size, JSON_REJECT_DUPLICATES, &jerr);
    fileio_input_release(&in);
    if (!root)
        return cli_error(a->command, "%s: line %d, column %d: %s", path, jerr.line, jerr.column,
                         jerr.text);
    json_t *vectors = json_object_get(root, "vectors");
    if (!json_is_array(vectors)) {
        json_decref(root);
        return cli_error(a->command, "%s: no \"vectors\" array", path);
    }
    const bool json = results != NULL;
    size_t index;
    json_t *v;
    json_array_foreach(vectors, index, v) {
        const char *name = json_string_value(json_object_get(v, "name"));
        if (a->only && (!name || strcmp(name, a->only) != 0))
            continue;
        char why[1024] = "";
        const bool pass = run_vector(a, v, why, sizeof why);
        *(pass ? passed : failed) += 1;
        if (json)
            json_array_append_new(results, pass ? json_pack("{s:s,s:b}", "name", name ? name : "?",
                                                            "ok", 1)
                                                : json_pack("{s:s,s:b,s:s}", "name",
                                                            name ? name : "?", "ok", 0, "error",
                                                            why));
        else if (!pass)
            printf("FAIL %s: %s\n", name ? name : "?", why);
        else if (cli_verbosity > 0)
            printf("PASS %s\n", name ? name : "?");
    }
    json_decref(root);
    /* the matrix-vector vectors of DIR/matvec (cmd_golden_matvec.c) */
    int rc;
    if (!a->vulkan && (rc = cli_golden_matvec(a, passed, failed, results)) != CLI_EXIT_OK)
        return rc;
    if (a->only && *passed + *failed == 0)
        return cli_error(a->command, "%s: no vector named '%s'", path, a->only);
    if (*passed + *failed == 0)
        return cli_error(a->command, "%s: the \"vectors\" array is empty", path);
    if (!json)
        printf("golden: %zu passed, %zu failed\n", *passed, *failed);
    return *failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

int cmd_verify_golden(const cli_args *a)
{
    static const int tensor_only[] = {KEY_SHAPE, KEY_PROFILE, KEY_STRICT, KEY_AGAINST, 0};
    int rc = cli_reject(a, "--golden", tensor_only);
    if (rc >= 0)
        return rc;
    size_t passed = 0, failed = 0;
    if (!a->given[KEY_JSON])
        return run_set(a, NULL, &passed, &failed);
    json_t *results = json_array();
    if (!results)
        return cli_error(a->command, "out of memory");
    rc = run_set(a, results, &passed, &failed);
    /* a set that could not be run has no results: print the error object instead */
    const bool ran = passed + failed > 0;
    rc = print_json(a, ran ? results : NULL, passed, failed, rc);
    json_decref(results);
    return rc;
}
