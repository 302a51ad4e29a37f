/* Runs a fuzz target's LLVMFuzzerTestOneInput over files, without libFuzzer: every argument
 * is a file, or a folder whose regular files are all run (not recursively). Used by CTest
 * to replay the corpora and crashers under the sanitizers with any compiler. A finding
 * aborts (sanitizer report or FUZZ_ASSERT); otherwise prints how many files ran.
 * SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "regression driver: cannot open %s\n", path);
        return 0;
    }
    uint8_t *buf = NULL;
    size_t size = 0, cap = 0;
    for (;;) {
        if (size == cap) {
            cap = cap ? cap * 2 : 4096;
            uint8_t *bigger = realloc(buf, cap);
            if (!bigger) {
                fprintf(stderr, "regression driver: out of memory reading %s\n", path);
                exit(1);
            }
            buf = bigger;
        }
        const size_t got = fread(buf + size, 1, cap - size, f);
        if (got == 0)
            break;
        size += got;
    }
    fclose(f);
    /* An exact-size copy, so that ASan catches a read one past the end of the input. */
    uint8_t *exact = malloc(size ? size : 1);
    if (!exact)
        exit(1);
    if (size)
        memcpy(exact, buf, size);
    free(buf);
    LLVMFuzzerTestOneInput(exact, size);
    free(exact);
    return 1;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs the regular files of a folder in name order; returns how many ran, -1 on error. */
static long run_folder(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **bigger = realloc(names, cap * sizeof *names);
            if (!bigger)
                exit(1);
            names = bigger;
        }
        const size_t len = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = malloc(len);
        if (!names[n])
            exit(1);
        snprintf(names[n], len, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, compare_names);
    long ran = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
            ran += run_file(names[i]);
        free(names[i]);
    }
    free(names);
    return ran;
}

int main(int argc, char **argv)
{
    long total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "regression driver: %s does not exist\n", argv[i]);
            return 1;
        }
        const long ran = S_ISDIR(st.st_mode) ? run_folder(argv[i]) : run_file(argv[i]);
        if (ran < 0) {
            fprintf(stderr, "regression driver: cannot read folder %s\n", argv[i]);
            return 1;
        }
        total += ran;
    }
    printf("regression driver: %ld inputs ran without a finding\n", total);
    return 0;
}
