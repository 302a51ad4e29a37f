/* The opened-model structure shared by the files of src/model/.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_MODEL_INTERNAL_H
#define SGFP4_MODEL_INTERNAL_H

#include <stdbool.h>

#include "common/diag.h"
#include "sgfp4_model.h"

/* One tensor plus the storage its pointers refer to. */
typedef struct model_entry {
    sgfp4_model_tensor pub;
    uint64_t shape[SGFP4_MODEL_MAX_RANK];
    uint64_t begin, end;          /* data_offsets as written (relative to the data section) */
    sgfp4_model_quant quant;      /* valid when pub.quant != NULL */
    uint64_t original_shape[SGFP4_MODEL_MAX_RANK];
    char *encoder_json;           /* owned */
} model_entry;

struct sgfp4_model {
    const uint8_t *base;          /* the whole file */
    uint64_t size;
    uint64_t data_offset;         /* 8 + header length */
    void *mapping;                /* non-NULL when we mapped the file (munmap on close) */
    uint8_t *copy;                /* non-NULL when the bytes were read or copied (freed) */
    bool compressed;
    model_entry *entries;         /* in data-offset order */
    size_t count;
    char **meta_keys, **meta_values;
    size_t meta_count;
    bool quantized;
    size_t *by_name;              /* entry indices sorted by name (for lookups) */
    /* A set opened from an index (model_set.c): the shards own the tensors and their
     * storage; `refs` points at every shard tensor in shard order (entries is NULL), and
     * the metadata arrays are the set's own merge of the shards'. */
    const sgfp4_model_tensor **refs;
    sgfp4_model **shards;
    char **shard_names;
    size_t shard_count;
    char *index_json;             /* the index document, compact (kept by the set writers) */
    char *meta_conflict;          /* why one-file writers must refuse the set, or NULL */
    /* The file it was opened from (a set: its index), for sgfp4_inputs_add_model: the path
     * as given (NULL for a model in memory) and the device and inode of the file itself
     * (a .zst file, not its decompressed copy). */
    char *file_path;
    unsigned long long file_dev, file_ino;
};

/* Tensor k of a model in file order (a set: shard order), and the k-th in name order. */
static inline const sgfp4_model_tensor *sgfp4_model_tensor_k(const sgfp4_model *m, size_t k)
{
    return m->refs ? m->refs[k] : &m->entries[k].pub;
}
static inline const sgfp4_model_tensor *sgfp4_model_tensor_sorted(const sgfp4_model *m, size_t k)
{
    return sgfp4_model_tensor_k(m, m->by_name[k]);
}

/* Parses and checks header + manifest of the bytes model->base[0..size) (options: the
 * limits; NULL = defaults). */
sgfp4_status sgfp4_model_parse(sgfp4_model *model, const sgfp4_model_open_options *options,
                               sgfp4_diag *diag);
/* Parses the manifest JSON text into the entries (called by sgfp4_model_parse). */
sgfp4_status sgfp4_model_parse_manifest(sgfp4_model *model, const char *json, sgfp4_diag *diag);
/* model_index.c: builds model->by_name (entries must be final). */
sgfp4_status sgfp4_model_index_names(sgfp4_model *model, sgfp4_diag *diag);
/* Frees everything but the model struct and mapping. */
void sgfp4_model_free_parsed(sgfp4_model *model);

/* model_file.c: one file of a model. True when `head` (the first bytes of a file, at most
 * `size`) is a JSON document rather than a safetensors header, i.e. an index. */
bool sgfp4_model_looks_like_index(const uint8_t *head, size_t head_size, uint64_t file_size);
/* The caller's open options (NULL: the defaults) into *o; SGFP4_ERR_ARGUMENT, said in diag,
 * for a struct_size this library does not know. */
sgfp4_status sgfp4_model_open_options_read(const sgfp4_model_open_options *given,
                                           sgfp4_model_open_options *o, sgfp4_diag *diag);
/* A file opened by path (a zstd stream already decompressed into `fd`, an unlinked
 * temporary file), its size, and whether it is an index. */
typedef struct model_file {
    int fd;
    uint64_t size;
    bool compressed;
    bool is_index;
    unsigned long long dev, ino;  /* of the file at `path` (before any decompression) */
} model_file;
/* Records where `model` came from (model->file_path, _dev, _ino); SGFP4_ERR_NOMEM. */
sgfp4_status sgfp4_model_keep_file(sgfp4_model *model, const char *path, const model_file *file,
                                   sgfp4_diag *diag);
/* Opens `path` into *file (the caller closes file->fd, or passes it to _finish). */
sgfp4_status sgfp4_model_file_begin(const char *path, const sgfp4_model_open_options *options,
                                    model_file *file, sgfp4_diag *diag);
/* Maps and parses a file that is not an index, closing its fd. */
sgfp4_status sgfp4_model_file_finish(model_file *file, const char *path,
                                     const sgfp4_model_open_options *options, sgfp4_model **out,
                                     sgfp4_diag *diag);
/* Opens one file that must be a safetensors file (a shard: no index). */
sgfp4_status sgfp4_model_open_file(const char *path, sgfp4_model **out,
                                   const sgfp4_model_open_options *options, sgfp4_diag *diag);
/* Frees a model of one file (NULL: nothing). */
void sgfp4_model_file_free(sgfp4_model *model);

/* model_set.c: opens the set an index file (already open as fd, `size` bytes) describes. */
sgfp4_status sgfp4_model_open_set(const char *path, int fd, uint64_t size, sgfp4_model **out,
                                  const sgfp4_model_open_options *options, sgfp4_diag *diag);
/* Why `name` cannot be a shard's or an index's name (it must be a plain file name, which
 * sits beside the index), or NULL if it can. */
const char *sgfp4_model_bad_file_name(const char *name);
/* qsort comparator of `const char *` elements (strcmp order). */
int sgfp4_compare_strings(const void *a, const void *b);
/* Frees a set's own storage and closes its shards (the struct itself too). */
void sgfp4_model_set_free(sgfp4_model *model);
/* model_set_write.c: an output index as text (malloc'ed; NULL: out of memory): the source
 * index's document (if any) with its metadata's total_size set to the output's data bytes
 * and a weight_map naming each tensor's output shard (shard_names[t->shard]); keys sorted
 * and indented as Hugging Face's writers do. */
char *sgfp4_model_index_text(const sgfp4_model *source, const char *const *shard_names,
                             uint64_t data_bytes);
/* Fails (SGFP4_ERR_MODEL_INDEX) if a set cannot be written as one file. */
sgfp4_status sgfp4_model_check_one_file(const sgfp4_model *model, sgfp4_diag *diag);
/* The model that owns a tensor of `model` (its shard, or itself). */
const sgfp4_model *sgfp4_model_owner(const sgfp4_model *model, const sgfp4_model_tensor *t);

/* st_dtype.c: the 8-bit floats, exactly to float32 and back (round to nearest even,
 * saturating at the largest finite value; NaN stays NaN). */
float sgfp4_f8e4m3_to_float(uint8_t byte);
float sgfp4_f8e5m2_to_float(uint8_t byte);
uint8_t sgfp4_float_to_f8e4m3(float value);
uint8_t sgfp4_float_to_f8e5m2(float value);
/* Rounds `count` float32 values in `buffer` to the 1-byte float dtype (F8_E4M3 or F8_E5M2)
 * in place, packed at the buffer's start; returns the bytes (count). */
size_t sgfp4_st_narrow_f32(sgfp4_st_dtype dtype, void *buffer, size_t count);

/* model_report.c: progress reports and the closing summary of a model job. */
typedef struct model_report {
    const sgfp4_model_write_options *options;
    size_t tensors_done, tensors_total;
    uint64_t bytes_done, bytes_total;
    sgfp4_model_summary summary;
    double start, last;             /* monotonic seconds */
    sgfp4_sink inner;               /* the caller's sink; counting_sink() counts into it */
} model_report;
/* Starts the job's clock and sends the first report. */
void sgfp4_report_begin(model_report *r, const sgfp4_model_write_options *o, size_t tensors,
                        uint64_t bytes);
/* A sink that forwards to `inner` and adds every byte to summary.file_bytes_out. */
sgfp4_sink sgfp4_report_sink(model_report *r, const sgfp4_sink *inner);
/* After tensor t: `p` carries what the job knows (quantized, bytes_out, bits, target,
 * reason); the rest, the totals and the time are filled here, then both reports are sent. */
void sgfp4_report_tensor(model_report *r, const sgfp4_model_tensor *t,
                         sgfp4_model_tensor_report *p);
/* Finishes the summary (files written) and hands it to the caller. */
void sgfp4_report_end(model_report *r, size_t files);
/* SGFP4_ERR_CANCELLED (with a message in diag) when the job's cancel hook asks to stop,
 * else SGFP4_OK. */
sgfp4_status sgfp4_report_cancelled(const model_report *r, sgfp4_diag *diag);

/* One output file of a model job (the whole job for sgfp4_model_encode / _decode, one shard
 * of a set writer), reporting through `report`. The callers check the arguments; `options`
 * is the resolved struct (sgfp4_model_write_options_read), never NULL. */
typedef struct model_rates model_rates;
sgfp4_status sgfp4_model_encode_part(const sgfp4_model *source, const sgfp4_model_policy *policy,
                                     const model_rates *rates, const sgfp4_sink *sink,
                                     const sgfp4_model_write_options *options,
                                     model_report *report, sgfp4_diag *diag);
sgfp4_status sgfp4_model_decode_part(const sgfp4_model *quantized, const sgfp4_sink *sink,
                                     const sgfp4_model_write_options *options,
                                     model_report *report, sgfp4_diag *diag);
/* Decode's checks of its source and options (quantized, a known output dtype). */
sgfp4_status sgfp4_model_decode_check(const sgfp4_model *quantized,
                                      const sgfp4_model_write_options *options, sgfp4_diag *diag);
/* model_options.c: the caller's write options (NULL: defaults) into *out, by the options
 * convention; SGFP4_ERR_ARGUMENT for a struct_size this library does not know. */
sgfp4_status sgfp4_model_write_options_read(const sgfp4_model_write_options *given,
                                            sgfp4_model_write_options *out, sgfp4_diag *diag);
/* Tensor data bytes of a model (a set: all shards). */
uint64_t sgfp4_model_data_bytes(const sgfp4_model *model);

/* Fails (SGFP4_ERR_ARGUMENT, naming element and byte offset) if a F32 tensor holds a NaN or
 * infinity. */
sgfp4_status sgfp4_model_tensor_to_f32_check(const sgfp4_model_tensor *tensor, sgfp4_diag *diag);

/* model_hessian.c: the input Hessians of an importance file (docs/encoder.md, "The
 * importance file"), prepared as a whole-model encode reaches each matrix. The last two
 * prepared ones are kept, so matrices that share an input (an alias, or the same tensor)
 * factor it once even when another matrix comes between them. */
typedef struct hessian_cache {
    const sgfp4_model_tensor *source[2]; /* the importance tensor each slot was made from */
    sgfp4_hessian *prepared[2];
    unsigned newer;                      /* the slot used last */
} hessian_cache;
/* The Hessian for matrix t (its 2-D view has `cols` columns): the importance file's tensor
 * NAME:hessian, or the one its metadata entry NAME:hessian names; *out = NULL when it has
 * neither. A present one of another shape, an alias to nothing, or a matrix that is no
 * Hessian (sgfp4_hessian_create's checks) is an error naming it. Prepared on `threads`. */
sgfp4_status sgfp4_importance_hessian(const sgfp4_model *importance, const sgfp4_model_tensor *t,
                                      uint64_t cols, unsigned threads, hessian_cache *cache,
                                      const sgfp4_hessian **out, sgfp4_diag *diag);
void sgfp4_hessian_cache_free(hessian_cache *cache);

/* policy.c: the policy's rates; whether no rule sets tensor t's bpw (its rate is the
 * defaults'). */
sgfp4_model_rates sgfp4_model_policy_rates(const sgfp4_model_policy *policy);
bool sgfp4_model_policy_rate_is_default(const sgfp4_model_policy *policy,
                                        const sgfp4_model_tensor *t);

/* model_rates.c: rates by sensitivity (docs/model.md, "Rates by sensitivity"): the target
 * bits per weight chosen for each tensor that takes part, found by tensor. */
struct model_rates {
    size_t count;
    const sgfp4_model_tensor **tensor; /* sorted by address */
    double *bpw;
};
/* Plans the rates of the source's tensors under the policy with the importance file (NULL:
 * none). Nothing planned (count 0) for uniform rates, or auto without an importance file. */
sgfp4_status sgfp4_model_plan_rates(const sgfp4_model *source, const sgfp4_model_policy *policy,
                                    const sgfp4_model *importance, model_rates *out,
                                    sgfp4_diag *diag);
/* The planned target of t, or 0 when it has none. */
double sgfp4_model_rate_of(const model_rates *rates, const sgfp4_model_tensor *t);
void sgfp4_model_rates_free(model_rates *rates);

/* model_encode.c: the importance vector `suffix` ("" columns, ":rows" rows) of n values for
 * tensor t, as float32 into *out (malloc), or *out = NULL when the file has none. */
sgfp4_status sgfp4_importance_vector(const sgfp4_model *importance, const sgfp4_model_tensor *t,
                                     const char *suffix, uint64_t n, float **out,
                                     sgfp4_diag *diag);
/* model_encode.c: tensor t's values as float32, straight from the mapping when they are
 * little-endian F32 (*owned NULL) or converted into *owned (free it); checked finite. */
sgfp4_status sgfp4_model_tensor_floats(const sgfp4_model_tensor *t, const float **values,
                                       float **owned, sgfp4_diag *diag);

/* model_io.c: sha256 of bytes as 64 lowercase hex digits + NUL. */
void sgfp4_sha256_hex(const void *data, size_t size, char hex[65]);

/* The temporary-file folder: dir if given, else $TMPDIR, else /tmp. */
const char *sgfp4_temp_dir(const char *dir);
/* Creates an unlinked read/write temporary file in `dir`; returns its fd or -1. */
int sgfp4_temp_file(const char *dir);

/* Writes all bytes to the sink. */
static inline sgfp4_status sgfp4_sink_put(const sgfp4_sink *s, const void *data, size_t size)
{
    return size ? s->write(s->user, data, size) : SGFP4_OK;
}

#define SGFP4_DEFAULT_MAX_HEADER (100u * 1000u * 1000u)

#endif
