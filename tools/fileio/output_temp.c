/* The temporary files of crash-safe outputs: their names, the removal of leftovers of
 * interrupted runs, and their removal on a fatal signal.
 *
 * A temporary file is `.NAME.sgfp4-tmp-XXXXXX` in the target's folder, NAME the target's
 * name cut (at a UTF-8 character boundary) so the whole fits the folder's NAME_MAX. Its
 * writer holds an exclusive flock() on it for as long as it lives; the lock dies with the
 * process, however it ends (SIGKILL, a crash, a power cut). A leftover is therefore a file
 * of that pattern that nobody holds locked: opening an output removes those of the same
 * target that are regular files of this user with one link.
 * SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* mkostemp */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "output_temp.h"

#define TEMP_MARK ".sgfp4-tmp-"
#define TEMP_RANDOM 6 /* the XXXXXX of mkstemp */

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

static int remove_leftovers(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    const size_t n = strlen(prefix);
    int removed = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, prefix, n) == 0 && strlen(e->d_name) == n + TEMP_RANDOM)
            removed += remove_if_stale(dirfd(d), e->d_name);
    closedir(d);
    return removed;
}

/* ---- removal on fatal signals ---- */

#define SLOTS 4096
static _Atomic(char *) slots[SLOTS];
static const int fatal_signals[] = {SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM, SIGXCPU, SIGXFSZ};
#define FATAL_COUNT (sizeof fatal_signals / sizeof fatal_signals[0])

void fileio_remove_temporaries(void)
{
    for (size_t k = 0; k < SLOTS; k++) {
        char *path = atomic_load(&slots[k]);
        if (path)
            unlink(path);
    }
}

static void on_fatal_signal(int sig)
{
    fileio_remove_temporaries();
    /* SA_RESETHAND restored the default action; SA_NODEFER lets it act at once */
    raise(sig);
}

static void install_handlers(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    for (size_t k = 0; k < FATAL_COUNT; k++) {
        struct sigaction old;
        if (sigaction(fatal_signals[k], NULL, &old) != 0 || old.sa_handler == SIG_IGN)
            continue; /* a signal ignored by whoever started us (nohup) stays ignored */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = (int)(SA_RESETHAND | SA_NODEFER); /* glibc defines them unsigned */
        sigaction(fatal_signals[k], &sa, NULL);
    }
}

static int register_path(char *path)
{
    install_handlers();
    for (int k = 0; k < SLOTS; k++) {
        char *expected = NULL;
        if (atomic_compare_exchange_strong(&slots[k], &expected, path))
            return k;
    }
    return -1;
}

static void hold_signals(sigset_t *previous);

void temp_forget(int slot, char *path)
{
    /* Held, so that a handler cannot read the path while it is freed. (The CLI commits and
     * aborts outputs on its main thread after the library's threads have ended.) */
    sigset_t previous;
    hold_signals(&previous);
    if (slot >= 0 && slot < SLOTS)
        atomic_store(&slots[slot], NULL);
    free(path);
    sigprocmask(SIG_SETMASK, &previous, NULL);
}

static void hold_signals(sigset_t *previous)
{
    sigset_t held;
    sigemptyset(&held);
    for (size_t k = 0; k < FATAL_COUNT; k++)
        sigaddset(&held, fatal_signals[k]);
    sigprocmask(SIG_BLOCK, &held, previous);
}

static sigset_t commit_previous;
void fileio_commit_begin(void) { hold_signals(&commit_previous); }
void fileio_commit_end(void) { sigprocmask(SIG_SETMASK, &commit_previous, NULL); }

/* ---- creation ---- */

int temp_create(const char *dir, const char *base, char **tmp_path, int *slot, int *stale,
                char *err, const char *shown)
{
    const long name_max = pathconf(dir, _PC_NAME_MAX);
    char *prefix = temp_prefix(base, name_max > 0 ? name_max : 255);
    const size_t dir_len = strlen(dir);
    char *path = prefix ? malloc(dir_len + 1 + strlen(prefix) + TEMP_RANDOM + 1) : NULL;
    if (!path) {
        free(prefix);
        return snprintf(err, FILEIO_ERROR_SIZE, "out of memory"), -1;
    }
    *stale = remove_leftovers(dir, prefix);
    for (int attempt = 0; attempt < 8; attempt++) {
        sprintf(path, "%s%s%sXXXXXX", dir, dir_len && dir[dir_len - 1] != '/' ? "/" : "", prefix);
        /* Created and registered with the cleanup signals held, so that no signal falls
         * between the file's creation and its registration. */
        sigset_t previous;
        hold_signals(&previous);
        const int fd = mkostemp(path, O_CLOEXEC);
        const int saved = errno;
        const int s = fd >= 0 ? register_path(path) : -1;
        sigprocmask(SIG_SETMASK, &previous, NULL);
        if (fd < 0) {
            if (saved == ENOENT || saved == ENOTDIR)
                snprintf(err, FILEIO_ERROR_SIZE, "%s: no such folder '%s'", shown, dir);
            else
                snprintf(err, FILEIO_ERROR_SIZE, "%s: cannot create a temporary file in '%s': %s",
                         shown, dir, strerror(saved));
            break;
        }
        if (s < 0) {
            unlink(path);
            close(fd);
            snprintf(err, FILEIO_ERROR_SIZE, "%s: too many outputs open at once", shown);
            break;
        }
        struct stat st;
        if (flock(fd, LOCK_EX) == 0 && fstat(fd, &st) == 0 && st.st_nlink > 0) {
            free(prefix);
            *tmp_path = path;
            *slot = s;
            return fd;
        }
        /* another run took it for a leftover in the instant before our lock: again */
        atomic_store(&slots[s], NULL);
        close(fd);
    }
    if (!*err)
        snprintf(err, FILEIO_ERROR_SIZE, "%s: cannot create a temporary file in '%s'", shown,
                 dir);
    free(prefix);
    free(path);
    return -1;
}
