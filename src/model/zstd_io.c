/* zstd transport: a compressing sink (streaming, bounded memory) and the decompression of a
 * .zst model into an unlinked temporary file that can then be mapped like a plain one, within
 * bounds on what it may inflate to (zstd_bounds.h).
 * SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <zstd.h>

#include "model/model_internal.h"
#include "model/zstd_bounds.h"

struct sgfp4_zstd_sink {
    sgfp4_sink inner;
    ZSTD_CCtx *cctx;
    void *out;
    size_t out_cap;
};

static sgfp4_status zsink_pump(sgfp4_zstd_sink *zs, ZSTD_inBuffer *in, ZSTD_EndDirective end)
{
    for (;;) {
        ZSTD_outBuffer out = {zs->out, zs->out_cap, 0};
        const size_t left = ZSTD_compressStream2(zs->cctx, &out, in, end);
        if (ZSTD_isError(left))
            return SGFP4_ERR_INTERNAL;
        sgfp4_status s = sgfp4_sink_put(&zs->inner, zs->out, out.pos);
        if (s != SGFP4_OK)
            return s;
        const bool done = end == ZSTD_e_continue ? in->pos == in->size : left == 0;
        if (done)
            return SGFP4_OK;
    }
}

static sgfp4_status zsink_write(void *user, const void *data, size_t size)
{
    if (!user || (!data && size)) /* the sink of sgfp4_zstd_sink_get(NULL), or no bytes */
        return SGFP4_ERR_ARGUMENT;
    ZSTD_inBuffer in = {data, size, 0};
    return zsink_pump(user, &in, ZSTD_e_continue);
}

sgfp4_status sgfp4_zstd_sink_begin(const sgfp4_sink *inner, int level, unsigned threads,
                                   sgfp4_zstd_sink **out)
{
    if (!inner || !inner->write || !out || level < 0 || level > ZSTD_maxCLevel() ||
        threads > SGFP4_MAX_THREADS)
        return SGFP4_ERR_ARGUMENT;
    sgfp4_zstd_sink *zs = calloc(1, sizeof *zs);
    if (!zs)
        return SGFP4_ERR_NOMEM;
    zs->inner = *inner;
    zs->cctx = ZSTD_createCCtx();
    zs->out_cap = ZSTD_CStreamOutSize();
    zs->out = malloc(zs->out_cap);
    if (!zs->cctx || !zs->out) {
        sgfp4_zstd_sink_free(zs);
        return SGFP4_ERR_NOMEM;
    }
    ZSTD_CCtx_setParameter(zs->cctx, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(zs->cctx, ZSTD_c_checksumFlag, 1);
    if (threads > 1)
        ZSTD_CCtx_setParameter(zs->cctx, ZSTD_c_nbWorkers, (int)threads); /* ignored if no MT */
    *out = zs;
    return SGFP4_OK;
}

sgfp4_sink sgfp4_zstd_sink_get(sgfp4_zstd_sink *zs)
{
    sgfp4_sink s = {zsink_write, zs};
    return s;
}

sgfp4_status sgfp4_zstd_sink_finish(sgfp4_zstd_sink *zs)
{
    if (!zs)
        return SGFP4_ERR_ARGUMENT;
    ZSTD_inBuffer in = {NULL, 0, 0};
    return zsink_pump(zs, &in, ZSTD_e_end);
}

void sgfp4_zstd_sink_free(sgfp4_zstd_sink *zs)
{
    if (!zs)
        return;
    ZSTD_freeCCtx(zs->cctx);
    free(zs->out);
    free(zs);
}

static bool write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        const ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return false;
        if (w == 0) {
            errno = ENOSPC; /* a write that makes no progress: the device is full */
            return false;
        }
        p += w;
        n -= (size_t)w;
    }
    return true;
}

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return a != 0 && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

sgfp4_zstd_bound sgfp4_zstd_limit(const sgfp4_zstd_bounds *b, uint64_t consumed,
                                  uint64_t *limit)
{
    sgfp4_zstd_bound which = SGFP4_ZSTD_BOUND_ABSOLUTE;
    *limit = b->max_bytes;
    uint64_t ratio = mul_sat(b->ratio, b->input_bytes ? b->input_bytes : consumed);
    if (ratio < SGFP4_MODEL_ZSTD_RATIO_FLOOR)
        ratio = SGFP4_MODEL_ZSTD_RATIO_FLOOR;
    if (ratio < *limit) {
        *limit = ratio;
        which = SGFP4_ZSTD_BOUND_RATIO;
    }
    if (b->space_known) {
        /* percent of the free bytes, without overflow */
        const uint64_t space =
            b->free_bytes / 100 * b->percent + b->free_bytes % 100 * b->percent / 100;
        if (space < *limit) {
            *limit = space;
            which = SGFP4_ZSTD_BOUND_SPACE;
        }
    }
    return which;
}

/* Fails with SGFP4_ERR_LIMIT, naming the bound and the option that raises it, if `total`
 * decompressed bytes (after `consumed` compressed ones) exceed the bounds. */
static sgfp4_status check_total(const sgfp4_zstd_bounds *b, uint64_t total, uint64_t consumed,
                                const char *path, const char *dir, sgfp4_diag *diag)
{
    uint64_t limit;
    const sgfp4_zstd_bound which = sgfp4_zstd_limit(b, consumed, &limit);
    if (total <= limit)
        return SGFP4_OK;
    const int64_t at = (int64_t)consumed;
    switch (which) {
    case SGFP4_ZSTD_BOUND_RATIO:
        return sgfp4_fail(diag, SGFP4_ERR_LIMIT, at, -1, -1,
                          "%s: decompresses to more than %llu bytes, %llu times its %llu "
                          "compressed bytes (a zstd bomb? sgfp4_model_open_options."
                          "max_decompression_ratio raises the bound)", path,
                          (unsigned long long)limit, (unsigned long long)b->ratio,
                          (unsigned long long)(b->input_bytes ? b->input_bytes : consumed));
    case SGFP4_ZSTD_BOUND_SPACE:
        return sgfp4_fail(diag, SGFP4_ERR_LIMIT, at, -1, -1,
                          "%s: the decompressed copy would take more than %u%% of the %llu "
                          "bytes free in %s (sgfp4_model_open_options.max_temp_space_percent, "
                          "or another temp_dir)", path, b->percent,
                          (unsigned long long)b->free_bytes, dir);
    default:
        return sgfp4_fail(diag, SGFP4_ERR_LIMIT, at, -1, -1,
                          "%s: decompresses to more than the limit of %llu bytes "
                          "(sgfp4_model_open_options.max_decompressed_bytes)", path,
                          (unsigned long long)limit);
    }
}

/* The bounds a caller's options set for input `fd` decompressed into `tmp` in `dir`. */
static sgfp4_zstd_bounds bounds_of(const sgfp4_model_open_options *o, int fd, int tmp)
{
    sgfp4_zstd_bounds b = {0};
    b.max_bytes = o && o->max_decompressed_bytes ? o->max_decompressed_bytes
                                                 : SGFP4_MODEL_DEFAULT_MAX_DECOMPRESSED;
    b.ratio = o && o->max_decompression_ratio ? o->max_decompression_ratio
                                              : SGFP4_MODEL_DEFAULT_ZSTD_RATIO;
    b.percent = o && o->max_temp_space_percent ? o->max_temp_space_percent
                                               : SGFP4_MODEL_DEFAULT_TEMP_SPACE_PERCENT;
    if (b.percent > 100)
        b.percent = 100;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        b.input_bytes = (uint64_t)st.st_size; /* else (a pipe): what was read so far */
    struct statvfs vfs;
    if (fstatvfs(tmp, &vfs) == 0) {
        b.space_known = true;
        b.free_bytes = mul_sat((uint64_t)vfs.f_bavail, (uint64_t)vfs.f_frsize);
    }
    return b;
}

sgfp4_status sgfp4_zstd_decompress_to_temp(int fd, const char *path,
                                           const sgfp4_model_open_options *options, int *out_fd,
                                           sgfp4_diag *diag)
{
    const char *temp_dir = options ? options->temp_dir : NULL;
    const char *dir = sgfp4_temp_dir(temp_dir);
    const int tmp = sgfp4_temp_file(temp_dir);
    if (tmp < 0)
        return sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1,
                          "%s: cannot create a temporary file in %s for the decompressed model: %s",
                          path, dir, strerror(errno));
    const sgfp4_zstd_bounds bounds = bounds_of(options, fd, tmp);
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    const size_t in_cap = ZSTD_DStreamInSize(), out_cap = ZSTD_DStreamOutSize();
    uint8_t *ibuf = malloc(in_cap), *obuf = malloc(out_cap);
    sgfp4_status s = SGFP4_OK;
    uint64_t total = 0, consumed = 0;
    size_t last = 0;
    bool any = false;
    if (!dctx || !ibuf || !obuf)
        s = sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    while (s == SGFP4_OK) {
        const ssize_t got = read(fd, ibuf, in_cap);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            s = sgfp4_fail(diag, SGFP4_ERR_IO, (int64_t)consumed, -1, -1, "%s: read error: %s",
                           path, strerror(errno));
            break;
        }
        if (got == 0)
            break;
        if (!any) {
            /* A frame that declares its size is refused before a byte is written. */
            const unsigned long long declared = ZSTD_getFrameContentSize(ibuf, (size_t)got);
            if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != ZSTD_CONTENTSIZE_ERROR &&
                (s = check_total(&bounds, declared, (uint64_t)got, path, dir, diag)) != SGFP4_OK)
                break;
        }
        any = true;
        ZSTD_inBuffer in = {ibuf, (size_t)got, 0};
        while (s == SGFP4_OK && in.pos < in.size) {
            ZSTD_outBuffer out = {obuf, out_cap, 0};
            last = ZSTD_decompressStream(dctx, &out, &in);
            if (ZSTD_isError(last))
                s = sgfp4_fail(diag, SGFP4_ERR_MODEL_FORMAT, (int64_t)(consumed + in.pos), -1, -1,
                               "%s: zstd stream is corrupt near compressed byte %llu: %s", path,
                               (unsigned long long)(consumed + in.pos), ZSTD_getErrorName(last));
            else if ((s = check_total(&bounds, total + out.pos, consumed + in.pos, path, dir,
                                      diag)) == SGFP4_OK &&
                     !write_all(tmp, obuf, out.pos))
                s = sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1,
                               "%s: cannot write the decompressed model to %s: %s", path, dir,
                               strerror(errno));
            total += out.pos;
        }
        consumed += (uint64_t)got;
    }
    if (s == SGFP4_OK && (!any || last != 0))
        s = sgfp4_fail(diag, SGFP4_ERR_TRUNCATED, (int64_t)consumed, -1, -1,
                       "%s: zstd stream is truncated (ends inside a frame)", path);
    ZSTD_freeDCtx(dctx);
    free(ibuf);
    free(obuf);
    if (s != SGFP4_OK) {
        close(tmp);
        return s;
    }
    *out_fd = tmp;
    return SGFP4_OK;
}
