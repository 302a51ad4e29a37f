/* The leaf map of `sgfp4 info --map out.png`: one pixel per 4x4 cell of the tensor (cropped
 * to ceil(O/4) x ceil(I/4)). Colour by leaf size, hue by mode:
 * FP4 leaves in oranges, T158 leaves in blues, lighter for larger leaves (legend in
 * docs/cli.md, "Leaf map"). Written into an output the caller opened and commits.
 * Needs libpng (SGFP4_FILEIO_PNG, set by the build when it has it); without it the map is
 * not available and says so.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "fileio.h"

#if !SGFP4_FILEIO_PNG

bool fileio_leaf_map_available(void) { return false; }

bool fileio_leaf_map(const sgfp4_tensor *t, fileio_output *out, char *err)
{
    (void)t;
    (void)out;
    snprintf(err, FILEIO_ERROR_SIZE, "--map needs libpng, which this sgfp4 was built without");
    return false;
}

#else
#include <png.h>

bool fileio_leaf_map_available(void) { return true; }

/* [mode][size index 0=64 .. 4=4] -> RGB */
static const uint8_t palette[2][SGFP4_LEAF_SIZES][3] = {
    {{254, 230, 206}, {253, 190, 133}, {253, 141, 60}, {230, 85, 13}, {166, 54, 3}},
    {{222, 235, 247}, {158, 202, 225}, {107, 174, 214}, {49, 130, 189}, {8, 81, 156}},
};

static unsigned size_index(unsigned size)
{
    return size == 64 ? 0 : size == 32 ? 1 : size == 16 ? 2 : size == 8 ? 3 : 4;
}

/* libpng's writes go into the output; a failed one stops the PNG (png_error). */
static void png_to_output(png_structp png, png_bytep data, size_t size)
{
    if (!fileio_output_write(png_get_io_ptr(png), data, size))
        png_error(png, "cannot write");
}

static void png_flush_nothing(png_structp png) { (void)png; }

static bool write_png(fileio_output *out, const uint8_t *rgb, uint32_t width, uint32_t height)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop pinfo = png ? png_create_info_struct(png) : NULL;
    if (!pinfo) {
        png_destroy_write_struct(&png, NULL);
        return false;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &pinfo);
        return false;
    }
    png_set_write_fn(png, out, png_to_output, png_flush_nothing);
    png_set_IHDR(png, pinfo, width, height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, pinfo);
    for (uint32_t y = 0; y < height; y++)
        png_write_row(png, rgb + (size_t)y * width * 3);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &pinfo);
    return true;
}

bool fileio_leaf_map(const sgfp4_tensor *t, fileio_output *out, char *err)
{
    sgfp4_tensor_info info;
    sgfp4_tensor_info_init(&info);
    sgfp4_tensor_get_info(t, &info);
    const uint64_t width = (info.cols + 3) / 4, height = (info.rows + 3) / 4;
    if (width > PNG_UINT_31_MAX || height > PNG_UINT_31_MAX || width * height > (1u << 30))
        return snprintf(err, FILEIO_ERROR_SIZE, "--map: a %llux%llu picture is too large",
                        (unsigned long long)width, (unsigned long long)height),
               false;
    uint8_t *rgb = malloc((size_t)(width * height * 3));
    if (!rgb)
        return snprintf(err, FILEIO_ERROR_SIZE, "--map: out of memory"), false;
    sgfp4_leaf leaves[256];
    for (uint64_t b = 0; b < info.blocks; b++) {
        const uint64_t by = b / info.tiles_x, bx = b % info.tiles_x;
        const size_t n = sgfp4_tensor_block_leaves(t, b, leaves, 256);
        for (size_t i = 0; i < n && i < 256; i++) {
            const uint8_t *colour = palette[leaves[i].mode & 1][size_index(leaves[i].size)];
            for (unsigned cy = 0; cy < leaves[i].size / 4u; cy++)
                for (unsigned cx = 0; cx < leaves[i].size / 4u; cx++) {
                    const uint64_t y = by * 16 + leaves[i].y / 4u + cy;
                    const uint64_t x = bx * 16 + leaves[i].x / 4u + cx;
                    if (y < height && x < width)
                        memcpy(rgb + (y * width + x) * 3, colour, 3);
                }
        }
    }
    const bool ok = write_png(out, rgb, (uint32_t)width, (uint32_t)height);
    if (!ok)
        snprintf(err, FILEIO_ERROR_SIZE, "%s: cannot write the PNG", out->path);
    free(rgb);
    return ok;
}

#endif
