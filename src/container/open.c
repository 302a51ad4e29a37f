/* sgfp4_tensor_open: shape and limit checks, the copy of the bytes when asked for, profile
 * choice, then the profile's validator, which also fills the view's copy of the places its
 * reads depend on (container/tensor.h).
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "common/options.h"
#include "common/results.h"
#include "common/diag.h"
#include "container/validate.h"

#define DEFAULT_MAX_ELEMENTS (UINT64_C(1) << 34)
#define DEFAULT_MAX_CONTAINER (UINT64_C(1) << 40)

/* Frees what a view owns beside itself: its copy of the places and of the bytes. */
static void release_copies(sgfp4_tensor *view)
{
    const sgfp4_allocator *a = &view->allocator;
    sgfp4_free_with(a, view->v1_offsets);
    sgfp4_free_with(a, view->records);
    sgfp4_free_with(a, view->modes);
    sgfp4_free_with(a, view->owned);
}

sgfp4_status sgfp4_open_options_init_sized(sgfp4_open_options *options, size_t size)
{
    sgfp4_open_options defaults;
    memset(&defaults, 0, sizeof defaults);
    return SGFP4_OPTIONS_INIT(sgfp4_open_options, options, size, &defaults);
}

/* The shape and the container's size against the address space and the options' limits. */
static sgfp4_status check_shape(uint64_t rows, uint64_t cols, size_t size,
                                const sgfp4_open_options *o, sgfp4_diag *diag)
{
    const uint64_t max_elements =
        o->limits.max_elements ? o->limits.max_elements : DEFAULT_MAX_ELEMENTS;
    const uint64_t max_container =
        o->limits.max_container_bytes ? o->limits.max_container_bytes : DEFAULT_MAX_CONTAINER;

    if (rows == 0 || cols == 0)
        return sgfp4_fail(diag, SGFP4_ERR_SHAPE, -1, -1, -1,
                          "shape %llux%llu: both dimensions must be at least 1",
                          (unsigned long long)rows, (unsigned long long)cols);
    /* The padded grid must be addressable as float32: (64*tiles)^2 * 4 bytes < 2^63. */
    const uint64_t tiles_y = rows / 64 + (rows % 64 != 0);
    const uint64_t tiles_x = cols / 64 + (cols % 64 != 0);
    if (tiles_y > (UINT64_C(1) << 26) || tiles_x > (UINT64_C(1) << 26) ||
        tiles_y * tiles_x > (UINT64_C(1) << 48) / 4096 || tiles_y * tiles_x * 4096 * 4 > SIZE_MAX)
        return sgfp4_fail(diag, SGFP4_ERR_SHAPE, -1, -1, -1,
                          "shape %llux%llu: padded tensor does not fit the address space",
                          (unsigned long long)rows, (unsigned long long)cols);
    if (rows * cols > max_elements)
        return sgfp4_fail(diag, SGFP4_ERR_LIMIT, -1, -1, -1,
                          "shape %llux%llu: %llu elements exceed the limit of %llu",
                          (unsigned long long)rows, (unsigned long long)cols,
                          (unsigned long long)(rows * cols), (unsigned long long)max_elements);
    if ((uint64_t)size > max_container)
        return sgfp4_fail(diag, SGFP4_ERR_LIMIT, -1, -1, -1,
                          "container of %llu bytes exceeds the limit of %llu",
                          (unsigned long long)size, (unsigned long long)max_container);
    return SGFP4_OK;
}

sgfp4_status sgfp4_tensor_open(const void *data, size_t size, sgfp4_profile profile,
                               uint64_t rows, uint64_t cols, sgfp4_tensor **out,
                               const sgfp4_open_options *options, sgfp4_diag *diag)
{
    sgfp4_diag_clear(diag);
    if (!out)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "out must not be NULL");
    *out = NULL;
    if (!data && size)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "data is NULL");
    if (profile != SGFP4_PROFILE_AUTO && profile != SGFP4_PROFILE_V1 &&
        profile != SGFP4_PROFILE_V2)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "unknown profile %d",
                          (int)profile);

    sgfp4_open_options opts;
    if (SGFP4_OPTIONS_READ(sgfp4_open_options, options, &opts) != SGFP4_OK)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "options: struct_size %zu is not one this library knows "
                          "(initialise them with sgfp4_open_options_init)",
                          options->struct_size);
    const sgfp4_open_options *o = &opts;
    const sgfp4_status shape_status = check_shape(rows, cols, size, o, diag);
    if (shape_status != SGFP4_OK)
        return shape_status;
    const uint64_t tiles_y = rows / 64 + (rows % 64 != 0);
    const uint64_t tiles_x = cols / 64 + (cols % 64 != 0);

    uint8_t *owned = NULL;
    if (o->copy && size) {
        owned = sgfp4_alloc_with(&o->allocator, size);
        if (!owned)
            return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1,
                              "cannot allocate the %zu-byte copy of the container", size);
        memcpy(owned, data, size);
        data = owned;
    }

    if (profile == SGFP4_PROFILE_AUTO) {
        const uint8_t *p = data;
        profile = size >= 4 && p[0] == 'S' && p[1] == 'G' && p[2] == 'F' && p[3] == '4'
                      ? SGFP4_PROFILE_V2
                      : SGFP4_PROFILE_V1;
    }

    sgfp4_tensor view = {0};
    view.profile = profile;
    view.data = data;
    view.size = size;
    view.rows = rows;
    view.cols = cols;
    view.tiles_y = tiles_y;
    view.tiles_x = tiles_x;
    view.blocks = tiles_y * tiles_x;
    view.allocator = o->allocator;
    view.owned = owned;
    view.info.profile = profile;
    view.info.rows = rows;
    view.info.cols = cols;
    view.info.tiles_y = tiles_y;
    view.info.tiles_x = tiles_x;
    view.info.blocks = view.blocks;
    view.info.container_bytes = size;
    view.info.bits_per_weight = (double)size * 8.0 / ((double)rows * (double)cols);

    const sgfp4_status status = profile == SGFP4_PROFILE_V1 ? sgfp4_validate_v1(&view, diag)
                                                            : sgfp4_validate_v2(&view, diag);
    if (status != SGFP4_OK) {
        release_copies(&view);
        return status;
    }

    sgfp4_tensor *t = sgfp4_alloc_with(&o->allocator, sizeof *t);
    if (!t) {
        release_copies(&view);
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "cannot allocate the tensor view");
    }
    *t = view;
    *out = t;
    return SGFP4_OK;
}

void sgfp4_tensor_close(sgfp4_tensor *tensor)
{
    if (tensor) {
        const sgfp4_allocator a = tensor->allocator;
        release_copies(tensor);
        sgfp4_free_with(&a, tensor);
    }
}

sgfp4_status sgfp4_tensor_get_info(const sgfp4_tensor *tensor, sgfp4_tensor_info *info)
{
    if (!tensor || !info || !SGFP4_RESULT_KNOWN(sgfp4_tensor_info, info))
        return SGFP4_ERR_ARGUMENT;
    sgfp4_result_store(info, &tensor->info);
    return SGFP4_OK;
}
