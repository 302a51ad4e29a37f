/* Runs a fuzz target's LLVMFuzzerTestOneInput over files, without libFuzzer: every argument
 * is a file, or a folder whose regular files are all run (not recursively). Used by CTest
 * to replay the corpora and crashers under the sanitizers with any compiler. A finding
 * aborts (sanitizer report or FUZZ_ASSERT); otherwise prints how many files ran.
 * `--mutants N` (first argument) also runs N structured variants of each file, made by the
 * target's st_mutate() (the model target links it; for the others the option does nothing):
 * the selector byte stays, the safetensors file after it is mutated with seeds 1..N.
 * SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* st_mutate.h; weak: only the targets that link it have it */
size_t st_mutate(uint8_t *file, size_t size, size_t max_size, uint32_t seed)
    __attribute__((weak));

static unsigned mutants;
static unsigned long variants_run;

/* Runs data and its structured variants (an exact-size copy of each). */
static void run_input(const uint8_t *data, size_t size)
{
    uint8_t *exact = malloc(size ? size : 1);
    if (!exact)
        exit(1);
    if (size)
        memcpy(exact, data, size);
    LLVMFuzzerTestOneInput(exact, size);
    free(exact);
    if (!st_mutate || size < 2 || data[0] >= 0xF0)
        return;
    const size_t cap = 2 * size + 65536;
    uint8_t *work = malloc(cap);
    if (!work)
        exit(1);
    for (unsigned seed = 1; seed <= mutants; seed++) {
        memcpy(work, data, size);
        const size_t n = st_mutate(work + 1, size - 1, cap - 1, seed);
        if (n == 0)
            break; /* not a file it parses: no variant will be */
        uint8_t *variant = malloc(n + 1);
        if (!variant)
            exit(1);
        memcpy(variant, work, n + 1);
        LLVMFuzzerTestOneInput(variant, n + 1);
        free(variant);
        variants_run++;
    }
    free(work);
}

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
    /* Exact-size copies, so that ASan catches a read one past the end of the input. */
    run_input(buf, size);
    free(buf);
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
    int first = 1;
    if (argc > 2 && strcmp(argv[1], "--mutants") == 0) {
        mutants = (unsigned)strtoul(argv[2], NULL, 10);
        first = 3;
    }
    for (int i = first; i < argc; i++) {
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
    printf("regression driver: %ld inputs and %lu structured variants ran without a finding\n",
           total, variants_run);
    return 0;
}
