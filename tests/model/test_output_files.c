/* The library's output rules (sgfp4_model.h, "output files"), called directly: refusals
 * with SGFP4_ERR_OUTPUT_REFUSED and a message naming the path and the caller's force,
 * before anything is created; inputs by device and inode (a link, a hard link, a model's
 * files); commit and close (an uncommitted output leaves the earlier file as it was and no
 * temporary file); a replaced file's mode; leftovers of dead writers removed; outputs on
 * several threads at once; model outputs: a WRITE set of one shard and its index, cancel,
 * a refused set that creates nothing, and the options convention.
 * SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sgfp4_model.h"

/* docs/api.md's "Output files" example, save(): extracted at configure time (docs.cmake) */
#include "docs_api_output_files.h"

static char work_dir[256];

static const char *at(const char *name)
{
    static char paths[8][512];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 512, "%s/%s", work_dir, name);
    return p;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static char *read_text(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    const size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Files of the work folder whose name holds `part`. */
static int count_named(const char *part)
{
    DIR *d = opendir(work_dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strstr(e->d_name, part) != NULL;
    closedir(d);
    return n;
}

static sgfp4_output_options options(unsigned flags, const sgfp4_inputs *inputs)
{
    sgfp4_output_options o;
    assert_int_equal(sgfp4_output_options_init(&o), SGFP4_OK);
    o.flags = flags;
    o.inputs = inputs;
    o.force_name = "--force";
    return o;
}

/* Opening `path` is refused with a message holding `want`; nothing is created. */
static void refused(const char *path, const sgfp4_output_options *o, const char *want)
{
    sgfp4_output *out = (sgfp4_output *)1;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_output_open(path, o, &out, &diag), SGFP4_ERR_OUTPUT_REFUSED);
    assert_null(out);
    if (!strstr(diag.message, want))
        fail_msg("'%s': '%s' has no '%s'", path, diag.message, want);
    assert_int_equal(count_named(".sgfp4-tmp-"), 0);
}

static void write_output(const char *path, const sgfp4_output_options *o, const char *text)
{
    sgfp4_output *out = NULL;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_output_open(path, o, &out, &diag), SGFP4_OK);
    assert_int_equal(sgfp4_output_write(out, text, strlen(text)), SGFP4_OK);
    assert_int_equal(sgfp4_output_commit(out, &diag), SGFP4_OK);
    assert_null(sgfp4_output_temp_path(out));
    sgfp4_output_close(out);
}

static void test_refusals(void **state)
{
    (void)state;
    char buf[64];
    sgfp4_inputs *inputs = NULL;
    assert_int_equal(sgfp4_inputs_create(&inputs), SGFP4_OK);
    write_text(at("in.txt"), "input");
    assert_int_equal(sgfp4_inputs_add_path(inputs, at("in.txt")), SGFP4_OK);
    assert_int_equal(sgfp4_inputs_add_path(inputs, at("absent.txt")), SGFP4_OK); /* nothing */
    assert_int_equal(symlink("in.txt", at("link.txt")), 0);
    assert_int_equal(link(at("in.txt"), at("hard.txt")), 0);
    const sgfp4_output_options plain = options(0, inputs);
    const sgfp4_output_options force = options(SGFP4_OUTPUT_FORCE, inputs);
    for (int k = 0; k < 2; k++) {
        const sgfp4_output_options *o = k ? &force : &plain;
        refused(at("in.txt"), o, "is the same file as the input");
        refused(at("link.txt"), o, "is the same file as the input");
        refused(at("hard.txt"), o, "is the same file as the input");
    }
    write_text(at("old.txt"), "old");
    refused(at("old.txt"), &plain, "already exists: not replaced (--force replaces it)");
    assert_string_equal(read_text(at("old.txt"), buf, sizeof buf), "old");
    refused(work_dir, &force, "is a directory");
    char slash[600];
    snprintf(slash, sizeof slash, "%s/", work_dir);
    refused(slash, &force, "is a directory");
    refused(at("missing/x.txt"), &force, "no such folder");
    assert_int_equal(symlink("nowhere/x.txt", at("dangling.txt")), 0);
    refused(at("dangling.txt"), &force, "symbolic link to a missing file");
    /* without a force name, the refusal names none */
    sgfp4_output_options unnamed = plain;
    unnamed.force_name = NULL;
    sgfp4_output *out = NULL;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_output_open(at("old.txt"), &unnamed, &out, &diag),
                     SGFP4_ERR_OUTPUT_REFUSED);
    assert_null(strstr(diag.message, "("));
    /* the options convention */
    sgfp4_output_options bad = plain;
    bad.struct_size = 3;
    assert_int_equal(sgfp4_output_open(at("new.txt"), &bad, &out, &diag), SGFP4_ERR_ARGUMENT);
    bad = plain;
    bad.flags = 0x80;
    assert_int_equal(sgfp4_output_open(at("new.txt"), &bad, &out, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_output_open(NULL, &plain, &out, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_output_options_init(NULL), SGFP4_ERR_ARGUMENT);
    assert_int_equal(access(at("new.txt"), F_OK), -1);
    sgfp4_inputs_free(inputs);
    sgfp4_inputs_free(NULL);
    sgfp4_output_close(NULL);
}

static void test_commit_and_close(void **state)
{
    (void)state;
    char buf[64];
    const sgfp4_output_options plain = options(0, NULL), force = options(SGFP4_OUTPUT_FORCE, NULL);
    write_output(at("a.txt"), &plain, "one");
    assert_string_equal(read_text(at("a.txt"), buf, sizeof buf), "one");
    assert_int_equal(chmod(at("a.txt"), 0640), 0);
    /* closed without its commit: the earlier file stays, no temporary file */
    sgfp4_output *out = NULL;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_output_open(at("a.txt"), &force, &out, &diag), SGFP4_OK);
    assert_int_equal(sgfp4_output_write(out, "two", 3), SGFP4_OK);
    assert_int_equal(sgfp4_output_finish(out, &diag), SGFP4_OK);
    assert_non_null(strstr(sgfp4_output_temp_path(out), ".a.txt.sgfp4-tmp-"));
    assert_int_equal(count_named(".sgfp4-tmp-"), 1);
    sgfp4_output_close(out);
    assert_int_equal(count_named(".sgfp4-tmp-"), 0);
    assert_string_equal(read_text(at("a.txt"), buf, sizeof buf), "one");
    /* replaced: the new bytes, the old mode */
    write_output(at("a.txt"), &force, "three");
    assert_string_equal(read_text(at("a.txt"), buf, sizeof buf), "three");
    struct stat st;
    assert_int_equal(stat(at("a.txt"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    /* a file that appears between the open and the commit is not clobbered */
    assert_int_equal(sgfp4_output_open(at("b.txt"), &plain, &out, &diag), SGFP4_OK);
    write_text(at("b.txt"), "theirs");
    assert_int_equal(sgfp4_output_commit(out, &diag), SGFP4_ERR_OUTPUT_REFUSED);
    assert_non_null(strstr(diag.message, "created by someone else meanwhile"));
    sgfp4_output_close(out);
    assert_string_equal(read_text(at("b.txt"), buf, sizeof buf), "theirs");
    /* several committed in order */
    sgfp4_output *outs[3];
    const char *names[3] = {"s1.txt", "s2.txt", "index.txt"};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(sgfp4_output_open(at(names[k]), &plain, &outs[k], &diag), SGFP4_OK);
        assert_int_equal(sgfp4_output_write(outs[k], names[k], strlen(names[k])), SGFP4_OK);
    }
    assert_int_equal(sgfp4_output_commit_all(outs, 3, &diag), SGFP4_OK);
    for (int k = 0; k < 3; k++) {
        assert_string_equal(read_text(at(names[k]), buf, sizeof buf), names[k]);
        sgfp4_output_close(outs[k]);
    }
    assert_int_equal(sgfp4_output_commit(NULL, &diag), SGFP4_ERR_ARGUMENT);
    assert_int_equal(count_named(".sgfp4-tmp-"), 0);
}

/* The documentation's example does what it says. */
static void test_documented_save(void **state)
{
    (void)state;
    char buf[64];
    sgfp4_diag diag;
    write_text(at("doc-in.txt"), "in");
    assert_int_equal(save(at("doc-out.txt"), at("doc-in.txt"), "out", 3, 0, &diag), SGFP4_OK);
    assert_string_equal(read_text(at("doc-out.txt"), buf, sizeof buf), "out");
    assert_int_equal(save(at("doc-out.txt"), at("doc-in.txt"), "new", 3, 0, &diag),
                     SGFP4_ERR_OUTPUT_REFUSED);
    assert_non_null(strstr(diag.message, "(--force replaces it)"));
    assert_int_equal(save(at("doc-in.txt"), at("doc-in.txt"), "new", 3, 1, &diag),
                     SGFP4_ERR_OUTPUT_REFUSED);
    assert_int_equal(save(at("doc-out.txt"), at("doc-in.txt"), "new", 3, 1, &diag), SGFP4_OK);
    assert_string_equal(read_text(at("doc-out.txt"), buf, sizeof buf), "new");
    assert_string_equal(read_text(at("doc-in.txt"), buf, sizeof buf), "in");
}

static void test_leftovers(void **state)
{
    (void)state;
    /* a dead writer's leftover (nobody holds its lock) is removed; a link is not */
    write_text(at(".c.txt.sgfp4-tmp-Dead01"), "partial");
    assert_int_equal(symlink("c.txt", at(".c.txt.sgfp4-tmp-Link01")), 0);
    sgfp4_output *out = NULL;
    sgfp4_diag diag;
    const sgfp4_output_options plain = options(0, NULL);
    assert_int_equal(sgfp4_output_open(at("c.txt"), &plain, &out, &diag), SGFP4_OK);
    assert_int_equal(sgfp4_output_leftovers_removed(out), 1);
    assert_int_equal(access(at(".c.txt.sgfp4-tmp-Dead01"), F_OK), -1);
    sgfp4_output_close(out);
    assert_int_equal(unlink(at(".c.txt.sgfp4-tmp-Link01")), 0);
    assert_true(sgfp4_output_path_is_direct("-"));
    assert_true(sgfp4_output_path_is_direct("/dev/null"));
    assert_false(sgfp4_output_path_is_direct(at("c.txt")));
    assert_int_equal(sgfp4_output_remove_on_signals(), SGFP4_OK);
    assert_int_equal(sgfp4_output_remove_on_signals(), SGFP4_OK);
}

/* A fatal signal removes the temporary files of its own process, and only those: a child
 * made by fork() that dies of one leaves its parent's output alone. */
static void test_signals(void **state)
{
    (void)state;
    assert_int_equal(sgfp4_output_remove_on_signals(), SGFP4_OK);
    const sgfp4_output_options plain = options(0, NULL);
    sgfp4_output *out = NULL;
    sgfp4_diag diag;
    assert_int_equal(sgfp4_output_open(at("parent.txt"), &plain, &out, &diag), SGFP4_OK);
    assert_int_equal(sgfp4_output_write(out, "parent", 6), SGFP4_OK);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        signal(SIGTERM, SIG_DFL); /* as a fresh process: the handler above is inherited */
        sgfp4_output *own = NULL;
        if (sgfp4_output_open(at("child.txt"), &plain, &own, &diag) != SGFP4_OK)
            _exit(3);
        raise(SIGTERM);
        _exit(4);
    }
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    assert_int_equal(count_named(".child.txt.sgfp4-tmp-"), 1); /* SIG_DFL: nothing removed */
    child = fork();
    assert_true(child >= 0);
    if (child == 0) { /* the inherited handler: the child's file goes, the parent's stays */
        sgfp4_output *own = NULL;
        if (sgfp4_output_open(at("child2.txt"), &plain, &own, &diag) != SGFP4_OK)
            _exit(3);
        raise(SIGTERM);
        _exit(4);
    }
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    assert_int_equal(count_named(".child2.txt.sgfp4-tmp-"), 0);
    assert_int_equal(count_named(".parent.txt.sgfp4-tmp-"), 1);
    assert_int_equal(sgfp4_output_commit(out, &diag), SGFP4_OK);
    sgfp4_output_close(out);
    char buf[16];
    assert_string_equal(read_text(at("parent.txt"), buf, sizeof buf), "parent");
    /* the first child's leftover: removed by the next open of its output */
    assert_int_equal(sgfp4_output_open(at("child.txt"), &plain, &out, &diag), SGFP4_OK);
    assert_int_equal(sgfp4_output_leftovers_removed(out), 1);
    sgfp4_output_close(out);
    assert_int_equal(count_named(".sgfp4-tmp-"), 0);
}

/* ---- several threads ---- */

static void *thread_writes(void *arg)
{
    const int id = (int)(intptr_t)arg;
    const sgfp4_output_options plain = options(0, NULL);
    for (int k = 0; k < 20; k++) {
        char name[64], text[64];
        snprintf(name, sizeof name, "t%d-%d.txt", id, k);
        snprintf(text, sizeof text, "%d %d", id, k);
        sgfp4_output *out = NULL;
        sgfp4_diag diag;
        if (sgfp4_output_open(at(name), &plain, &out, &diag) != SGFP4_OK ||
            sgfp4_output_write(out, text, strlen(text)) != SGFP4_OK ||
            sgfp4_output_commit(out, &diag) != SGFP4_OK)
            return (void *)1;
        sgfp4_output_close(out);
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    pthread_t threads[4];
    for (int t = 0; t < 4; t++)
        assert_int_equal(pthread_create(&threads[t], NULL, thread_writes, (void *)(intptr_t)t), 0);
    for (int t = 0; t < 4; t++) {
        void *result;
        assert_int_equal(pthread_join(threads[t], &result), 0);
        assert_null(result);
    }
    char buf[64];
    assert_string_equal(read_text(at("t3-19.txt"), buf, sizeof buf), "3 19");
    assert_int_equal(count_named(".sgfp4-tmp-"), 0);
}

/* ---- model outputs ---- */

static sgfp4_status write_small_model(sgfp4_sink sink)
{
    static const float values[4] = {1, 2, 3, 4};
    const uint64_t shape[1] = {4};
    const sgfp4_st_entry e = {"w", SGFP4_ST_F32, 1, shape};
    sgfp4_st_writer *w = NULL;
    sgfp4_status s = sgfp4_st_writer_begin(&e, 1, NULL, NULL, 0, &sink, &w, NULL);
    if (s == SGFP4_OK)
        s = sgfp4_st_writer_write(w, values, sizeof values);
    if (s == SGFP4_OK)
        s = sgfp4_st_writer_finish(w, NULL);
    sgfp4_st_writer_free(w);
    return s;
}

static void test_model_outputs(void **state)
{
    (void)state;
    const sgfp4_output_options plain = options(0, NULL);
    sgfp4_model_output *mo = NULL;
    sgfp4_diag diag;
    /* WRITE with an index name: one shard named after it, and the index */
    assert_int_equal(sgfp4_model_output_open(at("m.safetensors.index.json"), NULL,
                                             SGFP4_MODEL_OUTPUT_WRITE, &plain, &mo, &diag),
                     SGFP4_OK);
    assert_int_equal(sgfp4_model_output_files(mo), 2);
    assert_int_equal(write_small_model(sgfp4_model_output_sink(mo)), SGFP4_OK);
    assert_int_equal(sgfp4_model_output_commit(mo, &diag), SGFP4_OK);
    sgfp4_model_output_close(mo);
    sgfp4_model *set = NULL;
    assert_int_equal(sgfp4_model_open(at("m.safetensors.index.json"), &set, NULL, &diag),
                     SGFP4_OK);
    assert_true(sgfp4_model_is_set(set));
    assert_string_equal(sgfp4_model_shard_name(set, 0), "m.safetensors");
    /* the set's files are inputs of a job on it: an output onto a shard is refused */
    sgfp4_model_output *again = NULL;
    const sgfp4_output_options force = options(SGFP4_OUTPUT_FORCE, NULL);
    assert_int_equal(sgfp4_model_output_open(at("m.safetensors"), set,
                                             SGFP4_MODEL_OUTPUT_ENCODE, &force, &again, &diag),
                     SGFP4_ERR_OUTPUT_REFUSED);
    sgfp4_inputs *inputs = NULL;
    assert_int_equal(sgfp4_inputs_create(&inputs), SGFP4_OK);
    assert_int_equal(sgfp4_inputs_add_model(inputs, set), SGFP4_OK);
    sgfp4_output_options with_inputs = options(SGFP4_OUTPUT_FORCE, inputs);
    sgfp4_output *out = NULL;
    assert_int_equal(sgfp4_output_open(at("m.safetensors.index.json"), &with_inputs, &out,
                                       &diag),
                     SGFP4_ERR_OUTPUT_REFUSED);
    sgfp4_inputs_free(inputs);
    /* a set whose second file is refused creates nothing */
    write_text(at("q.sgfp4.safetensors.index.json"), "{}");
    assert_int_equal(sgfp4_model_output_open(at("q.sgfp4.safetensors.index.json"), set,
                                             SGFP4_MODEL_OUTPUT_ENCODE, &plain, &again, &diag),
                     SGFP4_ERR_OUTPUT_REFUSED);
    assert_null(again);
    assert_int_equal(access(at("m.sgfp4.safetensors"), F_OK), -1);
    assert_int_equal(count_named(".sgfp4-tmp-"), 0);
    sgfp4_model_close(set);
    /* cancelled: writes fail, the commit fails, nothing appears */
    assert_int_equal(sgfp4_model_output_open(at("c.safetensors"), NULL, SGFP4_MODEL_OUTPUT_WRITE,
                                             &plain, &mo, &diag),
                     SGFP4_OK);
    sgfp4_model_output_cancel(mo);
    assert_int_equal(write_small_model(sgfp4_model_output_sink(mo)), SGFP4_ERR_IO);
    assert_int_equal(sgfp4_model_output_commit(mo, &diag), SGFP4_ERR_IO);
    assert_non_null(strstr(diag.message, "cancelled"));
    sgfp4_model_output_close(mo);
    assert_int_equal(access(at("c.safetensors"), F_OK), -1);
    /* bytes that are no safetensors file are not committed */
    assert_int_equal(sgfp4_model_output_open(at("x.safetensors"), NULL, SGFP4_MODEL_OUTPUT_WRITE,
                                             &plain, &mo, &diag),
                     SGFP4_OK);
    const sgfp4_sink sink = sgfp4_model_output_sink(mo);
    assert_int_equal(sink.write(sink.user, "junk", 4), SGFP4_OK);
    assert_int_not_equal(sgfp4_model_output_commit(mo, &diag), SGFP4_OK);
    sgfp4_model_output_close(mo);
    assert_int_equal(access(at("x.safetensors"), F_OK), -1);
    /* arguments */
    assert_int_equal(sgfp4_model_output_open(at("y.safetensors"), NULL,
                                             SGFP4_MODEL_OUTPUT_ENCODE, &plain, &mo, &diag),
                     SGFP4_ERR_ARGUMENT);
    assert_int_equal(sgfp4_model_output_commit(NULL, &diag), SGFP4_ERR_ARGUMENT);
    sgfp4_model_output_close(NULL);
    assert_int_equal(count_named(".sgfp4-tmp-"), 0);
}

static int setup(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(work_dir, sizeof work_dir, "%s/sgfp4-output-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return mkdtemp(work_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", work_dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals),       cmocka_unit_test(test_commit_and_close),
        cmocka_unit_test(test_leftovers),      cmocka_unit_test(test_threads),
        cmocka_unit_test(test_model_outputs),  cmocka_unit_test(test_documented_save),
        cmocka_unit_test(test_signals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
