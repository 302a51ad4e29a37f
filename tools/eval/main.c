/* sgfp4-eval: the model-level quality benchmark (docs/eval.md).
 *
 *   sgfp4-eval [options] MODEL.safetensors
 *   sgfp4-eval --from-llama2c CHECKPOINT.bin MODEL.safetensors
 *
 * Builds the float32 reference (sampled text, its log-probabilities, greedy text), then scores
 * every candidate (--candidate SPEC, repeatable; none: the standard table at 4.5, 3.5 and 2.5
 * bits per weight) and prints one Markdown (or --tsv) table.
 * SPDX-License-Identifier: MIT */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval.h"

#define MAX_CANDIDATES 64

/* The standard table: each baseline at its bits, then SGFP4 at the same bits on every tensor;
 * with calibration data also the baselines with GPTQ and SGFP4 with the importance file. */
static const struct {
    const char *spec, *label, *calibrated; /* calibrated: a spec to append the file's path to */
    const char *calibrated_label;
} standard_table[] = {
    {"f32", "f32", NULL, NULL},
    {"q4_0", "Q4_0-style (reimpl.)", "q4_0:gptq=", "Q4_0-style + GPTQ (reimpl.)"},
    {"affine:bits=4,group=64", "affine 4-bit g64 (MLX-style reimpl.)",
     "affine:bits=4,group=64,gptq=", "affine 4-bit g64 + GPTQ (MLX-style reimpl.)"},
    {"sgfp4:equal=q4_0", "SGFP4 (Q4_0's bits)", "sgfp4:equal=q4_0,importance=",
     "SGFP4 + importance (Q4_0's bits)"},
    {"affine:bits=3,group=64", "affine 3-bit g64 (MLX-style reimpl.)",
     "affine:bits=3,group=64,gptq=", "affine 3-bit g64 + GPTQ (MLX-style reimpl.)"},
    {"sgfp4:equal=affine3", "SGFP4 (affine 3-bit's bits)", "sgfp4:equal=affine3,importance=",
     "SGFP4 + importance (affine 3-bit's bits)"},
    {"affine:bits=2,group=64", "affine 2-bit g64 (MLX-style reimpl.)",
     "affine:bits=2,group=64,gptq=", "affine 2-bit g64 + GPTQ (MLX-style reimpl.)"},
    {"sgfp4:equal=affine2", "SGFP4 (affine 2-bit's bits)", "sgfp4:equal=affine2,importance=",
     "SGFP4 + importance (affine 2-bit's bits)"},
};

typedef struct args {
    const char *model, *tokenizer, *set, *imatrix_out, *check_text, *fisher, *from_llama2c;
    int sequences, length, greedy_steps, prompt, continuation, threads, tsv, print_text;
    int calib_sequences, calib_length, versus, force;
    uint64_t seed, calib_seed;
    int heads, kv_heads;
    const char *calibration;
    const char *specs[MAX_CANDIDATES];
    char standard_specs[MAX_CANDIDATES][1200]; /* the standard table's, when it is used */
    int spec_count;
} args;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sgfp4-eval [options] MODEL.safetensors\n"
            "       sgfp4-eval --from-llama2c CHECKPOINT.bin MODEL.safetensors\n"
            "  --from-llama2c BIN   write the llama2.c checkpoint BIN (legacy version 0, as in\n"
            "                       karpathy/tinyllamas) as MODEL.safetensors and exit\n"
            "  --candidate SPEC     f32 | q4_0 | affine[:bits=B,group=G] | file:QUANTIZED.safetensors\n"
            "                       | sgfp4[:bpw=X,metric=sse|row,importance=FILE,use=columns|rows|both,\n"
            "                         fit=best|fast|reference,profile=v1|v2,policy=rate|threshold,\n"
            "                         threshold=T]; ',label=TEXT' names a row.\n"
            "                       Repeatable; none: the standard table.\n"
            "  --calibration FILE   an importance file with input Hessians (--imatrix-out): the\n"
            "                       standard table adds the baselines with GPTQ and SGFP4 with it\n"
            "  --set S              which tensors are quantized: default (the library's default\n"
            "                       policy), all (every matrix), or a policy file (default: default)\n"
            "  --sequences N        sampled sequences (64)      --length T    tokens each (256)\n"
            "  --seed S             sampling seed (1)           --threads N   (all CPUs)\n"
            "  --greedy-steps G     greedy tokens from BOS (200)\n"
            "  --prompt P           prompt tokens of each sequence for greedy continuations (16)\n"
            "  --continuation C     greedy tokens after each prompt (48)\n"
            "  --versus K           count sequences where each candidate's KL is below candidate K's\n"
            "                       (1-based; default: the first q4_0 candidate)\n"
            "  --tokenizer FILE     llama2.c tokenizer (default: tokN.bin beside the model, N\n"
            "                       the vocabulary size, if there): prints the greedy texts\n"
            "  --check-text FILE    exit 1 unless the float32 greedy text equals FILE's contents\n"
            "  --imatrix-out FILE   write the importance file (Fisher factors, input Hessians) and exit\n"
            "  -f, --force          replace an existing output file (never an input)\n"
            "  --calib-sequences N  calibration sequences (32)  --calib-length T (256)\n"
            "  --calib-seed S       calibration sampling seed (1001)\n"
            "  --heads N --kv-heads N   when the model has no config metadata\n"
            "  --predict FILE       add the KL predicted by the importance file FILE (the Fisher\n"
            "                       factors of --imatrix-out) from each candidate's errors\n"
            "  --tsv                tab-separated output instead of Markdown\n");
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    const long v = strtol(s, &end, 10);
    if (*end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_args(int argc, char **argv, args *a)
{
    memset(a, 0, sizeof *a);
    a->set = "default";
    a->sequences = 64;
    a->length = 256;
    a->greedy_steps = 200;
    a->prompt = 16;
    a->continuation = 48;
    a->seed = 1;
    a->calib_sequences = 32;
    a->calib_length = 256;
    a->calib_seed = 1001;
    a->threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    static const struct option opts[] = {
        {"candidate", 1, 0, 'c'},      {"set", 1, 0, 'S'},         {"sequences", 1, 0, 'n'},
        {"length", 1, 0, 'l'},         {"seed", 1, 0, 's'},        {"threads", 1, 0, 't'},
        {"greedy-steps", 1, 0, 'g'},   {"prompt", 1, 0, 'p'},      {"continuation", 1, 0, 'C'},
        {"versus", 1, 0, 'v'},         {"tokenizer", 1, 0, 'k'},   {"check-text", 1, 0, 'x'},
        {"imatrix-out", 1, 0, 'i'},    {"calib-sequences", 1, 0, 'N'},
        {"calib-length", 1, 0, 'L'},   {"calib-seed", 1, 0, 'Z'},  {"heads", 1, 0, 'H'},
        {"kv-heads", 1, 0, 'K'},       {"tsv", 0, 0, 'T'},         {"help", 0, 0, 'h'},
        {"predict", 1, 0, 'P'},        {"from-llama2c", 1, 0, 'F'},  {"force", 0, 0, 'f'},
        {"calibration", 1, 0, 'B'},
        {0, 0, 0, 0}};
    int ch, bad = 0;
    while (!bad && (ch = getopt_long(argc, argv, "f", opts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            if (a->spec_count == MAX_CANDIDATES)
                bad = 1;
            else
                a->specs[a->spec_count++] = optarg;
            break;
        case 'S': a->set = optarg; break;
        case 'n': bad = parse_int(optarg, 1, 1 << 20, &a->sequences); break;
        case 'l': bad = parse_int(optarg, 2, 1 << 20, &a->length); break;
        case 's': a->seed = strtoull(optarg, NULL, 10); break;
        case 't': bad = parse_int(optarg, 0, 64, &a->threads); break;
        case 'g': bad = parse_int(optarg, 0, 1 << 20, &a->greedy_steps); break;
        case 'p': bad = parse_int(optarg, 1, 1 << 20, &a->prompt); break;
        case 'C': bad = parse_int(optarg, 0, 1 << 20, &a->continuation); break;
        case 'v': bad = parse_int(optarg, 1, MAX_CANDIDATES, &a->versus); break;
        case 'k': a->tokenizer = optarg; break;
        case 'x': a->check_text = optarg; break;
        case 'i': a->imatrix_out = optarg; break;
        case 'N': bad = parse_int(optarg, 1, 1 << 20, &a->calib_sequences); break;
        case 'L': bad = parse_int(optarg, 1, 1 << 20, &a->calib_length); break;
        case 'Z': a->calib_seed = strtoull(optarg, NULL, 10); break;
        case 'H': bad = parse_int(optarg, 1, 1 << 16, &a->heads); break;
        case 'K': bad = parse_int(optarg, 1, 1 << 16, &a->kv_heads); break;
        case 'T': a->tsv = 1; break;
        case 'P': a->fisher = optarg; break;
        case 'F': a->from_llama2c = optarg; break;
        case 'f': a->force = 1; break;
        case 'B': a->calibration = optarg; break;
        case 'h': usage(stdout); exit(0);
        default: bad = 1;
        }
    }
    if (bad || optind + 1 != argc) {
        usage(stderr);
        return -1;
    }
    if (a->threads == 0)
        a->threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    a->model = argv[optind];
    if (a->spec_count == 0)
        for (size_t i = 0; i < sizeof standard_table / sizeof standard_table[0]; i++) {
            snprintf(a->standard_specs[a->spec_count], sizeof a->standard_specs[0],
                     "%s%slabel=%s", standard_table[i].spec,
                     strchr(standard_table[i].spec, ':') ? "," : ":", standard_table[i].label);
            a->specs[a->spec_count] = a->standard_specs[a->spec_count];
            a->spec_count++;
            if (a->calibration && standard_table[i].calibrated) {
                snprintf(a->standard_specs[a->spec_count], sizeof a->standard_specs[0],
                         "%s%s,label=%s", standard_table[i].calibrated, a->calibration,
                         standard_table[i].calibrated_label);
                a->specs[a->spec_count] = a->standard_specs[a->spec_count];
                a->spec_count++;
            }
        }
    return 0;
}

static int compare_double(const void *x, const void *y)
{
    const double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* The p-quantile (nearest rank) of sorted v[0..n). */
static double quantile(const double *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t k = (size_t)(p * (double)n + 0.999999);
    k = k < 1 ? 1 : k > n ? n : k;
    return v[k - 1];
}

static void print_header(const args *a, int versus_set)
{
    const char *cols[] = {"candidate", "bits/weight", "mean KL", "KL s.e.", "top-1 agree",
                          "PPL (f32 text)", "greedy match", "prompted match", "attn row err p50",
                          "p99", "max", "rows > 0.15", "rel-L2 (set)", "KL below versus",
                          "KL / versus", "s.e.", "predicted KL"};
    const int n = versus_set ? 16 : 13;
    for (int i = 0; i < n; i++)
        printf(a->tsv ? (i ? "\t%s" : "%s") : "| %s ", cols[i]);
    if (a->fisher)
        printf(a->tsv ? "\t%s" : "| %s ", cols[16]);
    printf(a->tsv ? "\n" : "|\n");
    if (!a->tsv) {
        for (int i = 0; i < n + (a->fisher != NULL); i++)
            printf(i < 1 ? "|---" : "|---:");
        printf("|\n");
    }
}

/* The standard error of the mean of v[0..n). */
static double standard_error(const double *v, int n)
{
    double sum = 0, squares = 0;
    for (int k = 0; k < n; k++)
        sum += v[k];
    const double mean = sum / n;
    for (int k = 0; k < n; k++)
        squares += (v[k] - mean) * (v[k] - mean);
    return n > 1 ? sqrt(squares / ((double)n * (n - 1))) : 0;
}

/* The ratio of the mean KLs a / b over the same sequences and its standard error (the delta
 * method on the paired differences a_k - ratio * b_k). */
static double kl_ratio(const double *a, const double *b, int n, double *se)
{
    double sa = 0, sb = 0, squares = 0;
    for (int k = 0; k < n; k++)
        sa += a[k], sb += b[k];
    const double ratio = sb > 0 ? sa / sb : 0;
    for (int k = 0; k < n; k++)
        squares += (a[k] - ratio * b[k]) * (a[k] - ratio * b[k]);
    *se = n > 1 && sb > 0 ? sqrt(squares / ((double)n * (n - 1))) / (sb / n) : 0;
    return ratio;
}

static void cell(const args *a, int first, const char *fmt, double v)
{
    char buf[64];
    snprintf(buf, sizeof buf, fmt, v);
    printf(a->tsv ? (first ? "%s" : "\t%s") : "| %s ", buf);
}

static int print_text(const eval_tokenizer *tok, const char *label, const int *tokens, int n)
{
    char *text = calloc(1, 1 << 16);
    if (!text)
        return -1;
    eval_tokenizer_text(tok, tokens, n, text, 1 << 16);
    fprintf(stderr, "greedy text, %s:\n%s\n\n", label, text);
    free(text);
    return 0;
}

static int check_text(const args *a, const eval_tokenizer *tok, const eval_reference *ref)
{
    FILE *f = fopen(a->check_text, "rb");
    char *want = calloc(1, 1 << 16), *got = calloc(1, 1 << 16);
    int rc = f && want && got ? 0 : -1;
    if (rc == 0) {
        const size_t n = fread(want, 1, (1 << 16) - 1, f);
        want[n] = 0;
        eval_tokenizer_text(tok, ref->greedy, ref->greedy_steps + 1, got, 1 << 16);
        rc = strcmp(want, got) == 0 ? 0 : -1;
        fprintf(stderr, "sgfp4-eval: float32 greedy text %s %s\n",
                rc == 0 ? "matches" : "DIFFERS from", a->check_text);
    }
    if (f)
        fclose(f);
    free(want);
    free(got);
    return rc;
}

static int run_candidates(const args *a, const eval_weights *reference, const llama_config *c,
                          const eval_reference *ref, const eval_tokenizer *tok)
{
    eval_candidate cands[MAX_CANDIDATES];
    for (int i = 0; i < a->spec_count; i++)
        if (eval_candidate_parse(a->specs[i], &cands[i]) != 0) {
            fprintf(stderr, "sgfp4-eval: bad candidate '%s'\n", a->specs[i]);
            return -1;
        }
    int versus = a->versus - 1;
    for (int i = 0; versus < 0 && i < a->spec_count; i++)
        if (cands[i].kind == KIND_Q4_0)
            versus = i;
    if (versus >= a->spec_count)
        versus = -1;
    double *versus_kl = NULL;
    /* The versus candidate is scored first, so every row can be compared with it. */
    int order[MAX_CANDIDATES], n = 0;
    if (versus >= 0)
        order[n++] = versus;
    for (int i = 0; i < a->spec_count; i++)
        if (i != versus)
            order[n++] = i;
    eval_score scores[MAX_CANDIDATES];
    eval_quantized stats[MAX_CANDIDATES];
    memset(scores, 0, sizeof scores);
    memset(stats, 0, sizeof stats);
    eval_weights fisher = {0};
    if (a->fisher && eval_importance_load(a->fisher, a->seed, a->sequences, &fisher) != 0)
        return -1;
    const eval_set set = {a->model, a->set, a->fisher ? &fisher : NULL, a->fisher, a->seed,
                          a->sequences};
    int rc = 0;
    for (int k = 0; k < n && rc == 0; k++) {
        const int i = order[k];
        eval_quantized *q = &stats[i];
        llama_model m;
        memset(&m, 0, sizeof m);
        rc = eval_candidate_build(&cands[i], &set, reference, q);
        if (rc == 0)
            rc = llama_bind(c, &q->weights, &m);
        const eval_run run = {&m, a->threads};
        if (rc == 0)
            rc = eval_score_model(&run, ref, &scores[i]);
        if (rc == 0 && tok && a->print_text) {
            int *g = calloc((size_t)ref->greedy_steps + 1, sizeof *g);
            llama_state *s = llama_state_create(c);
            if (g && s) {
                g[0] = ref->greedy[0];
                eval_greedy(&m, s, g, 1, ref->greedy_steps, g + 1);
                print_text(tok, cands[i].label, g, ref->greedy_steps + 1);
            }
            free(g);
            llama_state_free(s);
        }
        free(m.rms_att);
        free(m.rms_ffn);
        for (int sl = 0; sl < SLOT_COUNT; sl++)
            free(m.w[sl]);
        eval_weights_free(&q->weights);
        if (rc != 0)
            fprintf(stderr, "sgfp4-eval: candidate '%s' failed\n", cands[i].label);
    }
    if (rc == 0) {
        versus_kl = versus >= 0 ? scores[versus].sequence_kl : NULL;
        print_header(a, versus_kl != NULL);
        for (int i = 0; i < a->spec_count; i++) {
            const eval_score *s = &scores[i];
            eval_quantized *q = &stats[i];
            qsort(q->attention_row_error, q->attention_rows, sizeof(double), compare_double);
            size_t above = 0;
            for (size_t r = 0; r < q->attention_rows; r++)
                above += q->attention_row_error[r] > 0.15;
            printf(a->tsv ? "%s" : "| %s ", cands[i].label);
            cell(a, 0, "%.4f", q->weights_in_set ? q->bits / (double)q->weights_in_set : 0);
            cell(a, 0, "%.4f", s->mean_kl);
            cell(a, 0, "%.4f", standard_error(s->sequence_kl, ref->sequences));
            cell(a, 0, "%.4f", s->top1);
            cell(a, 0, "%.3f", s->perplexity);
            cell(a, 0, "%.0f", s->greedy_match);
            cell(a, 0, "%.1f", s->prompted_match);
            cell(a, 0, "%.3f", quantile(q->attention_row_error, q->attention_rows, 0.5));
            cell(a, 0, "%.3f", quantile(q->attention_row_error, q->attention_rows, 0.99));
            cell(a, 0, "%.3f", quantile(q->attention_row_error, q->attention_rows, 1.0));
            cell(a, 0, "%.0f", (double)above);
            cell(a, 0, "%.4f", q->norm > 0 ? sqrt(q->sse / q->norm) : 0);
            if (versus_kl) {
                int below = 0;
                for (int k = 0; k < ref->sequences; k++)
                    below += s->sequence_kl[k] < versus_kl[k];
                char buf[32];
                snprintf(buf, sizeof buf, "%d/%d", below, ref->sequences);
                printf(a->tsv ? "\t%s" : "| %s ", buf);
                double se;
                cell(a, 0, "%.3f", kl_ratio(s->sequence_kl, versus_kl, ref->sequences, &se));
                cell(a, 0, "%.3f", se);
            }
            if (a->fisher)
                cell(a, 0, "%.4f", q->predicted_kl);
            printf(a->tsv ? "\n" : "|\n");
        }
        printf(a->tsv ? "" : "\n");
        printf("%s%d sequences x %d tokens (seed %llu), greedy %d from BOS, %d after %d-token "
               "prompts; set: %s; tensors in set: %llu (%llu weights)\n\n",
               a->tsv ? "# " : "", ref->sequences, ref->length, (unsigned long long)a->seed,
               ref->greedy_steps, ref->continuation, ref->prompt, a->set,
               (unsigned long long)stats[0].tensors,
               (unsigned long long)stats[0].weights_in_set);
        fflush(stdout);
    }
    for (int i = 0; i < a->spec_count; i++) {
        free(scores[i].sequence_kl);
        eval_quantized_free(&stats[i]);
    }
    eval_weights_free(&fisher);
    return rc;
}

/* Notes every file the command line names for reading (the model, the tokenizer, the
 * reference text, the importance file, a policy file, the candidates' files). */
static void note_inputs(const args *a)
{
    eval_note_input(a->model);
    eval_note_input(a->tokenizer);
    eval_note_input(a->check_text);
    eval_note_input(a->fisher);
    eval_note_input(a->calibration);
    if (strcmp(a->set, "default") != 0 && strcmp(a->set, "all") != 0)
        eval_note_input(a->set);
    for (int i = 0; i < a->spec_count; i++) {
        const char *spec = a->specs[i], *file = NULL;
        if (strncmp(spec, "file:", 5) == 0)
            file = spec + 5;
        else if ((file = strstr(spec, "importance=")))
            file += strlen("importance=");
        else if ((file = strstr(spec, "gptq=")))
            file += strlen("gptq=");
        if (file) {
            char path[4096];
            snprintf(path, sizeof path, "%.*s", (int)strcspn(file, ","), file);
            eval_note_input(path);
        }
    }
}

/* llama2.c's tokenizer beside the model: tokN.bin for a vocabulary of N (tok512.bin,
 * tok4096.bin). 1 and its path in `path`, or 0 if there is none. */
static int find_tokenizer(const char *model, int vocab, char *path, size_t cap)
{
    const char *slash = strrchr(model, '/');
    const int dir = slash ? (int)(slash - model + 1) : 0;
    if (snprintf(path, cap, "%.*stok%d.bin", dir, model, vocab) >= (int)cap)
        return 0;
    return access(path, R_OK) == 0;
}

int main(int argc, char **argv)
{
    args a;
    if (parse_args(argc, argv, &a) != 0)
        return 2;
    if (a.from_llama2c)
        return eval_convert_llama2c(a.from_llama2c, a.model, a.force) == 0 ? 0 : 1;
    /* An output is checked (never an input, an existing file only with -f) before any
     * work. */
    sgfp4_model_output *imatrix = NULL;
    if (a.imatrix_out) {
        note_inputs(&a);
        if (!(imatrix = eval_output_open(a.imatrix_out, a.force)))
            return 1;
    }
    eval_weights reference;
    char *config_json = NULL;
    if (eval_weights_load(a.model, &reference, &config_json) != 0) {
        sgfp4_model_output_close(imatrix);
        return 1;
    }
    llama_config c;
    llama_model m;
    memset(&m, 0, sizeof m);
    int rc = llama_config_read(config_json, &reference, &c);
    free(config_json);
    if (rc == 0 && a.heads)
        c.heads = a.heads;
    if (rc == 0 && a.kv_heads)
        c.kv_heads = a.kv_heads;
    if (rc == 0)
        rc = llama_bind(&c, &reference, &m);
    const eval_run run = {&m, a.threads};
    eval_tokenizer tok = {0, NULL};
    char beside[4096];
    if (rc == 0 && !a.tokenizer && find_tokenizer(a.model, c.vocab, beside, sizeof beside))
        a.tokenizer = beside;
    if (rc == 0 && a.tokenizer)
        rc = eval_tokenizer_load(a.tokenizer, c.vocab, &tok);
    if (rc == 0 && a.imatrix_out) {
        rc = a.calib_length <= c.seq_len
                 ? eval_imatrix_write(&run, &c, a.calib_seed, a.calib_sequences, a.calib_length,
                                      imatrix, a.imatrix_out)
                 : -1;
    } else if (rc == 0) {
        eval_reference ref;
        rc = eval_reference_build(&run, a.seed, a.sequences, a.length, a.greedy_steps,
                                  a.prompt, a.continuation, &ref);
        if (rc != 0)
            fprintf(stderr, "sgfp4-eval: lengths do not fit the model (seq_len %d)\n",
                    c.seq_len);
        a.print_text = a.tokenizer != NULL;
        if (rc == 0 && a.tokenizer)
            print_text(&tok, "float32", ref.greedy, ref.greedy_steps + 1);
        if (rc == 0 && a.check_text)
            rc = tok.pieces ? check_text(&a, &tok, &ref) : -1;
        if (rc == 0)
            rc = run_candidates(&a, &reference, &c, &ref, a.tokenizer ? &tok : NULL);
        eval_reference_free(&ref);
    }
    free(m.rms_att);
    free(m.rms_ffn);
    for (int sl = 0; sl < SLOT_COUNT; sl++)
        free(m.w[sl]);
    eval_tokenizer_free(&tok);
    eval_weights_free(&reference);
    sgfp4_model_output_close(imatrix); /* removes the temporary file of a failed run */
    return rc == 0 ? 0 : 1;
}
