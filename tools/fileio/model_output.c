/* Model outputs: a crash-safe output, behind a zstd frame when the path ends in .zst.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "fileio.h"

static bool ends_with(const char *text, const char *suffix)
{
    const size_t n = strlen(text), m = strlen(suffix);
    return n >= m && strcmp(text + n - m, suffix) == 0;
}

static sgfp4_status file_write(void *user, const void *data, size_t size)
{
    return fileio_output_write(user, data, size) ? SGFP4_OK : SGFP4_ERR_IO;
}

bool fileio_model_output_open(const char *path, int zstd_level, unsigned flags,
                              fileio_model_output *mo, char *err)
{
    memset(mo, 0, sizeof *mo);
    if (!fileio_output_open(path, flags, &mo->out, err))
        return false;
    mo->sink = (sgfp4_sink){file_write, &mo->out};
    if (ends_with(path, ".zst")) {
        const sgfp4_sink file = mo->sink;
        if (sgfp4_zstd_sink_begin(&file, zstd_level, 1, &mo->zstd) != SGFP4_OK) {
            fileio_output_abort(&mo->out);
            return snprintf(err, FILEIO_ERROR_SIZE, "cannot start zstd compression (level %d)",
                            zstd_level),
                   false;
        }
        mo->sink = sgfp4_zstd_sink_get(mo->zstd);
    }
    return true;
}

bool fileio_model_output_finish(fileio_model_output *mo, char *err)
{
    if (mo->zstd && sgfp4_zstd_sink_finish(mo->zstd) != SGFP4_OK)
        return snprintf(err, FILEIO_ERROR_SIZE, "%s: zstd compression failed", mo->out.path),
               false;
    return fileio_output_finish(&mo->out, err);
}

bool fileio_model_output_commit(fileio_model_output *mo, char *err)
{
    sgfp4_zstd_sink_free(mo->zstd);
    mo->zstd = NULL;
    return fileio_output_commit(&mo->out, err);
}

void fileio_model_output_abort(fileio_model_output *mo)
{
    sgfp4_zstd_sink_free(mo->zstd);
    mo->zstd = NULL;
    fileio_output_abort(&mo->out);
}
