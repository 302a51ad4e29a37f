/* The temporary files of crash-safe outputs: their names, the removal of leftovers of dead
 * writers, and their removal on a fatal signal.
 *
 * A temporary file is `.NAME.sgfp4-tmp-XXXXXX` in the target's folder, NAME the target's
 * name cut (at a UTF-8 character boundary) so the whole fits the folder's NAME_MAX. Its
 * writer holds an exclusive flock() on it for as long as it lives; the lock dies with the
 * process, however it ends (SIGKILL, a crash, a power cut). A leftover is therefore a file
 * of that pattern that nobody holds locked: opening an output removes those of the same
 * target that are regular files of this user with one link.
 *
 * Removal on signals: every temporary file of the process is in one list, a fixed array of
 * atomic pointers (no lock, so a signal handler may read it), each with the process that
 * listed it (a handler removes only its own process's files). The list is the only state
 * the outputs share; the handlers that use it are installed only on request
 * (sgfp4_output_remove_on_signals). A handler that starts reading the list marks it first,
 * and a writer that takes its file off the list frees the path only while no handler has
 * begun (both sequentially consistent: either the handler sees the entry empty, or the
 * writer sees the mark and leaves the path alone; the process is dying then anyway).
 * SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/diag.h"
#include "model/output_internal.h"

#define TEMP_MARK ".sgfp4-tmp-"
#define TEMP_RANDOM 6 /* random letters and digits */

/* ---- names ---- */

/* The prefix `.NAME.sgfp4-tmp-` of the target `base` in a folder whose names are at most
 * name_max bytes. */
static char *temp_prefix(const char *base, long name_max)
{
    const size_t fixed = 1 + strlen(TEMP_MARK) + TEMP_RANDOM;
    size_t keep = strlen(base);
    if (name_max <= (long)fixed + 1)
        name_max = 255;
    if (keep > (size_t)name_max - fixed)
        keep = (size_t)name_max - fixed;
    while (keep > 0 && ((unsigned char)base[keep] & 0xC0) == 0x80)
        keep--; /* do not cut a UTF-8 character in two */
    char *prefix = malloc(1 + keep + strlen(TEMP_MARK) + 1);
    if (prefix)
        sprintf(prefix, ".%.*s%s", (int)keep, base, TEMP_MARK);
    return prefix;
}

/* ---- leftovers ---- */

/* Removes `name` in the folder dirfd if it is a leftover (see the top of the file). */
static bool remove_if_stale(int dirfd, const char *name)
{
    const int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st, again;
    bool removed = false;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
        st.st_nlink == 1 && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
        fstatat(dirfd, name, &again, AT_SYMLINK_NOFOLLOW) == 0 && again.st_dev == st.st_dev &&
        again.st_ino == st.st_ino)
        removed = unlinkat(dirfd, name, 0) == 0;
    close(fd); /* drops the lock */
    return removed;
}

static size_t remove_leftovers(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    const size_t n = strlen(prefix);
    size_t removed = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, prefix, n) == 0 && strlen(e->d_name) == n + TEMP_RANDOM)
            removed += remove_if_stale(dirfd(d), e->d_name);
    closedir(d);
    return removed;
}

/* ---- the list, and its removal on fatal signals ---- */

#define SLOTS 4096
static _Atomic(char *) slots[SLOTS];
/* The process that listed each file: a child made by fork() (Python's multiprocessing, for
 * one) inherits the handlers and the list, and must not remove its parent's files. */
static atomic_long owners[SLOTS];
static atomic_int handling; /* a handler has begun reading the list */
static const int fatal_signals[] = {SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM, SIGXCPU, SIGXFSZ};
#define FATAL_COUNT (sizeof fatal_signals / sizeof fatal_signals[0])

void sgfp4_output_remove_temporaries(void)
{
    atomic_store(&handling, 1);
    const long self = (long)getpid();
    for (size_t k = 0; k < SLOTS; k++) {
        char *path = atomic_load(&slots[k]);
        if (path && atomic_load(&owners[k]) == self)
            unlink(path);
    }
}

static void on_fatal_signal(int sig)
{
    sgfp4_output_remove_temporaries();
    /* SA_RESETHAND restored the default action; SA_NODEFER lets it act at once */
    raise(sig);
}

static sgfp4_status install_status = SGFP4_OK;

static void install_handlers(void)
{
    for (size_t k = 0; k < FATAL_COUNT; k++) {
        struct sigaction old;
        if (sigaction(fatal_signals[k], NULL, &old) != 0) {
            install_status = SGFP4_ERR_IO;
            continue;
        }
        if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
            continue; /* ignored (nohup) or the program's own: left alone */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = (int)(SA_RESETHAND | SA_NODEFER); /* glibc defines them unsigned */
        if (sigaction(fatal_signals[k], &sa, NULL) != 0)
            install_status = SGFP4_ERR_IO;
    }
}

sgfp4_status sgfp4_output_remove_on_signals(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install_handlers);
    return install_status;
}

static int list_path(char *path)
{
    for (int k = 0; k < SLOTS; k++) {
        char *expected = NULL;
        if (atomic_compare_exchange_strong(&slots[k], &expected, path)) {
            atomic_store(&owners[k], (long)getpid());
            return k;
        }
    }
    return -1;
}

void sgfp4_temp_hold_signals(sigset_t *previous)
{
    sigset_t held;
    sigemptyset(&held);
    for (size_t k = 0; k < FATAL_COUNT; k++)
        sigaddset(&held, fatal_signals[k]);
    pthread_sigmask(SIG_BLOCK, &held, previous);
}

void sgfp4_temp_release_signals(const sigset_t *previous)
{
    pthread_sigmask(SIG_SETMASK, previous, NULL);
}

void sgfp4_temp_forget(int slot, char *path)
{
    sigset_t previous;
    sgfp4_temp_hold_signals(&previous);
    if (slot >= 0 && slot < SLOTS)
        atomic_store(&slots[slot], NULL);
    if (!atomic_load(&handling))
        free(path);
    sgfp4_temp_release_signals(&previous);
}

/* ---- creation ---- */

/* Six random characters of [A-Za-z0-9] and a NUL into out (from the kernel's generator;
 * should it fail, from the clock, the process and a counter: the name need only be new,
 * which O_EXCL checks). */
static void random_tail(char out[TEMP_RANDOM + 1])
{
    static const char digits[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    static atomic_uint counter;
    unsigned char bytes[TEMP_RANDOM];
    if (getrandom(bytes, sizeof bytes, GRND_NONBLOCK) != (ssize_t)sizeof bytes) {
        unsigned long long x = (unsigned long long)sgfp4_now_ns() ^
                               ((unsigned long long)getpid() << 20) ^
                               ((unsigned long long)atomic_fetch_add(&counter, 1) << 40);
        for (int k = 0; k < TEMP_RANDOM; k++, x = x * 6364136223846793005ull + 1442695040888963407ull)
            bytes[k] = (unsigned char)(x >> 56);
    }
    for (int k = 0; k < TEMP_RANDOM; k++)
        out[k] = digits[bytes[k] % (sizeof digits - 1)];
    out[TEMP_RANDOM] = '\0';
}

int sgfp4_temp_create(const char *dir, const char *base, char **tmp_path, int *slot,
                      size_t *stale, const char *shown, sgfp4_diag *diag)
{
    char dir_shown[SGFP4_SHOWN_SIZE];
    sgfp4_path_shown(dir, dir_shown);
    const long name_max = pathconf(dir, _PC_NAME_MAX);
    char *prefix = temp_prefix(base, name_max > 0 ? name_max : 255);
    const size_t dir_len = strlen(dir);
    char *path = prefix ? malloc(dir_len + 1 + strlen(prefix) + TEMP_RANDOM + 1) : NULL;
    if (!path) {
        free(prefix);
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "%s: out of memory", shown), -1;
    }
    *stale = remove_leftovers(dir, prefix);
    sgfp4_status failed = SGFP4_ERR_IO;
    sgfp4_fail(diag, failed, -1, -1, -1, "%s: cannot create a temporary file in '%s'", shown,
               dir_shown);
    for (int attempt = 0; attempt < 100; attempt++) {
        char tail[TEMP_RANDOM + 1];
        random_tail(tail);
        sprintf(path, "%s%s%s%s", dir, dir_len && dir[dir_len - 1] != '/' ? "/" : "", prefix,
                tail);
        /* Created and listed with the fatal signals held, so that no signal falls between
         * the file's creation and its listing. Mode 0666 less the umask: a new output's. */
        sigset_t previous;
        sgfp4_temp_hold_signals(&previous);
        const int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        const int saved = errno;
        const int s = fd >= 0 ? list_path(path) : -1;
        sgfp4_temp_release_signals(&previous);
        if (fd < 0 && saved == EEXIST)
            continue;
        if (fd < 0) {
            if (saved == ENOENT || saved == ENOTDIR)
                failed = sgfp4_fail(diag, SGFP4_ERR_OUTPUT_REFUSED, -1, -1, -1,
                                    "%s: no such folder '%s'", shown, dir_shown);
            else
                sgfp4_fail(diag, failed, -1, -1, -1,
                           "%s: cannot create a temporary file in '%s': %s", shown, dir_shown,
                           strerror(saved));
            break;
        }
        if (s < 0) {
            unlink(path);
            close(fd);
            sgfp4_fail(diag, failed, -1, -1, -1, "%s: too many outputs open at once", shown);
            break;
        }
        struct stat st;
        if (flock(fd, LOCK_EX) == 0 && fstat(fd, &st) == 0 && st.st_nlink > 0) {
            free(prefix);
            *tmp_path = path;
            *slot = s;
            sgfp4_diag_clear(diag);
            return fd;
        }
        /* another writer took it for a leftover in the instant before our lock: again */
        atomic_store(&slots[s], NULL);
        close(fd);
    }
    free(prefix);
    free(path);
    return -1;
}
