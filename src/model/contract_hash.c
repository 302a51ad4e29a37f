/* The two hashes an execution contract pins (spec section 22.10): the container's bytes and
 * the decoded float32 tensor. They need OpenSSL, so they belong to the model component
 * (libsgfp4_model, declared in sgfp4_model.h).
 * SPDX-License-Identifier: MIT */
#include <openssl/evp.h>

#include "container/tensor.h"
#include "sgfp4_model.h"
#include "decode/bands.h"

static void to_hex(const unsigned char digest[32], char hex[65])
{
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < 32; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[64] = '\0';
}

void sgfp4_tensor_container_sha256(const sgfp4_tensor *tensor, char hex[65])
{
    if (!hex)
        return;
    hex[0] = '\0';
    unsigned char digest[32];
    unsigned int len = 0;
    if (tensor && EVP_Digest(tensor->data, tensor->size, digest, &len, EVP_sha256(), NULL) == 1)
        to_hex(digest, hex);
}

typedef struct hash_job {
    EVP_MD_CTX *md;
    uint64_t cols;
} hash_job;

static sgfp4_status hash_band(void *context, uint64_t row_begin, uint64_t row_end,
                              const float *band)
{
    const hash_job *j = context;
    const size_t bytes = (size_t)((row_end - row_begin) * j->cols * sizeof(float));
    return EVP_DigestUpdate(j->md, band, bytes) == 1 ? SGFP4_OK : SGFP4_ERR_INTERNAL;
}

sgfp4_status sgfp4_tensor_decoded_sha256(const sgfp4_tensor *tensor, char hex[65],
                                         const sgfp4_decode_options *options)
{
    if (!tensor || !hex)
        return SGFP4_ERR_ARGUMENT;
    hex[0] = '\0';
    hash_job j = {EVP_MD_CTX_new(), tensor->cols};
    if (!j.md)
        return SGFP4_ERR_NOMEM;
    sgfp4_status s = EVP_DigestInit_ex(j.md, EVP_sha256(), NULL) == 1 ? SGFP4_OK
                                                                       : SGFP4_ERR_INTERNAL;
    if (s == SGFP4_OK)
        s = sgfp4_decode_bands(tensor, options, hash_band, &j);
    unsigned char digest[32];
    unsigned int len = 0;
    if (s == SGFP4_OK && EVP_DigestFinal_ex(j.md, digest, &len) != 1)
        s = SGFP4_ERR_INTERNAL;
    if (s == SGFP4_OK)
        to_hex(digest, hex);
    EVP_MD_CTX_free(j.md);
    return s;
}
