/* v1 (`.fp4`) acceptance: headers[B] | offsets[B] | codes_blob[B * 2048] (DECISIONS D3),
 * length exactly B * 2056; per block the D2 rules on flags, payload range, the affine
 * header and the zero upper half of T158 payloads.
 * SPDX-License-Identifier: MIT */
#include <stdio.h>

#include "container/affine.h"
#include "common/diag.h"
#include "container/validate.h"

/* True when the 1024 bytes at p are zero: word by word (the compiler vectorises it); the
 * byte that is not is looked for only on failure. */
static bool all_zero_1024(const uint8_t *p)
{
    uint64_t any = 0;
    for (unsigned i = 0; i < 1024; i += 8)
        any |= sgfp4_load_u64le(p + i);
    return !any;
}

sgfp4_status sgfp4_validate_v1(sgfp4_tensor *t, sgfp4_diag *diag)
{
    const uint64_t B = t->blocks;
    if (B > UINT64_MAX / SGFP4_V1_BLOCK_BYTES || (uint64_t)t->size != B * SGFP4_V1_BLOCK_BYTES)
        return sgfp4_fail(diag, SGFP4_ERR_V1_LENGTH, (int64_t)t->size, -1, -1,
                          "v1 container is %llu bytes; shape %llux%llu needs %llu blocks * "
                          "2056 = %llu bytes",
                          (unsigned long long)t->size, (unsigned long long)t->rows,
                          (unsigned long long)t->cols, (unsigned long long)B,
                          (unsigned long long)(B * SGFP4_V1_BLOCK_BYTES));

    const uint8_t *headers = t->data;
    const uint8_t *offsets = t->data + 4 * B;
    const uint8_t *blob = t->data + 8 * B;
    const uint64_t blob_bytes = B * SGFP4_V1_PAYLOAD;
    /* the view's copy of the payload offsets (tensor.h): each word as it is checked here */
    uint32_t *kept = t->v1_offsets = sgfp4_alloc_with(&t->allocator, (size_t)B * sizeof *kept);
    if (!kept)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1,
                          "cannot allocate the copy of %llu payload offsets",
                          (unsigned long long)B);

    for (uint64_t b = 0; b < B; b++) {
        const int64_t header_at = (int64_t)(4 * b);
        const int64_t offset_at = (int64_t)(4 * B + 4 * b);
        const uint32_t header = sgfp4_load_u32le(headers + 4 * b);
        const uint32_t offset = sgfp4_load_u32le(offsets + 4 * b);
        const unsigned flags = offset & 0xFu;
        const uint64_t base = offset & ~UINT32_C(0xF);
        kept[b] = offset;

        if (flags & 0xCu)
            return sgfp4_fail(diag, SGFP4_ERR_V1_RESERVED_FLAGS, offset_at, (int64_t)b, -1,
                              "v1 block %llu: offset word at byte %lld has reserved flag "
                              "bits set (0x%08x)",
                              (unsigned long long)b, (long long)offset_at, offset);
        if (base + SGFP4_V1_PAYLOAD > blob_bytes)
            return sgfp4_fail(diag, SGFP4_ERR_V1_OFFSET_RANGE, offset_at, (int64_t)b, -1,
                              "v1 block %llu: payload offset %llu (word at byte %lld) + 2048 "
                              "exceeds the %llu-byte codes blob",
                              (unsigned long long)b, (unsigned long long)base,
                              (long long)offset_at, (unsigned long long)blob_bytes);
        const sgfp4_status s = sgfp4_affine_check(header, 0xFFFFu);
        if (s != SGFP4_OK) {
            char where[64];
            snprintf(where, sizeof where, "v1 block %llu:", (unsigned long long)b);
            return sgfp4_affine_fail(s, header, 0xFFFFu, header_at, (int64_t)b, -1, where, diag);
        }

        const unsigned mode = flags & 1u;
        if (mode == SGFP4_MODE_T158 && !all_zero_1024(blob + base + 1024)) {
            const uint8_t *tail = blob + base + 1024;
            for (unsigned i = 0; i < 1024; i++)
                if (tail[i] != 0) {
                    const int64_t at = (int64_t)(8 * B + base + 1024 + i);
                    return sgfp4_fail(diag, SGFP4_ERR_V1_T158_TAIL, at, (int64_t)b, -1,
                                      "v1 block %llu: T158 payload word %u (byte %lld) is "
                                      "not zero",
                                      (unsigned long long)b, 256 + i / 4, (long long)at);
                }
        }
        t->info.leaves_by_mode[mode]++;
        t->info.leaves_by_size_mode[0][mode]++;
        t->info.error_hint_blocks += (flags >> 1) & 1u;
    }
    t->info.leaves = B;
    t->info.leaves_by_size[0] = B;
    return SGFP4_OK;
}
