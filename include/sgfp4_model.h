/*
 * libsgfp4 — whole models: safetensors in, SGFP4 manifest out (DECISIONS D6), decode back.
 *
 * SPDX-License-Identifier: MIT
 *
 * A model is a safetensors file. sgfp4_model_open() maps it (or, for a zstd-compressed file,
 * decompresses it once into an unlinked temporary file and maps that), checks the whole
 * header strictly and yields an immutable view: tensor names, dtypes, shapes and byte
 * ranges, the `__metadata__` strings and, when the file is a quantized model, the parsed
 * `sgfp4` manifest. Tensor bytes stay in the mapping; nothing is read until used.
 *
 * Writing is streaming: every writer pushes bytes, in order, into a caller's sink (a file,
 * a pipe, a zstd stream). The quantized-model writer encodes one tensor at a time, so peak
 * memory is about one tensor's float32 copy plus its container, whatever the model's size.
 *
 * Every function here keeps no global state, prints nothing and never exits the process.
 * Errors fill an optional sgfp4_diag whose message names the tensor and the byte offset in
 * the file (offset = -1 when no single offset applies).
 */
#ifndef SGFP4_MODEL_H
#define SGFP4_MODEL_H

#include "sgfp4.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- safetensors dtypes -------------------------------------------------------------- */

/** The dtypes of the safetensors format. Only F32, F16 and BF16 can be quantized. */
typedef enum sgfp4_st_dtype {
    SGFP4_ST_BOOL = 0,
    SGFP4_ST_U8,
    SGFP4_ST_I8,
    SGFP4_ST_F8_E4M3,
    SGFP4_ST_F8_E5M2,
    SGFP4_ST_I16,
    SGFP4_ST_U16,
    SGFP4_ST_F16,
    SGFP4_ST_BF16,
    SGFP4_ST_I32,
    SGFP4_ST_U32,
    SGFP4_ST_F32,
    SGFP4_ST_I64,
    SGFP4_ST_U64,
    SGFP4_ST_F64,
    SGFP4_ST_DTYPE_COUNT
} sgfp4_st_dtype;

/** The dtype's name as written in a header ("F32"), or NULL if out of range. */
SGFP4_API const char *sgfp4_st_dtype_name(sgfp4_st_dtype dtype);
/** Bytes per element (0 if out of range). */
SGFP4_API size_t sgfp4_st_dtype_size(sgfp4_st_dtype dtype);
/** Parses a dtype name; returns 0 on success, -1 if unknown. */
SGFP4_API int sgfp4_st_dtype_parse(const char *name, sgfp4_st_dtype *dtype);

/** Largest rank a header may declare (a limit of this reader, far above any real model). */
#define SGFP4_MODEL_MAX_RANK 16

/* ---- reading ------------------------------------------------------------------------- */

/** What the manifest says about a quantized tensor (D6). */
typedef struct sgfp4_model_quant {
    sgfp4_profile profile;           /**< V1 or V2 */
    uint64_t rows, cols;             /**< logical (O, I) of the container */
    size_t original_rank;
    const uint64_t *original_shape;  /**< the source tensor's shape */
    sgfp4_st_dtype source_dtype;     /**< F32, F16 or BF16 */
    char sha256[65];                 /**< lowercase hex of the container bytes */
    const char *encoder_json;        /**< the "encoder" object, compact JSON */
} sgfp4_model_quant;

/** One tensor of an opened model. Borrowed from the model; valid until sgfp4_model_close(). */
typedef struct sgfp4_model_tensor {
    const char *name;
    sgfp4_st_dtype dtype;
    size_t rank;
    const uint64_t *shape;
    uint64_t elements;               /**< product of shape (1 for rank 0) */
    uint64_t offset;                 /**< absolute byte offset of the data in the file */
    uint64_t nbytes;
    const uint8_t *data;             /**< the bytes in the mapping */
    const sgfp4_model_quant *quant;  /**< non-NULL when the manifest lists this tensor */
} sgfp4_model_tensor;

typedef struct sgfp4_model sgfp4_model;

/** Options of the open calls; NULL means the defaults. */
typedef struct sgfp4_model_open_options {
    size_t struct_size;    /**< set by sgfp4_model_open_options_init() */
    sgfp4_limits limits;   /**< max_header_bytes caps the JSON header (default 100 MB) */
    /** Folder for the decompressed copy of a .zst input; NULL: $TMPDIR, else /tmp. */
    const char *temp_dir;
    /** Largest decompressed size accepted from a zstd input; 0: 1 TiB. */
    uint64_t max_decompressed_bytes;
} sgfp4_model_open_options;

/** Sets struct_size and every default. The only way to initialise the struct. */
SGFP4_API void sgfp4_model_open_options_init(sgfp4_model_open_options *options);

/**
 * Opens the safetensors file at `path` (plain, or a zstd stream: detected by its magic, not
 * its name). Checks: the 8-byte header length (non-zero, within the limit and the file);
 * the header is one strict JSON object (jansson, duplicate keys rejected, valid UTF-8);
 * every entry has exactly dtype / shape / data_offsets; known dtypes; shapes of
 * non-negative integers whose byte size (shape x dtype, overflow-checked) equals
 * end - begin; offsets contiguous from 0 with no hole or overlap; the file ends exactly at
 * the last tensor; `__metadata__` maps strings to strings; and, if `__metadata__["sgfp4"]`
 * exists, the manifest (format, version, each entry's fields, that its tensor exists as
 * U8 [nbytes], that shape and original shape agree). Container bytes are NOT validated
 * here: sgfp4_model_tensor_verify() does that.
 */
SGFP4_API sgfp4_status sgfp4_model_open(const char *path, sgfp4_model **out,
                                        const sgfp4_model_open_options *options,
                                        sgfp4_diag *diag);

/** Like sgfp4_model_open() over caller bytes, which must outlive the model (no zstd). */
SGFP4_API sgfp4_status sgfp4_model_open_memory(const void *data, size_t size, sgfp4_model **out,
                                               const sgfp4_model_open_options *options,
                                               sgfp4_diag *diag);

/** Unmaps and frees. Accepts NULL. */
SGFP4_API void sgfp4_model_close(sgfp4_model *model);

/** Number of tensors; they are indexed in file (data offset) order. */
SGFP4_API size_t sgfp4_model_tensor_count(const sgfp4_model *model);
/** Tensor `index` (NULL if out of range). */
SGFP4_API const sgfp4_model_tensor *sgfp4_model_tensor_at(const sgfp4_model *model, size_t index);
/** The tensor called `name`, or NULL. */
SGFP4_API const sgfp4_model_tensor *sgfp4_model_tensor_find(const sgfp4_model *model,
                                                            const char *name);

/** Number of `__metadata__` entries (in header order). */
SGFP4_API size_t sgfp4_model_metadata_count(const sgfp4_model *model);
/** Entry `index` of `__metadata__`; returns 0, or -1 if out of range. */
SGFP4_API int sgfp4_model_metadata_at(const sgfp4_model *model, size_t index, const char **key,
                                      const char **value);
/** The value of `__metadata__[key]`, or NULL. */
SGFP4_API const char *sgfp4_model_metadata_get(const sgfp4_model *model, const char *key);

/** 1 if the file carries an sgfp4 manifest (a quantized model), else 0. */
SGFP4_API int sgfp4_model_is_quantized(const sgfp4_model *model);
/** Byte offset where the data section starts (8 + header length). */
SGFP4_API uint64_t sgfp4_model_data_offset(const sgfp4_model *model);
/** Size of the (decompressed) file in bytes. */
SGFP4_API uint64_t sgfp4_model_file_bytes(const sgfp4_model *model);
/** 1 if the input was zstd-compressed. */
SGFP4_API int sgfp4_model_was_compressed(const sgfp4_model *model);

/**
 * Tells the kernel the tensor's mapped pages are no longer needed (they are re-read from the
 * file if touched again). Streaming commands call it after each tensor so resident memory
 * stays bounded on models larger than RAM. No-op for sgfp4_model_open_memory models.
 * The tensor stays valid: its bytes are read back from the file when used again.
 */
SGFP4_API void sgfp4_model_tensor_evict(const sgfp4_model *model,
                                        const sgfp4_model_tensor *tensor);

/**
 * Opens the container of a quantized tensor (strict validation, sgfp4_tensor_open) with its
 * manifest shape and profile. SGFP4_ERR_ARGUMENT if the tensor is not quantized.
 */
SGFP4_API sgfp4_status sgfp4_model_tensor_open(const sgfp4_model *model,
                                               const sgfp4_model_tensor *tensor,
                                               sgfp4_tensor **out,
                                               const sgfp4_open_options *options,
                                               sgfp4_diag *diag);

/** Opens the container strictly and checks its sha256 against the manifest. */
SGFP4_API sgfp4_status sgfp4_model_tensor_verify(const sgfp4_model *model,
                                                 const sgfp4_model_tensor *tensor,
                                                 sgfp4_diag *diag);

/**
 * Converts a F32 / F16 / BF16 tensor (little-endian, as safetensors stores it) to float32
 * in dst (capacity in bytes; SGFP4_ERR_DST_TOO_SMALL below 4 * elements). If
 * `reject_nonfinite`, a NaN or infinity fails with SGFP4_ERR_ARGUMENT naming the element and
 * its byte offset.
 */
SGFP4_API sgfp4_status sgfp4_model_tensor_to_f32(const sgfp4_model_tensor *tensor,
                                                 int reject_nonfinite, float *dst,
                                                 size_t capacity, sgfp4_diag *diag);

/**
 * The 2-D view a tensor is quantized as (DECISIONS D6): rank 2 as is, rank 1 as one row,
 * rank 0 as 1x1, higher ranks as [product of the leading dimensions, last dimension].
 * SGFP4_ERR_SHAPE for a tensor without elements; SGFP4_ERR_ARGUMENT for NULL pointers.
 */
SGFP4_API sgfp4_status sgfp4_model_tensor_matrix(const sgfp4_model_tensor *tensor,
                                                 uint64_t *rows, uint64_t *cols);

/** What sgfp4_model_verify() found. */
typedef struct sgfp4_model_verify_result {
    size_t tensors;          /**< every tensor of the file */
    size_t quantized_v1;     /**< quantized tensors whose container is v1 */
    size_t quantized_v2;     /**< ... and v2 */
    /** 1 when the D6 alignment holds: the data section starts on a multiple of 64 bytes and
     *  every v2 container on a multiple of 16 in the file. */
    int d6_aligned;
} sgfp4_model_verify_result;

/**
 * Verifies a model: every quantized tensor with sgfp4_model_tensor_verify() (strict open,
 * sha256 against the manifest), releasing each tensor's pages afterwards; fills *result
 * (may be NULL). Stops at the first failure, which *diag describes. A model without a
 * manifest has no quantized tensor: its structure was checked by sgfp4_model_open().
 */
SGFP4_API sgfp4_status sgfp4_model_verify(const sgfp4_model *model,
                                          sgfp4_model_verify_result *result, sgfp4_diag *diag);

/* ---- sinks: where writers put bytes ---------------------------------------------------- */

/** A byte sink. write() returns SGFP4_OK or an error status (e.g. SGFP4_ERR_IO). */
typedef struct sgfp4_sink {
    sgfp4_status (*write)(void *user, const void *data, size_t size);
    void *user;
} sgfp4_sink;

/** A zstd compressing sink in front of another sink (streaming, bounded memory). */
typedef struct sgfp4_zstd_sink sgfp4_zstd_sink;
/** Begins a zstd frame written into `inner`; `level` 1..22 (0 = zstd's default);
 *  `threads` in all (0 or 1: compress on the writing thread; at most SGFP4_MAX_THREADS).
 *  Write through sgfp4_zstd_sink_get(), end with sgfp4_zstd_sink_finish(), then free. */
SGFP4_API sgfp4_status sgfp4_zstd_sink_begin(const sgfp4_sink *inner, int level,
                                             unsigned threads, sgfp4_zstd_sink **out);
/** The sink to write into. */
SGFP4_API sgfp4_sink sgfp4_zstd_sink_get(sgfp4_zstd_sink *zs);
/** Ends the frame and flushes everything into the inner sink. */
SGFP4_API sgfp4_status sgfp4_zstd_sink_finish(sgfp4_zstd_sink *zs);
/** Frees (without finishing). Accepts NULL. */
SGFP4_API void sgfp4_zstd_sink_free(sgfp4_zstd_sink *zs);

/* ---- writing a safetensors file ------------------------------------------------------- */

/** One tensor of a file to write: its data follows in the order of the list. */
typedef struct sgfp4_st_entry {
    const char *name;
    sgfp4_st_dtype dtype;
    size_t rank;
    const uint64_t *shape;
} sgfp4_st_entry;

typedef struct sgfp4_st_writer sgfp4_st_writer;

/**
 * Writes the header of a safetensors file into `sink`: the entries get contiguous offsets in
 * list order; `__metadata__` holds the `meta_count` key/value pairs (omitted if none); the
 * JSON is padded with spaces so the data section starts on a multiple of 64 bytes. Then the
 * caller streams exactly the data bytes, in order, with sgfp4_st_writer_write(), and ends
 * with sgfp4_st_writer_finish(), which fails if the byte count differs.
 */
SGFP4_API sgfp4_status sgfp4_st_writer_begin(const sgfp4_st_entry *entries, size_t count,
                                             const char *const *meta_keys,
                                             const char *const *meta_values, size_t meta_count,
                                             const sgfp4_sink *sink, sgfp4_st_writer **out,
                                             sgfp4_diag *diag);
SGFP4_API sgfp4_status sgfp4_st_writer_write(sgfp4_st_writer *w, const void *data, size_t size);
SGFP4_API sgfp4_status sgfp4_st_writer_finish(sgfp4_st_writer *w, sgfp4_diag *diag);
/** Frees. Accepts NULL. */
SGFP4_API void sgfp4_st_writer_free(sgfp4_st_writer *w);

/* ---- policy: which tensors to quantize, and how --------------------------------------- */

typedef struct sgfp4_model_policy sgfp4_model_policy;

/**
 * The default policy (docs/model.md): F32/F16/BF16 tensors of rank 2 with at least 1024
 * elements are quantized with the default encoder options; everything else (norms, biases,
 * 1-D and tiny tensors, integer tensors) passes through. Embeddings are quantized unless
 * sgfp4_model_policy_set_embeddings(p, 0).
 */
SGFP4_API sgfp4_status sgfp4_model_policy_create(sgfp4_model_policy **out);
/** Parses a JSON policy document (docs/model.md, "Policy files"). Unknown keys are errors. */
SGFP4_API sgfp4_status sgfp4_model_policy_parse(const char *json, size_t size,
                                                sgfp4_model_policy **out, sgfp4_diag *diag);
/** The default encoder options rules start from; change fields to override (e.g. --bpw). */
SGFP4_API sgfp4_encode_options *sgfp4_model_policy_defaults(sgfp4_model_policy *policy);
/** Whether tensors that look like embeddings (names matching *embed*, *wte*, *wpe*,
 *  lm_head*, output.weight) are quantized by default (1) or passed through (0). */
SGFP4_API void sgfp4_model_policy_set_embeddings(sgfp4_model_policy *policy, int quantize);
SGFP4_API void sgfp4_model_policy_free(sgfp4_model_policy *policy);

/** What the policy decided for one tensor. */
typedef struct sgfp4_model_decision {
    int quantize;                  /**< 1: quantize with `options`; 0: pass through */
    uint64_t rows, cols;           /**< the 2-D view: [prod(leading dims), last dim] */
    sgfp4_encode_options options;
    char reason[96];               /**< why (rule matched, or the default's reason) */
} sgfp4_model_decision;

/** Decides for `tensor`. */
SGFP4_API void sgfp4_model_policy_decide(const sgfp4_model_policy *policy,
                                         const sgfp4_model_tensor *tensor,
                                         sgfp4_model_decision *decision);

/* ---- quantizing and restoring whole models --------------------------------------------- */

/** Progress of a streaming model job, reported after each tensor (and at the start). */
typedef struct sgfp4_model_progress {
    size_t tensors_done, tensors_total;
    uint64_t bytes_done, bytes_total;   /**< source bytes processed / all source bytes */
    const char *current;                /**< name of the tensor just finished, or NULL */
} sgfp4_model_progress;

/** Options of the model writers; NULL means the defaults. */
typedef struct sgfp4_model_write_options {
    size_t struct_size;    /**< set by sgfp4_model_write_options_init() */
    /** Folder for the encoder's spool file; NULL: $TMPDIR, else /tmp. */
    const char *temp_dir;
    /** Called after each tensor; may be NULL. */
    void (*progress)(void *user, const sgfp4_model_progress *progress);
    void *progress_user;
    /** Decode only: output dtype of quantized tensors; NULL = each tensor's source dtype. */
    const sgfp4_dtype *decode_dtype;
    /** Decode only: decode options (threads, backend); NULL = the defaults. */
    const sgfp4_decode_options *decode;
} sgfp4_model_write_options;

/** Sets struct_size and every default. The only way to initialise the struct. */
SGFP4_API void sgfp4_model_write_options_init(sgfp4_model_write_options *options);

/**
 * Quantizes `source` into a D6 quantized model written to `sink`: each tensor the policy
 * quantizes is converted to float32, encoded (sgfp4_encode), validated by opening it, hashed,
 * and spooled to an unlinked temporary file; then the header (with the manifest) is written,
 * then the v2 containers, the v1 containers, and the pass-through tensors copied from the
 * mapping. Memory: one tensor's float32 copy plus its container at a time.
 * A source that is already quantized is refused (SGFP4_ERR_ARGUMENT).
 */
SGFP4_API sgfp4_status sgfp4_model_encode(const sgfp4_model *source,
                                          const sgfp4_model_policy *policy,
                                          const sgfp4_sink *sink,
                                          const sgfp4_model_write_options *options,
                                          sgfp4_diag *diag);

/**
 * Restores an ordinary safetensors model from a quantized one: every quantized tensor is
 * validated, hash-checked, decoded and written with its original shape and (by default)
 * source dtype; pass-through tensors are copied unchanged; `__metadata__` keeps every key but
 * `sgfp4`. Tensors are written in name order. One tensor in memory at a time.
 */
SGFP4_API sgfp4_status sgfp4_model_decode(const sgfp4_model *quantized, const sgfp4_sink *sink,
                                          const sgfp4_model_write_options *options,
                                          sgfp4_diag *diag);

#ifdef __cplusplus
}
#endif

#endif /* SGFP4_MODEL_H */
