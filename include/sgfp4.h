/*
 * libsgfp4 — SGFP4 4-bit / ternary weight quantization: containers, decode, encode.
 *
 * SPDX-License-Identifier: MIT
 *
 * One stable public header. Every function here:
 *   - keeps no global state, prints nothing and never exits the process;
 *   - is thread-safe on distinct objects (an opened tensor may also be decoded from several
 *     threads at once: decode only reads it);
 *   - treats container bytes as untrusted: sgfp4_tensor_open() checks every acceptance rule
 *     of docs/format.md once, and never reads outside the buffer it was given, whatever the
 *     bytes say. A tensor that opened decodes without failure.
 *
 * Memory: the caller owns container bytes and output buffers. A tensor view borrows the
 * container bytes, which must stay valid and unchanged until sgfp4_tensor_close().
 *
 * Conventions (docs/api.md, "Conventions"): names are sgfp4_<object>_<verb>; arguments come
 * in the order object, inputs, outputs, options, diag; an options struct starts with
 * `struct_size` and is initialised only by its sgfp4_<x>_options_init(); NULL options mean
 * the defaults; `threads` 0 means 1. This header is the stable tier; benchmark and test
 * hooks are in sgfp4_experimental.h.
 *
 * Options structs: fields are only ever appended. sgfp4_<x>_options_init(&o) is an inline
 * function that passes sizeof the struct as the caller's header declares it to the
 * library's sgfp4_<x>_options_init_sized(&o, size), which sets the defaults of the fields
 * inside those `size` bytes and struct_size = size, and writes nothing past them: a program
 * built against an older header is never written beyond its smaller struct by a newer
 * library. A size that is no layout of the struct (released layouts: docs/api.md) is
 * SGFP4_ERR_ARGUMENT, nothing written. The calls read no field past struct_size (the
 * missing ones take their defaults) and refuse a struct_size they do not know.
 *
 * Result structs (the structs a call fills for the caller: sgfp4_tensor_info,
 * sgfp4_quality, sgfp4_encode_report, and in sgfp4_model.h and sgfp4_vulkan.h
 * sgfp4_model_verify_result, sgfp4_model_summary, sgfp4_model_decision,
 * sgfp4_vk_device_info) also start with `size_t struct_size` and only ever grow at the end.
 * The caller initialises one with its inline sgfp4_<x>_init(&r), which zeroes the struct
 * and sets struct_size = sizeof the struct as the caller's header declares it; a call that
 * fills it writes the fields inside struct_size bytes and not one byte past them, and
 * leaves struct_size as it was. A struct_size that is no released layout of the struct (0,
 * an uninitialised struct, one from a newer header) is SGFP4_ERR_ARGUMENT before any work,
 * nothing written. An array of result structs (sgfp4_vk_list_devices) is initialised
 * element by element.
 */
#ifndef SGFP4_H
#define SGFP4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sgfp4_config.h" /* generated: SGFP4_VERSION_MAJOR .. _STRING, what is built in */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Version ------------------------------------------------------------------------- */

/** The version as one number: major * 10000 + minor * 100 + patch. */
#define SGFP4_VERSION_NUMBER \
    (SGFP4_VERSION_MAJOR * 10000 + SGFP4_VERSION_MINOR * 100 + SGFP4_VERSION_PATCH)

#if defined(_WIN32) && defined(SGFP4_BUILD_SHARED)
#define SGFP4_API __declspec(dllexport)
#elif defined(__GNUC__)
#define SGFP4_API __attribute__((visibility("default")))
#else
#define SGFP4_API
#endif

/** Most threads a call accepts (`threads` above it is SGFP4_ERR_ARGUMENT). */
#define SGFP4_MAX_THREADS 256

/** The version of the linked library, as SGFP4_VERSION_NUMBER. */
SGFP4_API unsigned sgfp4_version(void);
/** The version of the linked library as a string, "major.minor.patch". */
SGFP4_API const char *sgfp4_version_string(void);

/** The body of every result struct's sgfp4_<x>_init(): zeroes `size` bytes at `result` and
 *  sets its leading struct_size to `size` (sgfp4.h, "Result structs"). NULL: nothing. */
static inline void sgfp4_result_init_(void *result, size_t size)
{
    if (!result)
        return;
    unsigned char *bytes = (unsigned char *)result;
    for (size_t k = 0; k < size; k++)
        bytes[k] = 0;
    *(size_t *)result = size;
}

/* ---- Status codes -------------------------------------------------------------------- */

/*
 * Every status, with its pinned value and a one-line description. The numbers are part of
 * the ABI: they never change meaning and are never reused. One rule of the format's
 * acceptance (DECISIONS D2) maps to one status, so a caller can tell what was wrong.
 */
#define SGFP4_STATUS_LIST(X)                                                                  \
    X(OK, 0, "success")                                                                       \
    X(ERR_ARGUMENT, 1, "invalid argument")                                                    \
    X(ERR_NOMEM, 2, "out of memory")                                                          \
    X(ERR_UNSUPPORTED, 3, "unsupported request")                                              \
    X(ERR_UNAVAILABLE, 4, "backend not available in this build or on this machine")          \
    X(ERR_LIMIT, 5, "input exceeds a configured limit")                                       \
    X(ERR_IO, 6, "input/output error")                                                        \
    X(ERR_INTERNAL, 7, "internal error (a bug in libsgfp4)")                                  \
    X(ERR_DST_TOO_SMALL, 8, "output buffer too small")                                         \
    X(ERR_OUTPUT_REFUSED, 9, "output file refused: an input, an existing file, a folder")     \
    X(ERR_SHAPE, 10, "invalid tensor shape")                                                  \
    X(ERR_TRUNCATED, 11, "container is truncated")                                            \
    X(ERR_V1_LENGTH, 12, "v1 container length is not blocks * 2056")                          \
    X(ERR_V1_RESERVED_FLAGS, 13, "v1 offset has reserved flag bits 2-3 set")                  \
    X(ERR_V1_OFFSET_RANGE, 14, "v1 payload offset points outside the codes blob")             \
    X(ERR_V1_T158_TAIL, 15, "v1 T158 payload words 256..511 are not zero")                    \
    X(ERR_SCALE_NONFINITE, 16, "scale is infinite or NaN")                                    \
    X(ERR_SCALE_NEGATIVE, 17, "scale is negative")                                            \
    X(ERR_BIAS_NONFINITE, 18, "bias is infinite or NaN")                                      \
    X(ERR_V2_MAGIC, 20, "v2 magic is not 'SGF4'")                                             \
    X(ERR_V2_VERSION, 21, "v2 version is not 0x02")                                           \
    X(ERR_V2_HEADER_PAD, 22, "v2 header pad bytes are not zero")                              \
    X(ERR_V2_BLOCK_COUNT, 23, "v2 block count does not match the shape")                      \
    X(ERR_V2_TABLE_PAD, 24, "v2 offset-table pad bytes are not zero")                         \
    X(ERR_V2_OFFSET_ALIGN, 25, "v2 record offset is not a multiple of 16")                    \
    X(ERR_V2_OFFSET_ORDER, 26, "v2 record offsets are not strictly increasing")               \
    X(ERR_V2_RECORD_BOUNDS, 27, "v2 record extends past the end of the stream")               \
    X(ERR_V2_SB_RESERVED, 28, "v2 sb_header reserved bits 3-31 are not zero")                 \
    X(ERR_V2_LAYOUT, 29, "v2 layout value is not 0..5")                                       \
    X(ERR_V2_SPLIT_OVERRUN, 30, "v2 split map reads past bit 84")                             \
    X(ERR_V2_SPLIT_TRAILING, 31, "v2 split map has non-zero bits after the last used bit")    \
    X(ERR_V2_LEAF_FLAGS, 32, "v2 leaf header reserved flag bits 1-3 are not zero")            \
    X(ERR_V2_LEAF_HEADER_PAD, 33, "v2 pad after the leaf headers is not zero")                \
    X(ERR_V2_PAYLOAD_PAD, 34, "v2 payload pad bytes are not zero")                            \
    X(ERR_V2_TRAILING_BYTES, 35, "v2 stream has bytes after the last record")                 \
    X(ERR_MODEL_FORMAT, 40, "malformed safetensors file")                                     \
    X(ERR_MODEL_JSON, 41, "malformed safetensors JSON header")                                \
    X(ERR_MODEL_DTYPE, 42, "unknown or unsupported safetensors dtype")                        \
    X(ERR_MODEL_OFFSETS, 43, "safetensors tensor offsets are inconsistent")                   \
    X(ERR_MODEL_DUPLICATE, 44, "duplicate tensor name")                                       \
    X(ERR_MODEL_MANIFEST, 45, "malformed or inconsistent sgfp4 manifest")                     \
    X(ERR_HASH_MISMATCH, 46, "container sha256 does not match the manifest")                  \
    X(ERR_NOT_FOUND, 47, "no such tensor")                                                    \
    X(ERR_MODEL_INDEX, 48, "malformed or inconsistent index of a sharded model")              \
    X(ERR_CANCELLED, 50, "cancelled by the caller")                                           \
    X(ERR_VK_DEVICE_LOST, 60, "Vulkan device lost")                                           \
    X(ERR_VK_OUT_OF_MEMORY, 61, "Vulkan device or host out of memory")                        \
    X(ERR_VK_NO_DEVICE, 62, "no suitable Vulkan device")                                      \
    X(ERR_VK, 63, "Vulkan call failed")

/** Result of every fallible call. Values are stable (see SGFP4_STATUS_LIST). */
typedef enum sgfp4_status {
#define SGFP4_STATUS_ENUM_(name, value, text) SGFP4_##name = value,
    SGFP4_STATUS_LIST(SGFP4_STATUS_ENUM_)
#undef SGFP4_STATUS_ENUM_
} sgfp4_status;

/** A one-line English description of a status; never NULL ("unknown status" if unknown). */
SGFP4_API const char *sgfp4_status_str(sgfp4_status status);
/** The status's identifier without the prefix, e.g. "V2_LAYOUT"; never NULL ("UNKNOWN"). */
SGFP4_API const char *sgfp4_status_name(sgfp4_status status);

/**
 * Where and why a call failed. Optional out-parameter of calls that read untrusted data:
 * pass NULL if not wanted. On failure, `message` names the place (block / record / leaf)
 * and the absolute byte offset in the container; `offset` repeats it (or -1 if none). A
 * call that refuses one element of an input matrix (a NaN or infinite weight or activation)
 * names it in `row` and `col`, with `offset` its byte offset from the input's start.
 */
typedef struct sgfp4_diag {
    sgfp4_status status;
    int64_t offset;      /**< absolute byte offset of the offending field, or -1 */
    int64_t block;       /**< block (v1) or record (v2) index, or -1 */
    int32_t leaf;        /**< leaf index within the record, or -1 */
    int64_t row;         /**< row (or activation vector) of the offending input element, or -1 */
    int64_t col;         /**< its column, or -1 */
    char message[256];   /**< NUL-terminated human-readable explanation */
} sgfp4_diag;

/* ---- Allocation and limits ------------------------------------------------------------ */

/** Optional caller allocator. All three set, or the structure ignored (malloc is used).
 *  Frozen: options structs embed it, so it never grows (docs/api.md, "Nested structs"). */
typedef struct sgfp4_allocator {
    void *(*alloc)(void *user, size_t size);          /**< like malloc; NULL on failure */
    void (*free)(void *user, void *ptr);              /**< like free; accepts NULL */
    void *user;                                       /**< passed through untouched */
} sgfp4_allocator;

/**
 * Resource limits for untrusted input. Zero in a field means "the default" listed here.
 * Memory a call allocates is bounded by the caller's shape and the actual input size,
 * never by a number inside the input alone. Frozen: sgfp4_open_options embeds it, so it never
 * grows; a new limit is a new field of the options struct that applies it.
 */
typedef struct sgfp4_limits {
    uint64_t max_elements;        /**< rows * cols; default 1<<34 */
    uint64_t max_container_bytes; /**< default 1<<40 */
    uint64_t max_header_bytes;    /**< safetensors JSON header; default 100 MB */
} sgfp4_limits;

/* ---- Opening a container -------------------------------------------------------------- */

/** The two profiles of the format. AUTO: v2 if the bytes begin with "SGF4", else v1. */
typedef enum sgfp4_profile {
    SGFP4_PROFILE_AUTO = 0,
    SGFP4_PROFILE_V1 = 1, /**< fixed 2048-byte payload per 64x64 block (`.fp4`) */
    SGFP4_PROFILE_V2 = 2  /**< quadtree-adaptive stream with 'SGF4' magic (`.sgfp4`) */
} sgfp4_profile;

/** Options of sgfp4_tensor_open(); NULL means all defaults. */
typedef struct sgfp4_open_options {
    size_t struct_size;        /**< set by sgfp4_open_options_init() */
    sgfp4_limits limits;       /**< default: all zero (the defaults of sgfp4_limits) */
    sgfp4_allocator allocator; /**< default: none (malloc) */
    /** 1: the view copies the container bytes at open into memory it owns (`size` bytes,
     *  through `allocator`) and reads only that copy: the caller's bytes may then change, be
     *  freed or (a mapped file) be truncated without effect on it. 0 (the default): the view
     *  borrows the bytes (see sgfp4_tensor_open()). */
    int copy;
} sgfp4_open_options;

/** Defaults for the first `size` bytes (sizeof the caller's struct), nothing written past
 *  them; sgfp4_open_options_init() calls it (sgfp4.h, "Options structs"). */
SGFP4_API sgfp4_status sgfp4_open_options_init_sized(sgfp4_open_options *options,
                                                     size_t size);

/** Sets struct_size and every default. The only way to initialise the struct. */
static inline sgfp4_status sgfp4_open_options_init(sgfp4_open_options *options)
{
    return sgfp4_open_options_init_sized(options, sizeof *options);
}

/** An opened, fully validated, immutable container view (opaque). */
typedef struct sgfp4_tensor sgfp4_tensor;

/**
 * Validates `size` container bytes at `data` as an SGFP4 tensor of logical shape
 * (rows, cols) = (O, I) and returns a view of them in *out (options may be NULL).
 * Every acceptance rule (docs/format.md, "Acceptance") is checked here, once; on any
 * violation returns its own status, fills *diag if given, and sets *out to NULL.
 * The view borrows `data` (unless options->copy): keep the bytes alive until
 * sgfp4_tensor_close(). Bytes that change after the open (a file another program rewrites
 * under a mapping) cannot make any call read or write outside them: the open copies into the
 * view every place a later read depends on (v1 payload offsets; v2 record offsets, layouts,
 * split maps, leaf modes: about 4 bytes per block for v1, 20 per block plus 32 per record
 * with a T158 leaf for v2), and later calls read only codes, scales and biases from `data`,
 * so a change may change values, never where they are read. A mapped file that shrinks
 * raises SIGBUS in the thread that reads a page past its new end (the system's rule for
 * mappings): open with options->copy where that can happen (docs/api.md, "Mapped inputs").
 * v2 views are most efficient when `data` is 16-byte aligned, but any alignment works.
 */
SGFP4_API sgfp4_status sgfp4_tensor_open(const void *data, size_t size, sgfp4_profile profile,
                                         uint64_t rows, uint64_t cols, sgfp4_tensor **out,
                                         const sgfp4_open_options *options, sgfp4_diag *diag);

/** Releases a view (not the bytes it borrows). Accepts NULL. */
SGFP4_API void sgfp4_tensor_close(sgfp4_tensor *tensor);

/** Leaf sizes in the order used by counts: index 0 = 64x64 ... 4 = 4x4. */
#define SGFP4_LEAF_SIZES 5
/** The v2 layouts (sb_header bits 0-2). */
typedef enum sgfp4_layout {
    SGFP4_LAYOUT_UNIFORM_64 = 0,
    SGFP4_LAYOUT_UNIFORM_32 = 1,
    SGFP4_LAYOUT_UNIFORM_16 = 2,
    SGFP4_LAYOUT_UNIFORM_8 = 3,
    SGFP4_LAYOUT_MIXED = 4,
    SGFP4_LAYOUT_FULL_4X4 = 5
} sgfp4_layout;
/** Leaf code modes (flag bit 0). */
typedef enum sgfp4_mode { SGFP4_MODE_FP4 = 0, SGFP4_MODE_T158 = 1 } sgfp4_mode;

/** What an opened container holds. Filled by sgfp4_tensor_get_info(); a result struct
 *  (sgfp4.h, "Result structs"). */
typedef struct sgfp4_tensor_info {
    size_t struct_size;               /**< set by sgfp4_tensor_info_init() */
    sgfp4_profile profile;
    uint64_t rows, cols;              /**< logical shape (O, I) */
    uint64_t tiles_y, tiles_x;        /**< ceil(O/64), ceil(I/64) */
    uint64_t blocks;                  /**< tiles_y * tiles_x */
    uint64_t container_bytes;         /**< size of the container */
    double bits_per_weight;           /**< container_bytes * 8 / (rows * cols) */
    uint64_t leaves;                  /**< total leaves (v1: one per block) */
    uint64_t leaves_by_size[SGFP4_LEAF_SIZES];            /**< [0]=64x64 .. [4]=4x4 */
    uint64_t leaves_by_size_mode[SGFP4_LEAF_SIZES][2];    /**< [size][mode] */
    uint64_t leaves_by_mode[2];       /**< [SGFP4_MODE_FP4], [SGFP4_MODE_T158] */
    uint64_t records_by_layout[6];    /**< v2 only: records per sgfp4_layout */
    uint64_t error_hint_blocks;       /**< v1 only: blocks with flag ERROR_HINT set */
} sgfp4_tensor_info;

/** Zeroes *info and sets struct_size. The only way to initialise the struct. */
static inline void sgfp4_tensor_info_init(sgfp4_tensor_info *info)
{
    sgfp4_result_init_(info, sizeof *info);
}

/** Fills *info (initialised by sgfp4_tensor_info_init()) for an opened tensor.
 *  SGFP4_ERR_ARGUMENT for NULL pointers or a struct_size this library does not know
 *  (nothing written). */
SGFP4_API sgfp4_status sgfp4_tensor_get_info(const sgfp4_tensor *tensor,
                                             sgfp4_tensor_info *info);

/** Counts T158 code symbols equal to the reserved 0b11 (they decode as 0). Reads payloads. */
SGFP4_API uint64_t sgfp4_tensor_reserved_symbols(const sgfp4_tensor *tensor);

/** One leaf of a block, as stored (positions within the 64x64 macroblock). Frozen: its
 *  fields are those the format stores, so it carries no struct_size and never grows. */
typedef struct sgfp4_leaf {
    uint8_t y, x;            /**< top-left corner within the macroblock */
    uint8_t size;            /**< 64, 32, 16, 8 or 4 */
    uint8_t mode;            /**< sgfp4_mode */
    uint32_t header;         /**< packed half2 word as stored (flags in the low bits for v2) */
    float scale, bias;       /**< the decoded S and Bias (v2 bias after the 0xFFF0 mask) */
    uint64_t payload_offset; /**< absolute byte offset of the payload in the container */
} sgfp4_leaf;

/**
 * Lists the leaves of block `block` (row-major block index) in storage order into
 * leaves[0..capacity) and returns how many the block has (at most 256). If the count
 * exceeds capacity only the first `capacity` are written. Returns 0 if block is out of range.
 */
SGFP4_API size_t sgfp4_tensor_block_leaves(const sgfp4_tensor *tensor, uint64_t block,
                                           sgfp4_leaf *leaves, size_t capacity);

/* ---- Decoding ------------------------------------------------------------------------- */

/** Output element types. F32 is normative; F16 and BF16 are rounded to nearest-even from it. */
typedef enum sgfp4_dtype {
    SGFP4_DTYPE_F32 = 0,
    SGFP4_DTYPE_F16 = 1,
    SGFP4_DTYPE_BF16 = 2
} sgfp4_dtype;

/** Size in bytes of one element of `dtype` (0 if unknown). */
SGFP4_API size_t sgfp4_dtype_size(sgfp4_dtype dtype);

/** CPU decode implementations. Every one gives identical bits. */
typedef enum sgfp4_backend {
    SGFP4_BACKEND_AUTO = 0,    /**< the fastest kernel set this CPU runs */
    SGFP4_BACKEND_SCALAR = 1,  /**< the plain reference decoder (the oracle) */
    /* 2 was a second name of AUTO, retired: never reused, refused like any unknown value. */
    /* 3..6 force one kernel set: the experimental tier (sgfp4_experimental.h names them). */
    SGFP4_BACKEND_EXPERIMENTAL_3 = 3,
    SGFP4_BACKEND_EXPERIMENTAL_4 = 4,
    SGFP4_BACKEND_EXPERIMENTAL_5 = 5,
    SGFP4_BACKEND_EXPERIMENTAL_6 = 6
} sgfp4_backend;

/** The kernels `backend` decodes with on this machine: "scalar" (the reference), the name
 *  of the kernel set ("avx512", "avx2", "neon", "generic"; for AUTO the fastest the
 *  processor runs); NULL if `backend` is unknown or cannot run here. */
SGFP4_API const char *sgfp4_decode_backend_name(sgfp4_backend backend);

/** How decode writes its output. Every choice gives identical bits; only speed differs. */
typedef enum sgfp4_store {
    /** Streaming stores when the output is large (at least twice the L2 cache of the cores
     *  writing it: it leaves their caches anyway), ordinary ones below. */
    SGFP4_STORE_AUTO = 0,
    /** Ordinary stores: the output stays in cache for a consumer that reads it right away. */
    SGFP4_STORE_CACHED = 1,
    /** Non-temporal (streaming) stores where the CPU kernels have them: the output goes to
     *  memory without each cache line being read first. The fastest way to fill memory that
     *  is not read again soon (loading a model). */
    SGFP4_STORE_STREAMING = 2
} sgfp4_store;

/** Options of the decode calls; NULL means the defaults. */
typedef struct sgfp4_decode_options {
    size_t struct_size;       /**< set by sgfp4_decode_options_init() */
    sgfp4_backend backend;    /**< default AUTO */
    /** Threads in all, the caller's included: 0 (the default) or 1 = the calling thread
     *  only; at most SGFP4_MAX_THREADS. */
    unsigned threads;
    sgfp4_store store;        /**< how the output is written; default AUTO */
} sgfp4_decode_options;

/** Defaults for the first `size` bytes (sizeof the caller's struct), nothing written past
 *  them; sgfp4_decode_options_init() calls it (sgfp4.h, "Options structs"). */
SGFP4_API sgfp4_status sgfp4_decode_options_init_sized(sgfp4_decode_options *options,
                                                       size_t size);

/** Sets struct_size and every default. The only way to initialise the struct. */
static inline sgfp4_status sgfp4_decode_options_init(sgfp4_decode_options *options)
{
    return sgfp4_decode_options_init_sized(options, sizeof *options);
}

/**
 * Decodes rows [row_begin, row_end) of the tensor into `dst` as `dtype`.
 * Row r of the tensor lands at dst + (r - row_begin) * row_stride elements; each row holds
 * `cols` elements. row_stride is in elements; 0 means `cols` (packed).
 * `dst_capacity` is the size of dst in bytes; it must cover the last element written.
 * Fails only on bad arguments: SGFP4_ERR_DST_TOO_SMALL when dst_capacity does not cover the
 * output; SGFP4_ERR_ARGUMENT for NULL pointers, an empty or out-of-range row range, a stride
 * below cols, an unknown dtype, backend or store, bad options (struct_size, threads); and
 * SGFP4_ERR_UNAVAILABLE for a forced kernel set this machine cannot run.
 */
SGFP4_API sgfp4_status sgfp4_decode_rows(const sgfp4_tensor *tensor, uint64_t row_begin,
                                         uint64_t row_end, sgfp4_dtype dtype, void *dst,
                                         size_t row_stride, size_t dst_capacity,
                                         const sgfp4_decode_options *options);

/** Decodes the whole tensor: sgfp4_decode_rows() over [0, rows). */
SGFP4_API sgfp4_status sgfp4_decode(const sgfp4_tensor *tensor, sgfp4_dtype dtype, void *dst,
                                    size_t row_stride, size_t dst_capacity,
                                    const sgfp4_decode_options *options);

/**
 * Decodes an arbitrary list of rows (an embedding lookup): row rows[k] of the tensor lands
 * at dst + k * row_stride elements. Rows may repeat and come in any order. Touches only the
 * leaves that hold the requested rows.
 */
SGFP4_API sgfp4_status sgfp4_decode_gather(const sgfp4_tensor *tensor, const uint64_t *rows,
                                           size_t count, sgfp4_dtype dtype, void *dst,
                                           size_t row_stride, size_t dst_capacity,
                                           const sgfp4_decode_options *options);

/* ---- Checking a decoded tensor ------------------------------------------------------- */

/* This decodes the whole tensor in bands of rows (bounded memory) with `options` (NULL: the
 * defaults); the results do not depend on the options. The hashes an execution contract pins
 * (sgfp4_tensor_container_sha256, sgfp4_tensor_decoded_sha256) are in sgfp4_model.h: they
 * need OpenSSL, which the model component links and this library does not. */

/** How far a decoded tensor ŵ is from reference weights w; a result struct (sgfp4.h,
 *  "Result structs"). */
typedef struct sgfp4_quality {
    size_t struct_size;  /**< set by sgfp4_quality_init() */
    uint64_t count;      /**< weights compared: rows * cols */
    double sse;          /**< sum of (w - ŵ)^2, in double, in row-major order */
    double reference_sq; /**< sum of w^2 */
    double max_abs;      /**< largest |w - ŵ| */
    double rmse;         /**< sqrt(sse / count) */
    /** ||w - ŵ|| / ||w||; 0 when both are 0, infinity when only ||w|| is 0. */
    double rel_l2;
    /** 10 log10(||w||^2 / ||w - ŵ||^2) in dB; +infinity when ŵ = w. */
    double snr_db;
    uint64_t nonfinite;  /**< decoded values that are NaN or infinite (0 for any container
                              that opened: a check for the encoder's own output) */
} sgfp4_quality;

/** Zeroes *quality and sets struct_size. The only way to initialise the struct. */
static inline void sgfp4_quality_init(sgfp4_quality *quality)
{
    sgfp4_result_init_(quality, sizeof *quality);
}

/** Compares the decoded tensor with `reference` (rows x cols float32, rows
 *  `reference_stride` elements apart; 0 = cols) and fills *quality (initialised by
 *  sgfp4_quality_init(); a struct_size this library does not know is SGFP4_ERR_ARGUMENT,
 *  nothing written). */
SGFP4_API sgfp4_status sgfp4_tensor_compare(const sgfp4_tensor *tensor, const float *reference,
                                            size_t reference_stride, sgfp4_quality *quality,
                                            const sgfp4_decode_options *options);

/* ---- Exact conversions (the ones decode uses) ---------------------------------------- */

/** Exact IEEE binary16 -> binary32, subnormals included (integer arithmetic only). */
SGFP4_API float sgfp4_half_to_float(uint16_t half);
/** binary32 -> binary16, round to nearest even; overflow gives infinity. */
SGFP4_API uint16_t sgfp4_float_to_half(float value);
/** binary32 -> bfloat16, round to nearest even (NaN stays NaN). */
SGFP4_API uint16_t sgfp4_float_to_bf16(float value);

/* ---- Encoding ------------------------------------------------------------------------- */

/** How a v2 encoder shapes the quadtree. */
typedef enum sgfp4_policy {
    SGFP4_POLICY_RATE = 0,      /**< rate-controlled: hit target_bpw (default) */
    SGFP4_POLICY_THRESHOLD = 1  /**< the spec's reference error-threshold split policy */
} sgfp4_policy;

/** How each leaf's scale and bias are fitted. */
typedef enum sgfp4_fit {
    SGFP4_FIT_BEST = 0,      /**< search + alternating least squares (default) */
    SGFP4_FIT_REFERENCE = 1, /**< the spec's reference fitting (§22.7) */
    /** The faster preset: the best fitting's search from fewer starts and rounds (faster,
     *  slightly larger errors; docs/encoder.md, "Leaf fitting") */
    SGFP4_FIT_FAST = 2
} sgfp4_fit;

/** What rate control and leaf fitting minimize (docs/encoder.md, "Error metrics"). Every
 *  metric is a weighted squared error: weight (r, c) counts with row_weight(r) *
 *  column_importance[c]. */
typedef enum sgfp4_error_metric {
    /** Squared error, every row alike (row_weight = 1). */
    SGFP4_METRIC_SSE = 0,
    /** Each output row's squared error relative to its squared norm (row_weight =
     *  1 / ||w_r||^2, rows of norm 0 get the smallest non-zero row's weight), so that small
     *  rows sharing a leaf with large ones are not sacrificed. */
    SGFP4_METRIC_ROW_RELATIVE = 1
} sgfp4_error_metric;

/** What an encode call reports beside its status (sgfp4_encode_options.report); a result
 *  struct (sgfp4.h, "Result structs"). */
typedef struct sgfp4_encode_report {
    size_t struct_size; /**< set by sgfp4_encode_report_init() */
    /** Input weights whose magnitude is above 65504, the largest binary16 value: the format
     *  cannot store them, and each was encoded as +-65504 (its error at least |w| - 65504).
     *  Counted over the whole input, also when the call fails afterwards. */
    uint64_t clipped;
    /** The largest |w| of the input (0 when the input was not scanned). */
    double max_abs;
} sgfp4_encode_report;

/** Zeroes *report and sets struct_size. The only way to initialise the struct. */
static inline void sgfp4_encode_report_init(sgfp4_encode_report *report)
{
    sgfp4_result_init_(report, sizeof *report);
}

/**
 * An input's Hessian prepared for calibrated encoding (docs/encoder.md, "Calibrated
 * encoding"): H = E[x x^T] over the activations x that a matrix's columns multiply (any
 * positive multiple of it gives the same result), factored once for every matrix that reads
 * the same input (wq, wk and wv of a layer share one). Immutable once made: any number of
 * encodes on any threads may use it at once.
 */
typedef struct sgfp4_hessian sgfp4_hessian;

/** Options of sgfp4_hessian_create(). */
typedef struct sgfp4_hessian_options {
    size_t struct_size;      /**< set by sgfp4_hessian_options_init() */
    /** Damping: lambda = damping * mean(diag H) is added to the diagonal before the
     *  factorization (GPTQ's percdamp); in (0, 1000], default 0.01. */
    double damping;
    /** Threads in all, the caller's included: 0 (the default) or 1 = the calling thread
     *  only; at most SGFP4_MAX_THREADS. The result does not depend on it. */
    unsigned threads;
    /** Working memory and the object's own (optional; zeroed = malloc). */
    sgfp4_allocator allocator;
} sgfp4_hessian_options;

/** Defaults for the first `size` bytes (sizeof the caller's struct), nothing written past
 *  them; sgfp4_hessian_options_init() calls it (sgfp4.h, "Options structs"). */
SGFP4_API sgfp4_status sgfp4_hessian_options_init_sized(sgfp4_hessian_options *options,
                                                        size_t size);

/** Sets struct_size and every default. The only way to initialise the struct. */
static inline sgfp4_status sgfp4_hessian_options_init(sgfp4_hessian_options *options)
{
    return sgfp4_hessian_options_init_sized(options, sizeof *options);
}

/**
 * Checks and factors a dim x dim Hessian (row-major float32, rows `stride` elements apart;
 * 0 means dim) and sets *out. Only the symmetric part is used: (H + H^T) / 2. Memory: about
 * 2 dim^2 bytes kept by the object, 4 dim^2 more while it is made; time about dim^3 / 3
 * multiply-adds (in float64). The result is a pure function of the values and the damping.
 * Errors (diag names the element): SGFP4_ERR_ARGUMENT for NULL h or out, dim 0, a stride
 * below dim, bad options, a NaN or infinite value, a negative or all-zero diagonal, an
 * element pair H[i][j], H[j][i] that differs by more than 10^-3 sqrt(H[i][i] H[j][j]) (not
 * symmetric), or a matrix that is not positive definite even after the damping (H is then
 * not positive semidefinite); SGFP4_ERR_LIMIT for a dim above 2^24; SGFP4_ERR_NOMEM.
 */
SGFP4_API sgfp4_status sgfp4_hessian_create(const float *h, uint64_t dim, size_t stride,
                                            const sgfp4_hessian_options *options,
                                            sgfp4_hessian **out, sgfp4_diag *diag);

/** The Hessian's dimension (the number of columns of the matrices it calibrates); 0 for
 *  NULL. */
SGFP4_API uint64_t sgfp4_hessian_dim(const sgfp4_hessian *hessian);

/** Releases a Hessian made by sgfp4_hessian_create(). Accepts NULL. */
SGFP4_API void sgfp4_hessian_free(sgfp4_hessian *hessian);

/**
 * Encoder options. Start from sgfp4_encode_options_init(), then change fields.
 * docs/encoder.md describes every algorithm named here.
 */
typedef struct sgfp4_encode_options {
    size_t struct_size;      /**< set by sgfp4_encode_options_init() */
    sgfp4_profile profile;   /**< V1 or V2 (AUTO means V2); default V2 */
    sgfp4_policy policy;     /**< v2 split policy; default SGFP4_POLICY_RATE */
    /** SGFP4_POLICY_RATE: bits per weight (container bytes * 8 / (rows * cols)), in
     *  (0, 64]; default 4.5. The container is at most this large and, unless the tensor is
     *  too small to get there, within 1% below it. */
    double target_bpw;
    /** The reference dual-mode rule (v1 and the threshold policy): T158 when its
     *  Laplacian-weighted error is at most (1 + delta) times FP4's; >= 0, default 0.10. */
    double delta;
    /** Threshold policy: scale of its split thresholds (larger: fewer splits); > 0,
     *  default 1.0 (about 4.2 bits per weight on typical weights). */
    double threshold;
    sgfp4_fit fit;           /**< leaf fitting method; default SGFP4_FIT_BEST */
    /** Threads in all, the caller's included: 0 (the default) or 1 = the calling thread
     *  only; at most SGFP4_MAX_THREADS. The output does not depend on it. */
    unsigned threads;
    /** Working memory (optional; zeroed = malloc). The buffer sgfp4_encode_alloc() returns
     *  always comes from malloc, so that sgfp4_free() releases it. */
    sgfp4_allocator allocator;
    /** What rate control and the leaf fits minimize (v2 rate policy; the v1 profile and the
     *  threshold policy keep the reference rules). Default SGFP4_METRIC_SSE. */
    sgfp4_error_metric metric;
    /** Importance of each input column (imatrix-style: the mean square of the activation
     *  each column multiplies): NULL (all alike, the default) or `cols` finite floats >= 0,
     *  not all 0, read during the call. Multiplies the metric's weights. */
    const float *column_importance;
    /** Importance of each output row (the expected square of the loss gradient at that
     *  output, or any proxy): NULL (all alike, the default) or `rows` finite floats >= 0,
     *  not all 0, read during the call. Multiplies the metric's row weights; with a
     *  hessian, its square root does. */
    const float *row_importance;
    /** If not NULL (initialised by sgfp4_encode_report_init()): filled by each call with
     *  these options, also when it fails (what was clipped, and why a call failed); a
     *  struct_size this library does not know fails the call (SGFP4_ERR_ARGUMENT) before
     *  anything is written; NULL (the default): nothing reported. */
    sgfp4_encode_report *report;
    /** Cancellation: NULL (the default), or called with cancel_user on the calling thread
     *  (never on the encoder's other threads) when the encode starts and then about every
     *  10 ms while it runs; a non-zero return stops the encode within one work item (one
     *  64x64 block): SGFP4_ERR_CANCELLED, *written 0, dst's content unspecified. A hook
     *  that lets a user interrupt a long encode (Ctrl-C) or report that it is alive. */
    int (*cancel)(void *user);
    void *cancel_user;
    /** The Hessian of the matrix's input (sgfp4_hessian_create; its dimension must be
     *  `cols`), or NULL (the default). With it the encode is calibrated: after the leaves
     *  and modes are chosen, the columns are swept in order, each leaf's scale and bias
     *  fitted and its codes chosen on weights that carry the feedback of the error of the
     *  columns before them, so that ||X (W - W_hat)^T|| shrinks rather than ||W - W_hat||
     *  (docs/encoder.md, "Calibrated encoding"). Its diagonal is the column importance
     *  unless column_importance is set. Only read during the call. */
    const sgfp4_hessian *hessian;
} sgfp4_encode_options;

/** Defaults for the first `size` bytes (sizeof the caller's struct), nothing written past
 *  them; sgfp4_encode_options_init() calls it (sgfp4.h, "Options structs"). */
SGFP4_API sgfp4_status sgfp4_encode_options_init_sized(sgfp4_encode_options *options,
                                                       size_t size);

/** Sets struct_size and every default. The only way to initialise the struct. */
static inline sgfp4_status sgfp4_encode_options_init(sgfp4_encode_options *options)
{
    return sgfp4_encode_options_init_sized(options, sizeof *options);
}

/** Largest container sgfp4_encode() can produce for this profile and shape (0 if invalid). */
SGFP4_API size_t sgfp4_encode_bound(sgfp4_profile profile, uint64_t rows, uint64_t cols);

/**
 * Encodes a row-major float32 matrix (rows x cols, rows `src_stride` elements apart; 0 means
 * cols) into dst[0..dst_capacity). On success *written is the container size; a
 * dst_capacity of sgfp4_encode_bound() always suffices, a smaller one that the container
 * does not fit fails with SGFP4_ERR_DST_TOO_SMALL. The output is a pure function of the
 * input values and options (not of `threads`) and passes sgfp4_tensor_open() strictly; the
 * call checks that before it returns (SGFP4_ERR_INTERNAL if not: a bug). options may be NULL.
 * Errors: SGFP4_ERR_ARGUMENT (NULL pointers, a stride below cols, bad options, a NaN or
 * infinite input), SGFP4_ERR_SHAPE (rows or cols 0 or above 2^40, more than 2^32 blocks),
 * SGFP4_ERR_LIMIT (a container the format cannot address), SGFP4_ERR_NOMEM,
 * SGFP4_ERR_CANCELLED (the options' cancel hook stopped it); diag (may be NULL) says which
 * option or value was wrong: "target_bpw 100 is outside (0, 64]", or for a value that is
 * not finite "input row 3, column 7 is NaN" with diag->row, diag->col and diag->offset (its
 * byte offset from src) naming it.
 * Values beyond the fp16 range are clipped to +-65504 (options->report counts them); a v2
 * leaf whose weights are all alike reproduces at most +-65024, the largest v2 bias
 * (docs/format.md, "Value range").
 */
SGFP4_API sgfp4_status sgfp4_encode(const float *src, uint64_t rows, uint64_t cols,
                                    size_t src_stride, void *dst, size_t dst_capacity,
                                    size_t *written, const sgfp4_encode_options *options,
                                    sgfp4_diag *diag);

/** Like sgfp4_encode() into a buffer the library allocates; release it with sgfp4_free(). */
SGFP4_API sgfp4_status sgfp4_encode_alloc(const float *src, uint64_t rows, uint64_t cols,
                                          size_t src_stride, void **out, size_t *out_size,
                                          const sgfp4_encode_options *options,
                                          sgfp4_diag *diag);

/** Releases memory the library returned (sgfp4_encode_alloc). Accepts NULL. */
SGFP4_API void sgfp4_free(void *ptr);

/* ---- Matrix-vector products on compressed weights (DECISIONS D8) -------------------- */

/*
 * Y[n][r] = sum_j W[r][j] * X[n][j] for an opened tensor W of shape (O, I) and a batch of
 * 1..SGFP4_MATVEC_MAX_BATCH activation vectors X[n] of I elements, computed straight from the
 * compressed weights (nothing is decoded to a float buffer first). The result is defined bit
 * for bit by DECISIONS D8 (docs/matvec.md): every kernel set, thread count, row split and the
 * Vulkan backend give the same float32 bits. Each vector of a batch is computed alone, the
 * same way, so a batch gives the bits of its vectors one at a time.
 *
 * Two classes of activations:
 *   Class A, integer: x is first quantized per 64-column block with a power-of-two scale
 *     (sgfp4_matvec_quantize: once per x, reused by every matrix that reads the same x);
 *     the products are then exact integer cell sums. The fast class.
 *   Class B, float: float32 (or f16, converted exactly) activations used as they are.
 *
 * Use:
 *   sgfp4_matvec_plan_create(tensor, &plan)           once per tensor (at model load)
 *   sgfp4_matvec_quantize(x, ..., q8, ...)            Class A: once per activation vector(s)
 *   sgfp4_matvec_q8(plan, q8, ...) / sgfp4_matvec_float(plan, x, ...)   the products
 * The product calls never fail on a valid plan and valid arguments; on the calling thread
 * alone or on a thread pool (sgfp4_thread_pool) they allocate nothing and start no thread.
 * A plan is immutable: any number of threads may run products on one plan at once, each on
 * its own rows (a runtime splitting the rows over its own threads) or with the library's
 * threads (sgfp4_matvec_options.threads, on a pool with sgfp4_matvec_options.pool).
 */

/** Most activation vectors one product call takes. */
#define SGFP4_MATVEC_MAX_BATCH 16

/**
 * A pool of worker threads owned by the caller, for the products (sgfp4_matvec_options.pool):
 * without one, a call with threads > 1 starts its threads and joins them before it returns,
 * tens of microseconds each on some machines and an allocation each; with one, the calls
 * start no thread and allocate nothing. Work is handed out in small parts to whichever
 * thread is free, the caller's included, so a worker that gets no processor (a busy
 * machine) does not hold a call back. Idle workers spin briefly after a run (so that the
 * next product finds them awake), then sleep. One run at a time: calls from several threads
 * sharing a pool take turns (give each of your threads its own pool to run at once).
 */
typedef struct sgfp4_thread_pool sgfp4_thread_pool;

/** Starts `threads` - 1 workers (`threads` counts the calling thread, as the options'
 *  `threads` do; 0 and 1 start none) and sets *out. Errors: SGFP4_ERR_ARGUMENT (NULL out,
 *  threads above SGFP4_MAX_THREADS), SGFP4_ERR_NOMEM (memory or a thread could not be had);
 *  *out is then NULL. */
SGFP4_API sgfp4_status sgfp4_thread_pool_create(unsigned threads, sgfp4_thread_pool **out);

/** Stops and joins the workers, then releases the pool. No call may be using it. Accepts
 *  NULL. */
SGFP4_API void sgfp4_thread_pool_free(sgfp4_thread_pool *pool);

/** Threads a run of the pool can use, the caller's included (0 for NULL). */
SGFP4_API unsigned sgfp4_thread_pool_threads(const sgfp4_thread_pool *pool);

/** Options of the matvec calls. Initialise with sgfp4_matvec_options_init(), then set fields;
 *  NULL means all defaults. The library reads no field past struct_size. */
typedef struct sgfp4_matvec_options {
    size_t struct_size;     /**< sizeof(sgfp4_matvec_options), set by _init */
    /** AUTO (the default): the fastest kernel set this CPU runs; SCALAR: the
     *  reference (the oracle). The experimental tier's forced kernel sets select one set
     *  (SGFP4_ERR_UNAVAILABLE where this build or CPU lacks it). Every choice, same bits. */
    sgfp4_backend backend;
    /** Threads in all, the caller's included: 0 (the default) or 1 = the calling thread
     *  only; at most SGFP4_MAX_THREADS. Same bits for every count. */
    unsigned threads;
    /** Where the products' threads come from: NULL (the default) starts them per call;
     *  a pool runs them on its workers, at most sgfp4_thread_pool_threads(pool) of them
     *  (`threads` still says how many a call uses). Same bits either way. */
    sgfp4_thread_pool *pool;
    /** 0 (the default): the D8 products. 1: the fast products of DECISIONS D9, which the
     *  CPU backends do not offer: the product calls return SGFP4_ERR_UNSUPPORTED (never a
     *  D8 result in their place); the Vulkan backend offers them
     *  (sgfp4_vk_matvec_options.fast). Any other value is SGFP4_ERR_ARGUMENT. The
     *  quantizer ignores it (D9 keeps D8's activations). */
    int fast;
} sgfp4_matvec_options;

/** Defaults for the first `size` bytes (sizeof the caller's struct), nothing written past
 *  them; sgfp4_matvec_options_init() calls it (sgfp4.h, "Options structs"). */
SGFP4_API sgfp4_status sgfp4_matvec_options_init_sized(sgfp4_matvec_options *options,
                                                       size_t size);

/** Sets struct_size and every default (AUTO backend, 1 thread). The only way to initialise
 *  the struct. */
static inline sgfp4_status sgfp4_matvec_options_init(sgfp4_matvec_options *options)
{
    return sgfp4_matvec_options_init_sized(options, sizeof *options);
}

/** The kernels `backend` runs matrix-vector products with on this machine: "scalar" (the
 *  reference) or a kernel set's name; NULL if `backend` is unknown or cannot run here. */
SGFP4_API const char *sgfp4_matvec_backend_name(sgfp4_backend backend);

/** A tensor prepared for products (opaque, immutable). It borrows the tensor, which must stay
 *  open until sgfp4_matvec_plan_free() (bytes that change meanwhile change values only:
 *  sgfp4_tensor_open()). */
typedef struct sgfp4_matvec_plan sgfp4_matvec_plan;

/**
 * Prepares `tensor` for products: builds whatever per-tensor data the kernels read (through
 * the tensor's allocator; sgfp4_matvec_plan_bytes() says how much) and sets *out. On CPUs
 * whose fastest kernels read it (AVX-512), that includes a repacked copy of the tensor's
 * blocks, about 1.05x the container's bytes for v2 and 1.16x for v1 (docs/matvec.md, "The
 * plan").
 * Errors: SGFP4_ERR_ARGUMENT (NULL pointers), SGFP4_ERR_NOMEM; *out is then NULL.
 */
SGFP4_API sgfp4_status sgfp4_matvec_plan_create(const sgfp4_tensor *tensor,
                                                sgfp4_matvec_plan **out);

/** Releases a plan (not the tensor it borrows). Accepts NULL. */
SGFP4_API void sgfp4_matvec_plan_free(sgfp4_matvec_plan *plan);

/** Bytes of memory the plan holds (the object and any table built for the kernels; the
 *  layout is in docs/matvec.md). 0 for NULL. */
SGFP4_API size_t sgfp4_matvec_plan_bytes(const sgfp4_matvec_plan *plan);

/**
 * Size in bytes of the Class A (q8) activations of `batch` vectors of `cols` elements: batch
 * times the bytes of one vector, align64(68 * ceil(cols / 64)). The layout (docs/matvec.md)
 * is the same on the CPU and the GPU: vector n starts at byte n * (the bytes of one vector);
 * it holds q (int8, 64 per block, padding columns 0) for block b at b * 64, then at
 * 64 * ceil(cols / 64) the block scales d (float32: 0 or exactly 2^e), then zero pad.
 * 0 if cols is 0, batch is 0 or above SGFP4_MATVEC_MAX_BATCH, or the size overflows.
 */
SGFP4_API size_t sgfp4_matvec_q8_bytes(uint64_t cols, unsigned batch);

/**
 * The Class A activation quantizer (D8): for each vector and each 64-column block b,
 * m = max |x_j| over the block; if m < 2^-40, d_b = 0 and every q_j = 0; else d_b = 2^e with
 * e the smallest integer such that m <= 127 * 2^e, and q_j = round_half_even(x_j * 2^-e),
 * computed exactly (|q_j| <= 127). Vector n is read at x + n * x_stride elements (x_stride 0
 * = cols) as `dtype`: SGFP4_DTYPE_F32 or SGFP4_DTYPE_F16 (converted exactly); it writes
 * sgfp4_matvec_q8_bytes(cols, batch) bytes to q8 (pad bytes zero). Of the options only the
 * backend matters (every kernel set writes the same bytes); it runs on the calling thread.
 * Errors: SGFP4_ERR_DST_TOO_SMALL for a q8_capacity below the size; SGFP4_ERR_ARGUMENT for
 * NULL pointers, cols 0, batch 0 or above SGFP4_MATVEC_MAX_BATCH, an x_stride below cols,
 * bad options, and for a NaN or infinite x (diag names the vector and column; the q8
 * contents are then unspecified); SGFP4_ERR_UNSUPPORTED for another dtype;
 * SGFP4_ERR_UNAVAILABLE for a forced kernel set that cannot run here.
 */
SGFP4_API sgfp4_status sgfp4_matvec_quantize(const void *x, sgfp4_dtype dtype, uint64_t cols,
                                             unsigned batch, size_t x_stride, void *q8,
                                             size_t q8_capacity,
                                             const sgfp4_matvec_options *options,
                                             sgfp4_diag *diag);

/**
 * Class A product for tensor rows [row_begin, row_end): y[n * y_stride + (r - row_begin)] =
 * row r of W times vector n of q8 (the output of sgfp4_matvec_quantize for the tensor's cols
 * and `batch` vectors; q8_size its size in bytes, at least sgfp4_matvec_q8_bytes(cols,
 * batch)). y_stride is in floats, 0 = row_end - row_begin (packed); y_capacity, in bytes,
 * must cover (batch - 1) * y_stride + (row_end - row_begin) floats. Only those floats are
 * written. q8 bytes not made by the quantizer give unspecified (but memory-safe) results.
 * Errors (nothing written): SGFP4_ERR_DST_TOO_SMALL for a y_capacity below that;
 * SGFP4_ERR_ARGUMENT for NULL pointers, batch 0 or above SGFP4_MATVEC_MAX_BATCH, an empty or
 * out-of-range row range, a y_stride below the row count, too small a q8_size, bad options;
 * SGFP4_ERR_UNAVAILABLE for a forced kernel set that cannot run here.
 */
SGFP4_API sgfp4_status sgfp4_matvec_q8(const sgfp4_matvec_plan *plan, const void *q8,
                                       size_t q8_size, unsigned batch, uint64_t row_begin,
                                       uint64_t row_end, float *y, size_t y_stride,
                                       size_t y_capacity, const sgfp4_matvec_options *options);

/**
 * Class B product for tensor rows [row_begin, row_end), float activations: vector n is read
 * at x + n * x_stride elements (x_stride 0 = cols) as SGFP4_DTYPE_F32 or SGFP4_DTYPE_F16
 * (converted exactly); |x_j| < 2^-60 reads as +0. NaN or infinite activations give NaN or
 * infinite results as IEEE arithmetic does (a NaN's sign and payload are unspecified).
 * y, y_stride and y_capacity as for sgfp4_matvec_q8().
 * Errors (nothing written): as sgfp4_matvec_q8() (an x_stride below cols is
 * SGFP4_ERR_ARGUMENT), and SGFP4_ERR_UNSUPPORTED for another dtype.
 */
SGFP4_API sgfp4_status sgfp4_matvec_float(const sgfp4_matvec_plan *plan, const void *x,
                                          sgfp4_dtype dtype, unsigned batch, size_t x_stride,
                                          uint64_t row_begin, uint64_t row_end, float *y,
                                          size_t y_stride, size_t y_capacity,
                                          const sgfp4_matvec_options *options);

#ifdef __cplusplus
}
#endif

#endif /* SGFP4_H */
