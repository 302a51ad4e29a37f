/* Model outputs (crash-safe, optionally zstd), model opening with messages, progress bar.
 * SPDX-License-Identifier: MIT */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "model_cli.h"

bool model_cli_open(const char *cmd, const char *path, sgfp4_model **model)
{
    sgfp4_diag diag;
    const sgfp4_status s = sgfp4_model_open(path, model, NULL, &diag);
    if (s != SGFP4_OK) {
        /* File-level messages of the library already start with the path. */
        const size_t n = strlen(path);
        const bool named = strncmp(diag.message, path, n) == 0 && diag.message[n] == ':';
        cli_error(cmd, "%s%s%s [%s]", named ? "" : path, named ? "" : ": ", diag.message,
                  sgfp4_status_name(s));
        return false;
    }
    return true;
}

static sgfp4_status file_write(void *user, const void *data, size_t size)
{
    return cli_output_write(user, data, size) ? SGFP4_OK : SGFP4_ERR_IO;
}

bool model_output_open(const char *cmd, const char *path, int zstd_level, unsigned threads,
                       model_output *mo)
{
    memset(mo, 0, sizeof *mo);
    if (!cli_output_open(cmd, path, &mo->out))
        return false;
    mo->sink.write = file_write;
    mo->sink.user = &mo->out;
    if (cli_ends_with(path, ".zst")) {
        const sgfp4_sink file = mo->sink;
        if (sgfp4_zstd_sink_begin(&file, zstd_level, threads, &mo->zstd) != SGFP4_OK) {
            cli_output_abort(&mo->out);
            cli_error(cmd, "cannot start zstd compression (level %d)", zstd_level);
            return false;
        }
        mo->sink = sgfp4_zstd_sink_get(mo->zstd);
    }
    return true;
}

bool model_output_finish(const char *cmd, model_output *mo)
{
    if (mo->zstd && sgfp4_zstd_sink_finish(mo->zstd) != SGFP4_OK) {
        cli_error(cmd, "%s: zstd compression failed", mo->out.path);
        return false;
    }
    if (mo->out.failed || fflush(mo->out.file) != 0) {
        cli_error(cmd, "%s: write error", mo->out.path);
        return false;
    }
    return true;
}

const char *model_output_temp_path(const model_output *mo) { return mo->out.tmp_path; }

bool model_output_commit(const char *cmd, model_output *mo)
{
    sgfp4_zstd_sink_free(mo->zstd);
    mo->zstd = NULL;
    return cli_output_commit(cmd, &mo->out);
}

void model_output_abort(model_output *mo)
{
    sgfp4_zstd_sink_free(mo->zstd);
    mo->zstd = NULL;
    cli_output_abort(&mo->out);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void progress_bar_init(progress_bar *bar, const char *label)
{
    memset(bar, 0, sizeof *bar);
    bar->enabled = !cli_quiet && isatty(STDERR_FILENO);
    bar->label = label;
    bar->start = now_seconds();
    bar->last = -1;
}

void progress_bar_update(void *user, const sgfp4_model_progress *p)
{
    progress_bar *bar = user;
    if (!bar->enabled)
        return;
    const double t = now_seconds();
    const bool final = p->tensors_done == p->tensors_total;
    if (!final && bar->last >= 0 && t - bar->last < 0.2)
        return;
    bar->last = t;
    const double frac = p->bytes_total ? (double)p->bytes_done / (double)p->bytes_total : 1.0;
    char cells[31];
    const int full = (int)(frac * 30.0);
    for (int k = 0; k < 30; k++)
        cells[k] = k < full ? '=' : k == full ? '>' : ' ';
    cells[30] = '\0';
    const double elapsed = t - bar->start;
    const double rate = elapsed > 0 ? (double)p->bytes_done / elapsed : 0;
    const double eta = rate > 0 ? (double)(p->bytes_total - p->bytes_done) / rate : 0;
    fprintf(stderr, "\r%s [%s] %zu/%zu tensors  %.1f/%.1f MB  %.1f MB/s  ETA %d:%02d \033[K",
            bar->label, cells, p->tensors_done, p->tensors_total, (double)p->bytes_done / 1e6,
            (double)p->bytes_total / 1e6, rate / 1e6, (int)eta / 60, (int)eta % 60);
    fflush(stderr);
}

void progress_bar_done(progress_bar *bar)
{
    if (bar->enabled && bar->last >= 0) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
}

void model_cli_shape(char *buf, size_t size, const uint64_t *shape, size_t rank)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (size_t d = 0; d < rank && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%llu", d ? ", " : "",
                                 (unsigned long long)shape[d]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
}
