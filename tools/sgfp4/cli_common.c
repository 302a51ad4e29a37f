/* Messages, the container prologue of decode / verify / info / bench FILE, opening models,
 * and the progress bar of the whole-model commands.
 * SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "tool_clock.h"

int cli_verbosity = 1;
const char cli_stream_model_message[] =
    "a model on a pipe or another stream cannot be read: a model is mapped and read more than "
    "once, so it must be a file (save the stream to one first, e.g. with cat > FILE)";
char cli_last_error[1024];

/* One line on stderr; a usage error adds where to find the command's options. */
static void report(const char *command, const char *format, va_list args, bool usage,
                   bool error)
{
    fprintf(stderr, "sgfp4: %s%s", command ? command : "", command ? ": " : "");
    if (error) {
        va_list copy;
        va_copy(copy, args);
        vsnprintf(cli_last_error, sizeof cli_last_error, format, copy);
        va_end(copy);
    }
    vfprintf(stderr, format, args);
    if (usage)
        fprintf(stderr, " (try 'sgfp4 %s --help')", command ? command : "");
    fputc('\n', stderr);
}

int cli_error(const char *command, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    report(command, format, args, false, true);
    va_end(args);
    return CLI_EXIT_FAIL;
}

int cli_usage_error(const char *command, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    report(command, format, args, true, true);
    va_end(args);
    return CLI_EXIT_USAGE;
}

static char pending_warning[1024];

void cli_warn_on_success(const char *command, const char *format, ...)
{
    if (cli_verbosity < 1 || pending_warning[0])
        return; /* one is enough: a run opens one container */
    const int n = snprintf(pending_warning, sizeof pending_warning, "sgfp4: %s: warning: ",
                           command);
    va_list args;
    va_start(args, format);
    if (n > 0 && (size_t)n < sizeof pending_warning)
        vsnprintf(pending_warning + n, sizeof pending_warning - (size_t)n, format, args);
    va_end(args);
}

void cli_flush_warnings(int rc)
{
    if (rc == CLI_EXIT_OK && pending_warning[0])
        fprintf(stderr, "%s\n", pending_warning);
    pending_warning[0] = '\0';
}

void cli_verbose(const char *command, const char *format, ...)
{
    if (cli_verbosity < 2)
        return;
    va_list args;
    va_start(args, format);
    report(command, format, args, false, false);
    va_end(args);
}

void cli_shape_text(char *buf, size_t size, const uint64_t *shape, size_t rank)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (size_t d = 0; d < rank && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%llu", d ? ", " : "",
                                 (unsigned long long)shape[d]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
}

/* An explicit --profile wins (a v1 file may begin with "SGF4" by chance); else the 'SGF4'
 * magic means v2; else the extension. */
static bool resolve_profile(const cli_args *a, cli_container *c)
{
    if (a->given[KEY_PROFILE])
        c->profile = a->profile;
    else if (c->in.size >= 4 && memcmp(c->in.data, "SGF4", 4) == 0)
        c->profile = SGFP4_PROFILE_V2;
    else if (cli_ends_with(c->path, ".fp4"))
        c->profile = SGFP4_PROFILE_V1;
    else if (cli_ends_with(c->path, ".sgfp4"))
        c->profile = SGFP4_PROFILE_V2; /* no magic: the open reports what is wrong */
    else
        return false;
    return true;
}

/* A v2 container opened with --shape: leaves that lie wholly outside the shape (in the
 * padding of its bottom and right edge blocks) and still carry a non-zero scale or bias.
 * An encoder that pads with zeros (this one, the spec's reference) writes S = B = 0 there, so
 * such leaves say that the container was encoded with another shape of the same block count.
 * v1 leaves cover whole blocks, which always hold some weights: nothing to tell there. */
static uint64_t leaves_in_padding_with_data(const sgfp4_tensor *t)
{
    sgfp4_tensor_info info;
    sgfp4_tensor_info_init(&info);
    sgfp4_tensor_get_info(t, &info);
    const unsigned last_rows = (unsigned)(info.rows - (info.tiles_y - 1) * 64);
    const unsigned last_cols = (unsigned)(info.cols - (info.tiles_x - 1) * 64);
    if (info.profile != SGFP4_PROFILE_V2 || (last_rows == 64 && last_cols == 64))
        return 0;
    uint64_t found = 0;
    sgfp4_leaf leaves[256];
    for (uint64_t b = 0; b < info.blocks; b++) {
        const uint64_t by = b / info.tiles_x, bx = b % info.tiles_x;
        const unsigned rows = by + 1 == info.tiles_y ? last_rows : 64;
        const unsigned cols = bx + 1 == info.tiles_x ? last_cols : 64;
        if (rows == 64 && cols == 64)
            continue;
        const size_t n = sgfp4_tensor_block_leaves(t, b, leaves, 256);
        for (size_t k = 0; k < n && k < 256; k++)
            found += (leaves[k].y >= rows || leaves[k].x >= cols) &&
                     (leaves[k].scale != 0.0f || leaves[k].bias != 0.0f);
    }
    return found;
}

int cli_container_open(const cli_args *a, cli_container *c)
{
    memset(c, 0, sizeof *c);
    c->path = a->in;
    if (!a->in)
        return cli_usage_error(a->command, "no input given");
    if (!a->given[KEY_SHAPE] && fileio_is_stream(a->in)) {
        /* Its first bytes say what it is; it is not read further either way. */
        const fileio_kind kind = fileio_sniff_stream(a->in);
        if (kind == FILEIO_KIND_SAFETENSORS || kind == FILEIO_KIND_ZSTD ||
            kind == FILEIO_KIND_INDEX)
            return cli_error(a->command, "%s: %s", a->in, cli_stream_model_message);
        return cli_usage_error(a->command, "%s is a stream: --shape OxI is required (a bare "
                                           "container carries no shape; a model is read only "
                                           "from a file)", a->in);
    }
    if (!a->given[KEY_SHAPE])
        return cli_usage_error(a->command,
                               "--shape OxI is required: a bare container carries no shape");
    char err[FILEIO_ERROR_SIZE];
    if (!fileio_read(a->in, &c->in, err))
        return cli_error(a->command, "%s", err);
    if (!resolve_profile(a, c)) {
        cli_container_close(c);
        return cli_error(a->command, "%s: cannot tell the profile (no 'SGF4' magic, no .fp4 "
                                     "extension); pass --profile v1 or --profile v2", a->in);
    }
    sgfp4_diag diag;
    const sgfp4_status s = sgfp4_tensor_open(c->in.data, c->in.size, c->profile, a->rows, a->cols,
                                             &c->tensor, NULL, &diag);
    if (s != SGFP4_OK) {
        cli_container_close(c);
        return cli_error(a->command, "%s: %s [%s]", a->in, diag.message, sgfp4_status_name(s));
    }
    /* said after a run that succeeds (a failure stays one line) */
    const uint64_t misplaced = leaves_in_padding_with_data(c->tensor);
    if (misplaced)
        cli_warn_on_success(a->command, "%s: --shape %llux%llu looks wrong: %llu lea%s wholly "
                            "outside it (in the padding of its edge blocks) carr%s a non-zero "
                            "scale or bias, which an encoder that pads with zeros never writes; "
                            "any shape of the same number of 64x64 blocks opens this container",
                            a->in, (unsigned long long)a->rows, (unsigned long long)a->cols,
                            (unsigned long long)misplaced, misplaced > 1 ? "ves" : "f",
                            misplaced > 1 ? "y" : "ies");
    return -1;
}

void cli_container_close(cli_container *c)
{
    sgfp4_tensor_close(c->tensor);
    fileio_input_release(&c->in);
    c->tensor = NULL;
}

/* Notes the inputs the command line names, whether or not they were read yet: an output
 * opened before its command reads them must not be one of them either. */
static void note_named_inputs(const cli_args *a)
{
    if (a->in)
        fileio_note_input(a->in);
    if (a->against)
        fileio_note_input(a->against);
    if (a->policy && strcmp(a->policy, "rate") != 0 && strcmp(a->policy, "threshold") != 0)
        fileio_note_input(a->policy);
}

static void say_stale(const cli_args *a, const char *path, int removed)
{
    if (removed)
        cli_verbose(a->command, "%s: removed %d temporary file%s left by an interrupted run",
                    path, removed, removed > 1 ? "s" : "");
}

bool cli_output_open(const cli_args *a, const char *path, fileio_output *out)
{
    char err[FILEIO_ERROR_SIZE];
    note_named_inputs(a);
    if (!fileio_output_open(path, a->given[KEY_FORCE] ? FILEIO_FORCE : 0, out, err))
        return cli_error(a->command, "%s", err), false;
    say_stale(a, path, out->stale_removed);
    return true;
}

sgfp4_model_output *cli_model_output_open(const cli_args *a, const char *path,
                                          const sgfp4_model *source,
                                          sgfp4_model_output_kind kind)
{
    note_named_inputs(a);
    sgfp4_output_options o = fileio_output_options(a->given[KEY_FORCE] ? FILEIO_FORCE : 0);
    o.zstd_level = a->zstd_level;
    o.zstd_threads = 1;
    sgfp4_model_output *mo = NULL;
    sgfp4_diag diag;
    if (sgfp4_model_output_open(path, source, kind, &o, &mo, &diag) != SGFP4_OK)
        return cli_error(a->command, "%s", diag.message), NULL;
    say_stale(a, path, (int)sgfp4_model_output_leftovers_removed(mo));
    return mo;
}

bool cli_is_model_input(const cli_args *a)
{
    if (!a->in || cli_is_model_path(a->in))
        return a->in != NULL;
    switch (fileio_sniff(a->in)) {
    case FILEIO_KIND_ZSTD: return true;
    case FILEIO_KIND_SAFETENSORS:
    case FILEIO_KIND_INDEX: return !a->given[KEY_SHAPE];
    default: return false;
    }
}

/* The bytes of one file of a model as the library reads them (its mapping), found from a
 * tensor: its data pointer less its offset in the file. NULL for a file without tensors
 * (nothing of it is read after the open). */
static const void *model_file_base(const sgfp4_model *file)
{
    const sgfp4_model_tensor *t = sgfp4_model_tensor_at(file, 0);
    return t ? t->data - t->offset : NULL;
}

/* Notes the mapping of every file of an opened model (the file, or a set's shards) for the
 * SIGBUS line (fileio_guard_input). */
static void guard_model_files(const char *path, const sgfp4_model *m)
{
    if (!sgfp4_model_is_set(m))
        fileio_guard_input(path, model_file_base(m), (size_t)sgfp4_model_file_bytes(m));
    const char *slash = strrchr(path, '/');
    const int dir = slash ? (int)(slash - path) : 0;
    for (size_t k = 0; k < sgfp4_model_shard_count(m); k++) {
        const char *name = sgfp4_model_shard_name(m, k);
        char shard[8192];
        if (name && snprintf(shard, sizeof shard, "%.*s%s%s", dir, path, slash ? "/" : "",
                             name) < (int)sizeof shard) {
            const sgfp4_model *file = sgfp4_model_shard(m, k);
            fileio_guard_input(shard, model_file_base(file),
                               (size_t)sgfp4_model_file_bytes(file));
        }
    }
}

bool cli_model_open(const cli_args *a, const char *path, sgfp4_model **model)
{
    if (fileio_is_stream(path))
        return cli_error(a->command, "%s: %s", path, cli_stream_model_message), false;
    sgfp4_diag diag;
    sgfp4_model_open_options o;
    cli_model_open_options(a, &o);
    fileio_guard_input(path, NULL, 0); /* being opened: mapped, its header read */
    /* "-" that is not a stream is standard input redirected from a file: that file */
    const sgfp4_status s =
        sgfp4_model_open(strcmp(path, "-") == 0 ? "/dev/stdin" : path, model, &o, &diag);
    if (s != SGFP4_OK) {
        /* File-level messages of the library already start with the path. */
        const size_t n = strlen(path);
        const bool named = strncmp(diag.message, path, n) == 0 && diag.message[n] == ':';
        /* models are told by content: say so when a name promised what the bytes are not */
        const fileio_kind kind = fileio_sniff(path);
        const char *why = cli_ends_with(path, ".zst") && kind != FILEIO_KIND_ZSTD &&
                                  kind != FILEIO_KIND_UNREADABLE
                              ? " (no zstd magic: read as a plain safetensors file)"
                              : "";
        char text[2 * sizeof diag.message];
        cli_error(a->command, "%s%s%s%s [%s]", named ? "" : path, named ? "" : ": ",
                  cli_diag_text(s, diag.message, text, sizeof text), why, sgfp4_status_name(s));
        return false;
    }
    fileio_note_model(*model);
    guard_model_files(path, *model);
    return true;
}

void progress_bar_init(progress_bar *bar, const char *label)
{
    memset(bar, 0, sizeof *bar);
    bar->enabled = cli_verbosity > 0 && isatty(STDERR_FILENO);
    bar->label = label;
    bar->start = tool_now();
    bar->last = -1;
}

void progress_bar_update(void *user, const sgfp4_model_progress *p)
{
    progress_bar *bar = user;
    const double t = tool_now();
    const bool final = p->tensors_done == p->tensors_total;
    if (!bar->enabled || (!final && bar->last >= 0 && t - bar->last < 0.2))
        return;
    bar->last = t;
    const double frac = p->bytes_total ? (double)p->bytes_done / (double)p->bytes_total : 1.0;
    char cells[31];
    const int full = (int)(frac * 30.0);
    for (int k = 0; k < 30; k++)
        cells[k] = k < full ? '=' : k == full ? '>' : ' ';
    cells[30] = '\0';
    const double elapsed = t - bar->start;
    const double rate = elapsed > 0 ? (double)p->bytes_done / elapsed : 0;
    const double eta = rate > 0 ? (double)(p->bytes_total - p->bytes_done) / rate : 0;
    fprintf(stderr, "\r%s [%s] %zu/%zu tensors  %.1f/%.1f MB  %.1f MB/s  ETA %d:%02d \033[K",
            bar->label, cells, p->tensors_done, p->tensors_total, (double)p->bytes_done / 1e6,
            (double)p->bytes_total / 1e6, rate / 1e6, (int)eta / 60, (int)eta % 60);
    fflush(stderr);
}

void progress_bar_done(progress_bar *bar)
{
    if (bar->enabled && bar->last >= 0) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
}

void cli_print_json(json_t *root)
{
    json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    putchar('\n');
    json_decref(root);
}

const char *cli_dtype_name(sgfp4_dtype d)
{
    return d == SGFP4_DTYPE_F16 ? "f16" : d == SGFP4_DTYPE_BF16 ? "bf16" : "f32";
}
