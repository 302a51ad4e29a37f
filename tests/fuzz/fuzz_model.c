/* libFuzzer target: whole-model files: the safetensors reader, the sgfp4 manifest (D6),
 * opening and verifying each quantized tensor, converting pass-through tensors, restoring
 * the model into a sink; and the JSON policy parser.
 * Input: one selector byte. Below 0xF0: a safetensors file follows (opened from memory, with
 * max_header_bytes 1 MB when the selector is odd). 0xF0 and above: a policy document.
 * Checks: every tensor a model lists lies inside the file; each quantized tensor's strict
 * open agrees with its verify (a hash mismatch aside), and what opens passes every check of
 * fuzz_check_tensor(); conversions and the restore stay inside their buffers.
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "fuzz_common.h"
#include "sgfp4_model.h"

static sgfp4_status discard(void *user, const void *data, size_t size)
{
    (void)data;
    *(uint64_t *)user += size;
    return SGFP4_OK;
}

static void check_quantized(const sgfp4_model *m, const sgfp4_model_tensor *t,
                            const uint8_t *file, size_t size)
{
    const sgfp4_model_quant *q = t->quant;
    FUZZ_ASSERT(q->profile == SGFP4_PROFILE_V1 || q->profile == SGFP4_PROFILE_V2);
    FUZZ_ASSERT(strlen(q->sha256) == 64);
    sgfp4_open_options options;
    sgfp4_open_options_init(&options);
    options.limits.max_elements = FUZZ_MAX_ELEMENTS;
    sgfp4_tensor *view = NULL;
    sgfp4_diag diag;
    const sgfp4_status opened = sgfp4_model_tensor_open(m, t, &view, &options, &diag);
    if (opened == SGFP4_OK) {
        sgfp4_tensor_info info;
        sgfp4_tensor_get_info(view, &info);
        FUZZ_ASSERT(info.rows == q->rows && info.cols == q->cols);
        FUZZ_ASSERT(info.container_bytes == t->nbytes);
        fuzz_check_tensor(view, file + t->offset, (size_t)t->nbytes, 0x07);
        sgfp4_tensor_close(view);
    } else {
        FUZZ_ASSERT(view == NULL && diag.status == opened);
    }
    /* verify = strict open (default limits) + sha256 */
    const sgfp4_status verified = sgfp4_model_tensor_verify(m, t, &diag);
    if (verified == SGFP4_OK)
        FUZZ_ASSERT(opened == SGFP4_OK || opened == SGFP4_ERR_LIMIT);
    (void)size;
}

static void fuzz_file(const uint8_t *data, size_t size, int small_header)
{
    sgfp4_model_open_options options;
    sgfp4_model_open_options_init(&options);
    if (small_header)
        options.limits.max_header_bytes = 1 << 20;
    sgfp4_model *m = NULL;
    sgfp4_diag diag;
    const sgfp4_status s = sgfp4_model_open_memory(data, size, &m, &options, &diag);
    if (s != SGFP4_OK) {
        FUZZ_ASSERT(m == NULL && diag.status == s && diag.message[0] != '\0');
        return;
    }
    FUZZ_ASSERT(m != NULL);
    const uint64_t data_offset = sgfp4_model_data_offset(m);
    FUZZ_ASSERT(data_offset >= 8 && data_offset <= size);
    FUZZ_ASSERT(sgfp4_model_file_bytes(m) == size);
    const size_t count = sgfp4_model_tensor_count(m);
    uint64_t total_elements = 0;
    for (size_t i = 0; i < count; i++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_at(m, i);
        FUZZ_ASSERT(t && t->name);
        FUZZ_ASSERT(sgfp4_model_tensor_find(m, t->name) == t);
        FUZZ_ASSERT(t->offset >= data_offset && t->offset <= size &&
                    size - t->offset >= t->nbytes);
        FUZZ_ASSERT(t->data == data + t->offset);
        uint64_t nbytes = 0; /* elements x bits / 8: sub-byte dtypes fill whole bytes */
        FUZZ_ASSERT(sgfp4_st_dtype_bytes(t->dtype, t->elements, &nbytes) == 0);
        FUZZ_ASSERT(t->nbytes == nbytes);
        total_elements += t->elements;
        if (t->quant) {
            check_quantized(m, t, data, size);
        } else if (sgfp4_st_dtype_is_quantizable(t->dtype) && t->elements <= FUZZ_MAX_ELEMENTS) {
            const size_t bytes = (size_t)t->elements * 4;
            float *f = malloc(bytes ? bytes : 1);
            FUZZ_ASSERT(f);
            (void)sgfp4_model_tensor_to_f32(t, (int)(i & 1), f, bytes, &diag);
            free(f);
        }
    }
    FUZZ_ASSERT(sgfp4_model_tensor_at(m, count) == NULL);
    const size_t meta = sgfp4_model_metadata_count(m);
    for (size_t i = 0; i < meta; i++) {
        const char *key = NULL, *value = NULL;
        FUZZ_ASSERT(sgfp4_model_metadata_at(m, i, &key, &value) == 0 && key && value);
    }
    /* Restore the whole model into a counting sink, when it is small. */
    if (sgfp4_model_is_quantized(m) && total_elements <= FUZZ_MAX_ELEMENTS) {
        uint64_t written = 0;
        const sgfp4_sink sink = {discard, &written};
        (void)sgfp4_model_decode(m, &sink, NULL, &diag);
    }
    sgfp4_model_close(m);
}

static void fuzz_policy(const uint8_t *data, size_t size)
{
    sgfp4_model_policy *p = NULL;
    sgfp4_diag diag;
    const sgfp4_status s = sgfp4_model_policy_parse((const char *)data, size, &p, &diag);
    if (s == SGFP4_OK)
        FUZZ_ASSERT(p != NULL && sgfp4_model_policy_defaults(p) != NULL);
    else
        FUZZ_ASSERT(p == NULL);
    sgfp4_model_policy_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    /* An exact-size copy: the file must not need the selector byte before it. */
    uint8_t *copy = malloc(size - 1 ? size - 1 : 1);
    FUZZ_ASSERT(copy);
    memcpy(copy, data + 1, size - 1);
    if (data[0] >= 0xF0)
        fuzz_policy(copy, size - 1);
    else
        fuzz_file(copy, size - 1, data[0] & 1);
    free(copy);
    return 0;
}
