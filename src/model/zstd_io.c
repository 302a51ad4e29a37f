/* zstd transport: a compressing sink (streaming, bounded memory) and the decompression of a
 * .zst model into an unlinked temporary file that can then be mapped like a plain one.
 * SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "model/model_internal.h"

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
    ZSTD_inBuffer in = {data, size, 0};
    return zsink_pump(user, &in, ZSTD_e_continue);
}

sgfp4_status sgfp4_zstd_sink_begin(const sgfp4_sink *inner, int level, unsigned threads,
                                   sgfp4_zstd_sink **out)
{
    if (!inner || !out || level < 0 || level > ZSTD_maxCLevel() || threads > SGFP4_MAX_THREADS)
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
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Declared in model.c, where the open path uses it. */
sgfp4_status sgfp4_zstd_decompress_to_temp(int fd, const char *path, const char *temp_dir,
                                           uint64_t max_bytes, int *out_fd, sgfp4_diag *diag);

sgfp4_status sgfp4_zstd_decompress_to_temp(int fd, const char *path, const char *temp_dir,
                                           uint64_t max_bytes, int *out_fd, sgfp4_diag *diag)
{
    const int tmp = sgfp4_temp_file(temp_dir);
    if (tmp < 0)
        return sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1,
                          "%s: cannot create a temporary file in %s for the decompressed model: %s",
                          path, sgfp4_temp_dir(temp_dir), strerror(errno));
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
        any = true;
        ZSTD_inBuffer in = {ibuf, (size_t)got, 0};
        while (s == SGFP4_OK && in.pos < in.size) {
            ZSTD_outBuffer out = {obuf, out_cap, 0};
            last = ZSTD_decompressStream(dctx, &out, &in);
            if (ZSTD_isError(last))
                s = sgfp4_fail(diag, SGFP4_ERR_MODEL_FORMAT, (int64_t)(consumed + in.pos), -1, -1,
                               "%s: zstd stream is corrupt near compressed byte %llu: %s", path,
                               (unsigned long long)(consumed + in.pos), ZSTD_getErrorName(last));
            else if ((total += out.pos) > max_bytes)
                s = sgfp4_fail(diag, SGFP4_ERR_LIMIT, (int64_t)(consumed + in.pos), -1, -1,
                               "%s: decompresses to more than the limit of %llu bytes", path,
                               (unsigned long long)max_bytes);
            else if (!write_all(tmp, obuf, out.pos))
                s = sgfp4_fail(diag, SGFP4_ERR_IO, -1, -1, -1,
                               "%s: cannot write the decompressed model to %s: %s", path,
                               sgfp4_temp_dir(temp_dir), strerror(errno));
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
