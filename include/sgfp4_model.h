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
 *
 * The model component: its functions are in libsgfp4_model (CMake sgfp4::sgfp4_model,
 * pkg-config sgfp4-model), which links OpenSSL, jansson and zstd on top of libsgfp4; a
 * program that only decodes links libsgfp4 alone (docs/api.md, "Libraries").
 */
#ifndef SGFP4_MODEL_H
#define SGFP4_MODEL_H

#include "sgfp4.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the hashes an execution contract pins (spec §22.10) ---------------------------- */

/** sha256 of the container bytes, as 64 lowercase hex digits and a NUL; "" for a NULL
 *  tensor. */
SGFP4_API void sgfp4_tensor_container_sha256(const sgfp4_tensor *tensor, char hex[65]);

/** sha256 of the decoded tensor: the rows x cols float32 values, row-major, as sgfp4_decode()
 *  writes them with row_stride 0; decoded in bands of rows (bounded memory) with `options`
 *  (NULL: the defaults), on which the result does not depend. */
SGFP4_API sgfp4_status sgfp4_tensor_decoded_sha256(const sgfp4_tensor *tensor, char hex[65],
                                                   const sgfp4_decode_options *options);

/* ---- safetensors dtypes -------------------------------------------------------------- */

/**
 * The dtypes of the safetensors format (every one its specification lists). Values are
 * stable: new dtypes are appended. F32, F16, BF16, F8_E4M3 and F8_E5M2 convert exactly to
 * float32 and can be quantized; every dtype passes through a model unchanged.
 */
typedef enum sgfp4_st_dtype {
    SGFP4_ST_BOOL = 0,
    SGFP4_ST_U8,
    SGFP4_ST_I8,
    SGFP4_ST_F8_E4M3,      /**< OCP FP8 E4M3FN: bias 7, no infinities, largest 448 */
    SGFP4_ST_F8_E5M2,      /**< OCP FP8 E5M2: the top byte of an IEEE binary16 */
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
    SGFP4_ST_F8_E8M0,      /**< OCP MX scale: a biased power-of-two exponent */
    SGFP4_ST_F8_E4M3FNUZ,  /**< FP8 E4M3 FNUZ (bias 8, 0x80 is NaN) */
    SGFP4_ST_F8_E5M2FNUZ,  /**< FP8 E5M2 FNUZ (bias 16, 0x80 is NaN) */
    SGFP4_ST_F4,           /**< OCP MX FP4 (E2M1): 4 bits, two elements per byte */
    SGFP4_ST_F6_E2M3,      /**< OCP MX FP6: 6 bits, four elements per three bytes */
    SGFP4_ST_F6_E3M2,      /**< OCP MX FP6: 6 bits */
    SGFP4_ST_C64,          /**< complex: two F32 parts, 8 bytes */
    SGFP4_ST_DTYPE_COUNT
} sgfp4_st_dtype;

/** The dtype's name as written in a header ("F32"), or NULL if out of range. */
SGFP4_API const char *sgfp4_st_dtype_name(sgfp4_st_dtype dtype);
/** Bits per element: 4 (F4), 6 (F6_*), 8 ... 64; 0 if out of range. */
SGFP4_API size_t sgfp4_st_dtype_bits(sgfp4_st_dtype dtype);
/** Bytes per element; 0 for the sub-byte dtypes (F4, F6_*: use sgfp4_st_dtype_bytes) and
 *  out of range. */
SGFP4_API size_t sgfp4_st_dtype_size(sgfp4_st_dtype dtype);
/**
 * The byte size of `elements` elements: elements x bits / 8. As the safetensors format
 * requires, a tensor of a sub-byte dtype must fill whole bytes (F4: an even element count;
 * F6: a multiple of 4). Sets *bytes and returns SGFP4_OK; SGFP4_ERR_SHAPE if the size is not
 * a whole number of bytes, SGFP4_ERR_LIMIT if it overflows 64 bits, SGFP4_ERR_ARGUMENT for a
 * dtype out of range or NULL bytes (*bytes is then untouched).
 */
SGFP4_API sgfp4_status sgfp4_st_dtype_bytes(sgfp4_st_dtype dtype, uint64_t elements,
                                            uint64_t *bytes);
/** Parses a dtype name (exact, case-sensitive): SGFP4_OK, SGFP4_ERR_MODEL_DTYPE if unknown,
 *  SGFP4_ERR_ARGUMENT for NULL pointers. */
SGFP4_API sgfp4_status sgfp4_st_dtype_parse(const char *name, sgfp4_st_dtype *dtype);
/** Whether the dtype's values convert exactly to float32 and can therefore be quantized
 *  (F32, F16, BF16, F8_E4M3, F8_E5M2). */
SGFP4_API bool sgfp4_st_dtype_is_quantizable(sgfp4_st_dtype dtype);

/** Largest rank a header may declare (a limit of this reader, far above any real model). */
#define SGFP4_MODEL_MAX_RANK 16

/* ---- reading ------------------------------------------------------------------------- */

/** What the manifest says about a quantized tensor (D6). */
typedef struct sgfp4_model_quant {
    sgfp4_profile profile;           /**< V1 or V2 */
    uint64_t rows, cols;             /**< logical (O, I) of the container */
    size_t original_rank;
    const uint64_t *original_shape;  /**< the source tensor's shape */
    sgfp4_st_dtype source_dtype;     /**< F32, F16, BF16, F8_E4M3 or F8_E5M2 */
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
    uint64_t offset;                 /**< absolute byte offset of the data in its file */
    uint64_t nbytes;
    const uint8_t *data;             /**< the bytes in the mapping */
    const sgfp4_model_quant *quant;  /**< non-NULL when the manifest lists this tensor */
    size_t shard;                    /**< the file holding it: 0, or its shard in a set */
} sgfp4_model_tensor;

typedef struct sgfp4_model sgfp4_model;

/** Default of sgfp4_model_open_options.max_tensors: far above real checkpoints (a few
 *  thousand tensors; the largest mixture-of-experts models about 100,000 over all shards). */
#define SGFP4_MODEL_DEFAULT_MAX_TENSORS 1000000u

/** Options of the open calls; NULL means the defaults. For a sharded set (opened by its
 *  index) the header, tensor and decompressed-size bounds count over the whole set, and the
 *  free-space share is taken once, before the first shard. */
typedef struct sgfp4_model_open_options {
    size_t struct_size;    /**< set by sgfp4_model_open_options_init() */
    sgfp4_limits limits;   /**< max_header_bytes caps the JSON header (default 100 MB) */
    /** Folder for the decompressed copy of a .zst input; NULL: $TMPDIR, else /tmp. */
    const char *temp_dir;
    /** Largest decompressed size accepted from a zstd input; 0: 1 TiB. */
    uint64_t max_decompressed_bytes;
    /** Sets: 1 accepts an index whose metadata.total_size differs from the shards' data
     *  bytes (some writers count differently); 0 (default): that is SGFP4_ERR_MODEL_INDEX. */
    int ignore_index_total_size;
    /** Most tensors the header may list (SGFP4_ERR_LIMIT above, refused before the JSON is
     *  parsed); 0: SGFP4_MODEL_DEFAULT_MAX_TENSORS. */
    uint64_t max_tensors;
    /** A zstd input may decompress to at most this many times its compressed size (but
     *  always to SGFP4_MODEL_ZSTD_RATIO_FLOOR); 0: SGFP4_MODEL_DEFAULT_ZSTD_RATIO. */
    uint64_t max_decompression_ratio;
    /** The decompressed copy may take at most this share (percent, 1..100) of the space
     *  free in the temp folder when decompression starts; 0: 90. */
    unsigned max_temp_space_percent;
    /** 1: read the file (a set: every shard; a .zst input: its decompressed copy) into
     *  memory the model owns instead of mapping it (sgfp4_model_open_memory(): copy the
     *  caller's bytes). It costs the file's size in private memory for as long as the model
     *  is open, and the time of reading it whole at open; in exchange nothing another
     *  program does to the file afterwards (rewriting it, truncating it) reaches the model.
     *  0 (the default): the file is mapped (see docs/model.md, "Mapped files"). 64 bits
     *  wide, so that it starts where the previous layout of the struct ended. */
    uint64_t copy;
} sgfp4_model_open_options;

/** zstd inputs: real weights compress by 1.1-2x; a bomb by up to ~32,000x. Whichever bound
 *  (max_decompressed_bytes, the ratio, the free space) is smallest applies: SGFP4_ERR_LIMIT
 *  as soon as the output passes it (or before anything is written, when the frame declares
 *  its size), and at most that much reaches the disk. */
#define SGFP4_MODEL_DEFAULT_ZSTD_RATIO 100u
/** Below this many decompressed bytes the ratio is not checked (a small file may compress
 *  as well as it likes). */
#define SGFP4_MODEL_ZSTD_RATIO_FLOOR ((uint64_t)64 << 20)
#define SGFP4_MODEL_DEFAULT_TEMP_SPACE_PERCENT 90u
#define SGFP4_MODEL_DEFAULT_MAX_DECOMPRESSED ((uint64_t)1 << 40)

/** Defaults for the first `size` bytes (sizeof the caller's struct), nothing written past
 *  them; sgfp4_model_open_options_init() calls it (sgfp4.h, "Options structs"). */
SGFP4_API sgfp4_status sgfp4_model_open_options_init_sized(sgfp4_model_open_options *options,
                                                           size_t size);

/** Sets struct_size and every default. The only way to initialise the struct. */
static inline sgfp4_status sgfp4_model_open_options_init(sgfp4_model_open_options *options)
{
    return sgfp4_model_open_options_init_sized(options, sizeof *options);
}

/**
 * Opens the safetensors file at `path` (plain, or a zstd stream: detected by its magic, not
 * its name), or a sharded set from its index (a `model.safetensors.index.json`, recognised
 * by its content: a JSON object, where a safetensors file starts with its header length;
 * see "Sharded sets" below). Checks: the 8-byte header length (non-zero, within the limit
 * and the file); the header is one strict JSON object (jansson, duplicate keys rejected, valid UTF-8);
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

/** Like sgfp4_model_open() over caller bytes, which must outlive the model (no zstd, no
 *  index: an index names files). */
SGFP4_API sgfp4_status sgfp4_model_open_memory(const void *data, size_t size, sgfp4_model **out,
                                               const sgfp4_model_open_options *options,
                                               sgfp4_diag *diag);

/** Unmaps and frees. Accepts NULL. */
SGFP4_API void sgfp4_model_close(sgfp4_model *model);

/** Number of tensors; they are indexed in file (data offset) order (a set: shard by shard). */
SGFP4_API size_t sgfp4_model_tensor_count(const sgfp4_model *model);
/** Tensor `index` (NULL if out of range). */
SGFP4_API const sgfp4_model_tensor *sgfp4_model_tensor_at(const sgfp4_model *model, size_t index);
/** The tensor called `name`, or NULL. */
SGFP4_API const sgfp4_model_tensor *sgfp4_model_tensor_find(const sgfp4_model *model,
                                                            const char *name);

/** Number of `__metadata__` entries (in header order; a set: the shards' keys, each once, in
 *  shard order, with the first shard's value where shards disagree). */
SGFP4_API size_t sgfp4_model_metadata_count(const sgfp4_model *model);
/** Entry `index` of `__metadata__` (key and value may each be NULL): SGFP4_OK, or
 *  SGFP4_ERR_ARGUMENT for a NULL model or an index out of range. */
SGFP4_API sgfp4_status sgfp4_model_metadata_at(const sgfp4_model *model, size_t index,
                                               const char **key, const char **value);
/** The value of `__metadata__[key]`, or NULL. */
SGFP4_API const char *sgfp4_model_metadata_get(const sgfp4_model *model, const char *key);

/** Whether the file carries an sgfp4 manifest (a quantized model; a set: every shard). */
SGFP4_API bool sgfp4_model_is_quantized(const sgfp4_model *model);
/** Byte offset where the data section starts (8 + header length); 0 for a set. */
SGFP4_API uint64_t sgfp4_model_data_offset(const sgfp4_model *model);
/** Size of the (decompressed) file in bytes; a set: all its shards. */
SGFP4_API uint64_t sgfp4_model_file_bytes(const sgfp4_model *model);
/** Whether the input was zstd-compressed (a set: any shard). */
SGFP4_API bool sgfp4_model_was_compressed(const sgfp4_model *model);

/*
 * Sharded sets. A Hugging Face checkpoint above a few GB is a set of safetensors files
 * (`model-00001-of-00003.safetensors`, ...) and an index, `model.safetensors.index.json`:
 * `{"metadata": {"total_size": BYTES, ...}, "weight_map": {TENSOR: FILE, ...}}`.
 * sgfp4_model_open() on the index opens every shard the weight_map names (plain file names
 * in the index's folder, in name order), each mapped and checked like a single file, and
 * checks the index against them: every tensor in exactly one shard, the weight_map naming
 * each tensor's shard and nothing else, total_size equal to the shards' data bytes, every
 * shard quantized or none. The result is one model, the union of its shards: every call
 * above works on it (tensor lists, lookups, verify, decode, encode to one file), and the
 * shards stay reachable for writers that keep the set's layout. A single file is a set of
 * one shard, itself.
 */

/** Whether the model was opened from an index. */
SGFP4_API bool sgfp4_model_is_set(const sgfp4_model *model);
/** Number of files: the shards of a set, 1 for a single file (0 for NULL). */
SGFP4_API size_t sgfp4_model_shard_count(const sgfp4_model *model);
/** Shard `index` as a model of its own (a single file: index 0 is the model itself); owned
 *  by `model`. NULL if out of range. */
SGFP4_API const sgfp4_model *sgfp4_model_shard(const sgfp4_model *model, size_t index);
/** The shard's file name as the index writes it (NULL for a single file or out of range). */
SGFP4_API const char *sgfp4_model_shard_name(const sgfp4_model *model, size_t index);

/**
 * Tells the kernel the tensor's mapped pages are no longer needed (they are re-read from the
 * file if touched again). Streaming commands call it after each tensor so resident memory
 * stays bounded on models larger than RAM. No-op for sgfp4_model_open_memory models and for
 * models opened with sgfp4_model_open_options.copy (their bytes are not mapped).
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
 * Converts a F32 / F16 / BF16 / F8_E4M3 / F8_E5M2 tensor (little-endian, as safetensors
 * stores it) to float32 in dst, exactly (capacity in bytes; SGFP4_ERR_DST_TOO_SMALL below
 * 4 * elements). If `reject_nonfinite`, a NaN or infinity fails with SGFP4_ERR_ARGUMENT
 * naming the element and its byte offset.
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

/** What sgfp4_model_verify() found; a result struct (sgfp4.h, "Result structs"). */
typedef struct sgfp4_model_verify_result {
    size_t struct_size;      /**< set by sgfp4_model_verify_result_init() */
    size_t tensors;          /**< every tensor of the file */
    size_t quantized_v1;     /**< quantized tensors whose container is v1 */
    size_t quantized_v2;     /**< ... and v2 */
    /** 1 when the D6 alignment holds: the data section starts on a multiple of 64 bytes and
     *  every v2 container on a multiple of 16 in the file. */
    int d6_aligned;
} sgfp4_model_verify_result;

/** Zeroes *result and sets struct_size. The only way to initialise the struct. */
static inline void sgfp4_model_verify_result_init(sgfp4_model_verify_result *result)
{
    sgfp4_result_init_(result, sizeof *result);
}

/**
 * Verifies a model: every quantized tensor with sgfp4_model_tensor_verify() (strict open,
 * sha256 against the manifest), releasing each tensor's pages afterwards; fills *result
 * (may be NULL; initialised by sgfp4_model_verify_result_init(): a struct_size this library
 * does not know is SGFP4_ERR_ARGUMENT before any work, nothing written). Stops at the first
 * failure, which *diag describes. A model without a
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
 * The default policy (docs/model.md): F32/F16/BF16/F8_E4M3/F8_E5M2 tensors of rank 2 with
 * at least 1024 elements are quantized with the default encoder options; everything else
 * (norms, biases, 1-D and tiny tensors, mostly padded matrices, quantization scales such as
 * `weight_scale_inv`, every other dtype) passes through. Embeddings are quantized unless
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

/** How a whole-model encode spreads its bits over the tensors (docs/model.md, "Rates by
 *  sensitivity"). */
typedef enum sgfp4_model_rates {
    /** Every tensor at the bits per weight its options ask for. */
    SGFP4_RATES_UNIFORM = 0,
    /** The tensors quantized at the policy's default rate (v2, rate policy, no rule setting
     *  their bpw) that the importance file has both factors for (NAME, NAME:rows) share
     *  their total bytes so that the KL divergence the errors are predicted to cause (the
     *  Fisher factors times each tensor's rate-distortion curve) is smallest: each gets its
     *  own target, their total stays within what their own targets allow. An encode with
     *  it needs an importance file (sgfp4_model_write_options.importance). */
    SGFP4_RATES_SENSITIVITY = 1,
    /** Rates by sensitivity where the encode has an importance file, else uniform (the
     *  default): calibration data brings the bits' spread with it. */
    SGFP4_RATES_AUTO = 2
} sgfp4_model_rates;

/** Sets how an encode with this policy spreads its bits (default SGFP4_RATES_AUTO; a
 *  policy file's "rates"). SGFP4_ERR_ARGUMENT for a NULL policy or an unknown value. */
SGFP4_API sgfp4_status sgfp4_model_policy_set_rates(sgfp4_model_policy *policy,
                                                    sgfp4_model_rates rates);
SGFP4_API void sgfp4_model_policy_free(sgfp4_model_policy *policy);

/** What the policy decided for one tensor: whether to quantize, and the encoder settings a
 *  policy sets (its defaults, then the matching rule's); sgfp4_model_decision_options()
 *  makes the encode options of them. It holds values only (no options struct, no pointers),
 *  so it does not change when sgfp4_encode_options grows. A result struct (sgfp4.h,
 *  "Result structs"). */
typedef struct sgfp4_model_decision {
    size_t struct_size;            /**< set by sgfp4_model_decision_init() */
    bool quantize;                 /**< true: quantize with these settings; false: pass through */
    uint64_t rows, cols;           /**< the 2-D view: [prod(leading dims), last dim] */
    sgfp4_profile profile;         /**< V1 or V2 (a policy's AUTO resolved) */
    sgfp4_policy policy;           /**< as sgfp4_encode_options.policy */
    double target_bpw;             /**< as sgfp4_encode_options.target_bpw */
    double threshold;              /**< as sgfp4_encode_options.threshold */
    double delta;                  /**< as sgfp4_encode_options.delta */
    sgfp4_fit fit;                 /**< as sgfp4_encode_options.fit */
    sgfp4_error_metric metric;     /**< as sgfp4_encode_options.metric */
    char reason[96];               /**< why (rule matched, or the default's reason) */
    /** Empty, or why the chosen options may hurt the model: a v2 rate below 4.125 bits per
     *  weight, where part of the weights must be ternary (docs/encoder.md, "Low rates"). */
    char warning[160];
} sgfp4_model_decision;

/** Zeroes *decision and sets struct_size. The only way to initialise the struct. */
static inline void sgfp4_model_decision_init(sgfp4_model_decision *decision)
{
    sgfp4_result_init_(decision, sizeof *decision);
}

/** Decides for `tensor` into *decision (initialised by sgfp4_model_decision_init()).
 *  Errors: SGFP4_ERR_ARGUMENT for a NULL decision or a struct_size this library does not
 *  know (nothing written), and for a NULL policy or tensor (the decision then says so in
 *  `reason`, with `quantize` false). */
SGFP4_API sgfp4_status sgfp4_model_policy_decide(const sgfp4_model_policy *policy,
                                                 const sgfp4_model_tensor *tensor,
                                                 sgfp4_model_decision *decision);

/** Sets *options (initialised by the caller with sgfp4_encode_options_init(): only its
 *  struct_size bytes are written) to the encode options of a decision: the policy's defaults
 *  (sgfp4_model_policy_defaults(): threads, allocator, ...; the encode options' defaults for
 *  a NULL policy) with the decision's encoder settings. Errors: SGFP4_ERR_ARGUMENT for a NULL
 *  decision or options, or either not initialised (a struct_size this library does not
 *  know); nothing is written then. */
SGFP4_API sgfp4_status sgfp4_model_decision_options(const sgfp4_model_policy *policy,
                                                   const sgfp4_model_decision *decision,
                                                   sgfp4_encode_options *options);

/* ---- quantizing and restoring whole models --------------------------------------------- */

/** What a whole-model job did, in total: the closing summary of encode and decode. A
 *  result struct (sgfp4.h, "Result structs"). */
typedef struct sgfp4_model_summary {
    size_t struct_size;            /**< set by sgfp4_model_summary_init() */
    size_t tensors;                /**< tensors written */
    size_t quantized;              /**< encode: quantized; decode: restored from containers */
    uint64_t bytes_in;             /**< tensor data bytes of the source */
    uint64_t bytes_out;            /**< tensor data bytes written */
    uint64_t file_bytes_out;       /**< every byte given to the sinks: headers, data, index */
    uint64_t quantized_weights;    /**< weights (elements) of the quantized tensors */
    uint64_t quantized_bytes;      /**< their container bytes */
    /** 8 * quantized_bytes / quantized_weights: the bits per weight achieved over the
     *  quantized tensors (0 if there are none). */
    double bits_per_weight;
    /** Encode: quantized tensors whose container is larger than their rate target allows
     *  (the target cannot be met: it is below what the tensor's shape or the format can
     *  reach), and those more than 1% below it (above what the finest trees need). */
    size_t above_target, below_target;
    size_t files;                  /**< output files written (1, or a set's shards + index) */
    double seconds;                /**< wall-clock time of the whole job */
    /** Encode: quantized tensors encoded with their input's Hessian from the importance
     *  file (the calibrated encode, docs/encoder.md "Calibrated encoding"). */
    size_t calibrated;
    /** Encode: quantized tensors whose rate was chosen by sensitivity
     *  (SGFP4_RATES_SENSITIVITY). */
    size_t rated;
} sgfp4_model_summary;

/** Zeroes *summary and sets struct_size. The only way to initialise the struct. */
static inline void sgfp4_model_summary_init(sgfp4_model_summary *summary)
{
    sgfp4_result_init_(summary, sizeof *summary);
}

/** Progress of a streaming model job, reported after each tensor (and at the start). */
typedef struct sgfp4_model_progress {
    size_t tensors_done, tensors_total;
    uint64_t bytes_done, bytes_total;   /**< source bytes processed / all source bytes */
    const char *current;                /**< name of the tensor just finished, or NULL */
} sgfp4_model_progress;

/** What a model job did with one tensor, reported after it (sgfp4_model_write_options). */
typedef struct sgfp4_model_tensor_report {
    const sgfp4_model_tensor *tensor;   /**< the source tensor */
    size_t index, count;    /**< it is the job's tensor `index` (from 0) of `count` */
    int quantized;          /**< encode: it was quantized; decode: restored from a container */
    uint64_t bytes_in;      /**< its bytes in the source */
    uint64_t bytes_out;     /**< its bytes in the output */
    /** Encode, quantized: 8 * container bytes / weights; else 0. */
    double bits_per_weight;
    /** Encode, quantized with the rate policy (v2): its target bits per weight; else 0. */
    double target_bpw;
    /** Encode: 1 if the container is larger than the target allows (the target cannot be
     *  met), -1 if more than 1% below it, 0 if met or there is no target. */
    int target_miss;
    const char *reason;     /**< encode: why the policy quantized or passed it through */
    double seconds;         /**< time spent on it */
    /** Encode, quantized: its weights beyond the fp16 range, each encoded as +-65504
     *  (sgfp4_encode_report.clipped); else 0. */
    uint64_t clipped;
    /** Encode with an importance file (sgfp4_model_write_options.importance): which of its
     *  vectors weighted this tensor, 1 the columns' (NAME), 2 the rows' (NAME:rows), 3 both,
     *  0 none (the file has no vector for it); else 0. */
    int importance;
    /** Encode: 1 if it was encoded with its input's Hessian (the calibrated encode). */
    int calibrated;
    /** Encode: 1 if its rate (target_bpw) was chosen by sensitivity. */
    int rated;
} sgfp4_model_tensor_report;

/** Options of the model writers; NULL means the defaults. */
typedef struct sgfp4_model_write_options {
    size_t struct_size;    /**< set by sgfp4_model_write_options_init() */
    /** Folder for the encoder's spool file; NULL: $TMPDIR, else /tmp. */
    const char *temp_dir;
    /** Called after each tensor (and at the start); may be NULL. */
    void (*progress)(void *user, const sgfp4_model_progress *progress);
    void *progress_user;
    /** Decode only: output dtype of quantized tensors; NULL = each tensor's source dtype. */
    const sgfp4_dtype *decode_dtype;
    /** Decode only: decode options (threads, backend); NULL = the defaults. */
    const sgfp4_decode_options *decode;
    /** Called after each tensor with what was done to it (gets progress_user); may be NULL. */
    void (*tensor_report)(void *user, const sgfp4_model_tensor_report *report);
    /** If not NULL (initialised by sgfp4_model_summary_init()): the job's totals, filled
     *  when it succeeds (zeroed when it fails); a struct_size this library does not know
     *  fails the job (SGFP4_ERR_ARGUMENT) before any work, nothing written. */
    sgfp4_model_summary *summary;
    /** Decode only: most elements the quantized tensors may decode to, all together
     *  (SGFP4_ERR_LIMIT before anything is written); 0: SGFP4_MODEL_DECODE_ELEMENTS_PER_BYTE
     *  per byte of their containers. v2 records may overlap (DECISIONS D2), so a small file
     *  can describe a huge model. */
    uint64_t max_output_elements;
    /** Encode only: an importance file (docs/encoder.md, "The importance file"), opened
     *  with sgfp4_model_open(); NULL = none. For a quantized tensor NAME its float vector
     *  NAME (one value per column) is the column importance, NAME:rows (one per row of the
     *  2-D view) the row importance, and NAME:hessian ([cols, cols], or the tensor its
     *  metadata entry NAME:hessian names) the input Hessian of the calibrated encode
     *  (prepared on the encoder's threads; the last two prepared are kept, so matrices that
     *  share an input factor it once). Each may be absent; a present one of another shape
     *  is an error. */
    const sgfp4_model *importance;
    /** Cancellation of the job: NULL (the default), or called with cancel_user on the
     *  calling thread before each tensor, about every 10 ms while one is encoded or decoded
     *  (it becomes the encoder's hook: sgfp4_encode_options.cancel) and between the chunks
     *  written; a non-zero return stops the job: SGFP4_ERR_CANCELLED. The sink may have
     *  received part of the output: discard it, as after any failure. */
    int (*cancel)(void *user);
    void *cancel_user;
} sgfp4_model_write_options;

/** Defaults for the first `size` bytes (sizeof the caller's struct), nothing written past
 *  them; sgfp4_model_write_options_init() calls it (sgfp4.h, "Options structs"). */
SGFP4_API sgfp4_status sgfp4_model_write_options_init_sized(sgfp4_model_write_options *options,
                                                            size_t size);

/** Sets struct_size and every default. The only way to initialise the struct. */
static inline sgfp4_status sgfp4_model_write_options_init(sgfp4_model_write_options *options)
{
    return sgfp4_model_write_options_init_sized(options, sizeof *options);
}

/** Default decode limit, per container byte: an encoder writes at least ~2 bits per weight
 *  (4 elements a byte); 64 leaves a 16-fold margin. */
#define SGFP4_MODEL_DECODE_ELEMENTS_PER_BYTE 64u
/** Memory model decode holds per tensor: one band of decoded rows (or segments of a row that
 *  is wider than this), whatever the tensor's shape. */
#define SGFP4_MODEL_DECODE_BAND_BYTES ((size_t)16 << 20)

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
 * `sgfp4`. Tensors are written in name order. One tensor in memory at a time. A source
 * recorded as F8_E4M3 or F8_E5M2 is restored to it from the float32 decode by rounding to
 * nearest even, saturating at the format's largest finite value.
 *
 * Both sgfp4_model_encode() and sgfp4_model_decode() accept a set and write it as ONE
 * file; the shards' `__metadata__` are merged, and a key whose value differs between shards
 * fails with SGFP4_ERR_MODEL_INDEX (write a set instead, below).
 */
SGFP4_API sgfp4_status sgfp4_model_decode(const sgfp4_model *quantized, const sgfp4_sink *sink,
                                          const sgfp4_model_write_options *options,
                                          sgfp4_diag *diag);

/* ---- writing sharded sets ------------------------------------------------------------- */

/**
 * Where a set writer puts its files: the caller opens one sink per output file. Files are
 * written one after another: shard 0 .. count-1, then the index (file number count).
 * open() names the file and fills *sink; close() ends it, with `status` SGFP4_OK once
 * every byte was written or the job's error otherwise (discard the file then). close() may
 * check what was written and fail (filling diag); the job then stops with that status.
 * After a failure the caller discards every file of the job.
 */
typedef struct sgfp4_model_set_sinks {
    sgfp4_status (*open)(void *user, size_t file, const char *name, sgfp4_sink *sink,
                         sgfp4_diag *diag);
    sgfp4_status (*close)(void *user, size_t file, sgfp4_status status, sgfp4_diag *diag);
    void *user;
} sgfp4_model_set_sinks;

/**
 * Quantizes `source` (a set, or a single file: a set of one) into a sharded quantized set:
 * output shard k holds exactly the tensors of source shard k, as a D6 quantized model of
 * its own (its own manifest; `__metadata__` of that shard kept), named shard_names[k]
 * (sgfp4_model_shard_count(source) names: plain file names, no '/', distinct, and distinct
 * from index_name); then the index, named index_name, whose weight_map names each tensor's
 * output shard and whose metadata is the source index's (if any) with total_size set to the
 * output shards' data bytes. Memory as sgfp4_model_encode(), one shard at a time.
 */
SGFP4_API sgfp4_status sgfp4_model_encode_set(const sgfp4_model *source,
                                              const sgfp4_model_policy *policy,
                                              const char *const *shard_names,
                                              const char *index_name,
                                              const sgfp4_model_set_sinks *sinks,
                                              const sgfp4_model_write_options *options,
                                              sgfp4_diag *diag);

/** Restores a quantized set shard by shard (each as sgfp4_model_decode()), with an index,
 *  named as for sgfp4_model_encode_set(). */
SGFP4_API sgfp4_status sgfp4_model_decode_set(const sgfp4_model *quantized,
                                              const char *const *shard_names,
                                              const char *index_name,
                                              const sgfp4_model_set_sinks *sinks,
                                              const sgfp4_model_write_options *options,
                                              sgfp4_diag *diag);

/* ---- output files: the rules every writer follows ----------------------------------- */

/*
 * Where a program's output goes, decided by what the path names, the same way for every
 * writer of the project (the `sgfp4` tool, the Python binding, sgfp4-eval): docs/api.md,
 * "Output files", lists the rules and docs/cli.md, "Outputs", gives them in the tool's words.
 * In short: an output is never one of the job's inputs; an existing file is replaced only
 * with SGFP4_OUTPUT_FORCE; a regular file is written crash-safe (a temporary file beside it,
 * renamed onto it when complete); devices, FIFOs, sockets, standard output ("-") and
 * descriptors (/dev/fd/N, /proc/self/fd/N, /dev/stdout) are written in place; a symbolic
 * link is written through; and every refusal comes when the output is opened, before any
 * work. Outputs are objects of their opener: nothing is shared between two outputs but the
 * process's list of temporary files to remove on a fatal signal, which only
 * sgfp4_output_remove_on_signals() puts to use.
 */

/** The files a job reads, which its outputs must never be (by device and inode, so a link
 *  or another name of an input is the input too). Owned by the caller; one list may serve
 *  any number of outputs, read-only, from any thread. */
typedef struct sgfp4_inputs sgfp4_inputs;

/** An empty list. SGFP4_ERR_ARGUMENT for a NULL out, SGFP4_ERR_NOMEM. */
SGFP4_API sgfp4_status sgfp4_inputs_create(sgfp4_inputs **out);
/** Adds the file `path` names now (through links); "-" adds standard input when it is a
 *  regular file. A path that names no file adds nothing (SGFP4_OK): it cannot be replaced.
 *  Errors: SGFP4_ERR_ARGUMENT (NULL), SGFP4_ERR_NOMEM. */
SGFP4_API sgfp4_status sgfp4_inputs_add_path(sgfp4_inputs *inputs, const char *path);
/** Adds every file an opened model was read from: the file (a .zst one, not its
 *  decompressed copy), or a set's index and every shard. A model opened from memory has no
 *  file and adds nothing. Errors: SGFP4_ERR_ARGUMENT (NULL), SGFP4_ERR_NOMEM. */
SGFP4_API sgfp4_status sgfp4_inputs_add_model(sgfp4_inputs *inputs, const sgfp4_model *model);
/** Frees. Accepts NULL. */
SGFP4_API void sgfp4_inputs_free(sgfp4_inputs *inputs);

/** sgfp4_output_options.flags: an existing file is replaced (through a temporary file), and
 *  binary output may go to a terminal. Never lets an output be an input. */
#define SGFP4_OUTPUT_FORCE 1u

/** Options of sgfp4_output_open() and sgfp4_model_output_open(); NULL means the defaults
 *  (no flag, no inputs). */
typedef struct sgfp4_output_options {
    size_t struct_size;          /**< set by sgfp4_output_options_init() */
    unsigned flags;              /**< SGFP4_OUTPUT_FORCE or 0 */
    /** The job's inputs: an output that is one of them is refused; NULL: none. */
    const sgfp4_inputs *inputs;
    /** How the caller's user asks for SGFP4_OUTPUT_FORCE ("-f", "force=True"), named by the
     *  messages of the refusals it would lift; NULL: not named. */
    const char *force_name;
    /** Model outputs: the zstd level of a file whose name ends in ".zst" (1..22; 0: zstd's
     *  default, 3) and the threads that compress it (0 or 1: the writing thread). */
    int zstd_level;
    unsigned zstd_threads;
} sgfp4_output_options;

/** Defaults for the first `size` bytes (sizeof the caller's struct), nothing written past
 *  them; sgfp4_output_options_init() calls it (sgfp4.h, "Options structs"). */
SGFP4_API sgfp4_status sgfp4_output_options_init_sized(sgfp4_output_options *options,
                                                       size_t size);

/** Sets struct_size and every default. The only way to initialise the struct. */
static inline sgfp4_status sgfp4_output_options_init(sgfp4_output_options *options)
{
    return sgfp4_output_options_init_sized(options, sizeof *options);
}

/** One output file, open for writing. */
typedef struct sgfp4_output sgfp4_output;

/**
 * Opens the output `path` and makes every check before the caller does any work. Refused
 * with SGFP4_ERR_OUTPUT_REFUSED (the message names the path and why): the same file as one
 * of options->inputs (even with SGFP4_OUTPUT_FORCE), a folder (a path ending in '/' too), a
 * missing folder, a symbolic link to a missing file, an existing regular file or a terminal
 * without SGFP4_OUTPUT_FORCE. A regular file (new, or replaced) is written into a temporary
 * file `.NAME.sgfp4-tmp-XXXXXX` in its folder (NAME cut at a character boundary so the name
 * fits NAME_MAX), held under an exclusive flock() while it lives; leftovers of that pattern
 * from dead writers (regular, one link, this user's, unlocked) are removed first. A symbolic
 * link is written through: the file it points to is the output, in its own folder.
 * Standard output ("-"), devices, FIFOs, sockets and descriptors are written in place.
 * SGFP4_ERR_IO when the temporary file cannot be created (or when 4096 temporary files are
 * open in the process already). Thread-safe (distinct outputs).
 */
SGFP4_API sgfp4_status sgfp4_output_open(const char *path, const sgfp4_output_options *options,
                                         sgfp4_output **out, sgfp4_diag *diag);
/** Writes bytes (buffered). A failure is kept: every later call fails, and so does the
 *  commit. SGFP4_ERR_IO, or SGFP4_ERR_ARGUMENT for a NULL or closed output. */
SGFP4_API sgfp4_status sgfp4_output_write(sgfp4_output *output, const void *data, size_t size);
/** A sink writing into the output (for the model and safetensors writers). */
SGFP4_API sgfp4_sink sgfp4_output_sink(sgfp4_output *output);
/** Flushes and syncs: the output is complete in its temporary file (or written, in place),
 *  which may be checked before the commit. */
SGFP4_API sgfp4_status sgfp4_output_finish(sgfp4_output *output, sgfp4_diag *diag);
/** The temporary file (complete after sgfp4_output_finish), or NULL for an output written in
 *  place or already committed. */
SGFP4_API const char *sgfp4_output_temp_path(const sgfp4_output *output);
/** How many leftovers of dead writers sgfp4_output_open() removed. */
SGFP4_API size_t sgfp4_output_leftovers_removed(const sgfp4_output *output);
/**
 * Finishes, then renames the temporary file onto the target (a new name with
 * renameat2(RENAME_NOREPLACE): one that appeared meanwhile is SGFP4_ERR_OUTPUT_REFUSED
 * unless forced) and syncs its folder; a replaced file keeps its permissions, and its owner
 * where allowed; a new one gets 0666 less the umask. On failure the temporary file is
 * removed and an earlier file of that name stays as it was.
 */
SGFP4_API sgfp4_status sgfp4_output_commit(sgfp4_output *output, sgfp4_diag *diag);
/** Commits `count` outputs in order (a set: its shards, then its index) with the fatal
 *  signals of sgfp4_output_remove_on_signals() held back on the calling thread meanwhile,
 *  so that an interrupt cannot fall between two renames; stops at the first failure. */
SGFP4_API sgfp4_status sgfp4_output_commit_all(sgfp4_output *const *outputs, size_t count,
                                               sgfp4_diag *diag);
/** Removes the temporary file of an output not committed (an earlier file of that name
 *  stays), closes and frees. Accepts NULL. */
SGFP4_API void sgfp4_output_close(sgfp4_output *output);
/** Whether `path` would be written in place (standard output, a descriptor, an existing
 *  device, FIFO or socket); false if through a temporary file (or refused). */
SGFP4_API bool sgfp4_output_path_is_direct(const char *path);

/**
 * Opt-in, once per process: on SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM, SIGXCPU and
 * SIGXFSZ, the temporary files of every output open in the process are removed, then the
 * process dies of the signal as it would have. Only signals whose action is the default
 * (to end the process) are taken: an ignored signal (nohup) or one the program handles
 * itself (Python's SIGINT, which raises KeyboardInterrupt) is left alone; a handler the
 * program installs later replaces this one. A child made by fork() removes none of its
 * parent's files. Without it, or on SIGKILL, a temporary file
 * can stay behind, never a partial file under the final name, and the next open of the
 * same output removes it. Thread-safe; later calls do nothing. SGFP4_ERR_IO if sigaction
 * fails.
 */
SGFP4_API sgfp4_status sgfp4_output_remove_on_signals(void);
/** Removes the temporary file of every output this process has open, now. For a program's
 *  own handler of a signal that ends it (the `sgfp4` tool's SIGBUS handler, for one): it is
 *  async-signal-safe, and afterwards no output of the process may be used again but closed
 *  at exit. */
SGFP4_API void sgfp4_output_remove_temporaries(void);

/* ---- model outputs: one file or a sharded set, checked before it replaces anything ---- */

/** What a model output receives (sgfp4_model_output_open). */
typedef enum sgfp4_model_output_kind {
    /** sgfp4_model_output_encode(): a quantized model of `source`. */
    SGFP4_MODEL_OUTPUT_ENCODE = 0,
    /** sgfp4_model_output_decode(): `source` (quantized) restored. */
    SGFP4_MODEL_OUTPUT_DECODE = 1,
    /** Bytes of one safetensors file the caller writes into sgfp4_model_output_sink(). */
    SGFP4_MODEL_OUTPUT_WRITE = 2
} sgfp4_model_output_kind;

typedef struct sgfp4_model_output sgfp4_model_output;

/**
 * Opens where a model goes, with the rules of sgfp4_output_open() for every file of it.
 * A path ending in ".index.json" is a sharded set: its files go in the index's folder, the
 * index last (the commit point). An ENCODE or DECODE set has one output shard per shard of
 * `source` (a single file: a set of one), named after it: encode NAME.safetensors ->
 * NAME.sgfp4.safetensors, decode the reverse, another name kept (with .sgfp4.safetensors
 * appended for encode), a .zst ending dropped: shards are written plain. A WRITE set has
 * one shard, the index's name without ".index.json" (".safetensors" added when it does not
 * end so). Any other path is one file, one zstd frame when it ends in ".zst". Every file is
 * opened (and so checked, and its temporary file made) here, before any work; `source` is
 * borrowed until the output is closed, and its own files (sgfp4_inputs_add_model) are
 * never an output, whatever options->inputs says. SGFP4_ERR_ARGUMENT: NULL path or out, no
 * source for ENCODE or DECODE, a source for WRITE.
 */
SGFP4_API sgfp4_status sgfp4_model_output_open(const char *path, const sgfp4_model *source,
                                               sgfp4_model_output_kind kind,
                                               const sgfp4_output_options *options,
                                               sgfp4_model_output **out, sgfp4_diag *diag);
/** Quantizes the source into the output (sgfp4_model_encode, or sgfp4_model_encode_set for
 *  a set); each file, once complete, is re-opened, verified (sgfp4_model_verify), checked
 *  for the D6 layout and every pass-through tensor compared with the source's, before the
 *  next is written (an output written in place cannot be re-read: not checked). Then
 *  commit. SGFP4_ERR_ARGUMENT for an output of another kind. */
SGFP4_API sgfp4_status sgfp4_model_output_encode(sgfp4_model_output *output,
                                                 const sgfp4_model_policy *policy,
                                                 const sgfp4_model_write_options *options,
                                                 sgfp4_diag *diag);
/** Restores the source into the output (sgfp4_model_decode, or sgfp4_model_decode_set);
 *  each file, once complete, is re-opened and must hold every tensor. Then commit. */
SGFP4_API sgfp4_status sgfp4_model_output_decode(sgfp4_model_output *output,
                                                 const sgfp4_model_write_options *options,
                                                 sgfp4_diag *diag);
/** WRITE: the sink that takes the safetensors file's bytes (sgfp4_st_writer_begin). */
SGFP4_API sgfp4_sink sgfp4_model_output_sink(sgfp4_model_output *output);
/** Stops the job writing into the output: its next write fails (SGFP4_ERR_IO, "cancelled")
 *  and so does the commit. Safe from any thread and from a signal handler. */
SGFP4_API void sgfp4_model_output_cancel(sgfp4_model_output *output);
/** Puts the files in place (sgfp4_output_commit_all: a set's shards, then its index). A
 *  WRITE output is checked first: its file must open as a safetensors model (and a set's
 *  index is written from its tensors). SGFP4_ERR_ARGUMENT before a successful job. */
SGFP4_API sgfp4_status sgfp4_model_output_commit(sgfp4_model_output *output, sgfp4_diag *diag);
/** Files of the output: 1, or a set's shards and index. */
SGFP4_API size_t sgfp4_model_output_files(const sgfp4_model_output *output);
/** Leftovers of dead writers removed when its files were opened. */
SGFP4_API size_t sgfp4_model_output_leftovers_removed(const sgfp4_model_output *output);
/** Removes every temporary file not committed, closes and frees. Accepts NULL. */
SGFP4_API void sgfp4_model_output_close(sgfp4_model_output *output);

#ifdef __cplusplus
}
#endif

#endif /* SGFP4_MODEL_H */
