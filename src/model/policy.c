/* Per-tensor policy: the default for transformer checkpoints, and JSON policy files of glob
 * rules (first match wins) that skip tensors or set encoder options. Format: docs/model.md.
 * SPDX-License-Identifier: MIT */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/options.h"
#include "common/results.h"
#include "model/model_internal.h"

enum {
    SET_PROFILE = 1, SET_BPW = 2, SET_POLICY = 4, SET_THRESHOLD = 8, SET_DELTA = 16, SET_FIT = 32,
    SET_METRIC = 64
};
enum { ACTION_DEFAULT = -1, ACTION_SKIP = 0, ACTION_QUANTIZE = 1 };

typedef struct policy_rule {
    char **globs;
    size_t glob_count;
    int action;
    unsigned set;
    sgfp4_encode_options values; /* only the fields flagged in `set` */
} policy_rule;

struct sgfp4_model_policy {
    sgfp4_encode_options defaults;
    sgfp4_model_rates rates;
    int embeddings;
    uint64_t min_elements;
    policy_rule *rules;
    size_t rule_count;
};

#define DEFAULT_MIN_ELEMENTS 1024u

sgfp4_status sgfp4_model_policy_create(sgfp4_model_policy **out)
{
    if (!out)
        return SGFP4_ERR_ARGUMENT;
    sgfp4_model_policy *p = calloc(1, sizeof *p);
    if (!p)
        return SGFP4_ERR_NOMEM;
    sgfp4_encode_options_init(&p->defaults);
    p->embeddings = 1;
    p->rates = SGFP4_RATES_AUTO;
    p->min_elements = DEFAULT_MIN_ELEMENTS;
    *out = p;
    return SGFP4_OK;
}

sgfp4_encode_options *sgfp4_model_policy_defaults(sgfp4_model_policy *p)
{
    return p ? &p->defaults : NULL;
}

void sgfp4_model_policy_set_embeddings(sgfp4_model_policy *p, int quantize)
{
    if (p)
        p->embeddings = quantize != 0;
}

sgfp4_status sgfp4_model_policy_set_rates(sgfp4_model_policy *p, sgfp4_model_rates rates)
{
    if (!p || (rates != SGFP4_RATES_UNIFORM && rates != SGFP4_RATES_SENSITIVITY &&
               rates != SGFP4_RATES_AUTO))
        return SGFP4_ERR_ARGUMENT;
    p->rates = rates;
    return SGFP4_OK;
}

sgfp4_model_rates sgfp4_model_policy_rates(const sgfp4_model_policy *p) { return p->rates; }

void sgfp4_model_policy_free(sgfp4_model_policy *p)
{
    if (!p)
        return;
    for (size_t r = 0; r < p->rule_count; r++) {
        for (size_t g = 0; g < p->rules[r].glob_count; g++)
            free(p->rules[r].globs[g]);
        free(p->rules[r].globs);
    }
    free(p->rules);
    free(p);
}

#define POLICY_FAIL(diag, ...)                                                                \
    sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "policy: " __VA_ARGS__)

/* Reads the encoder fields of `obj` (a rule or "defaults") into *o, flags into *set.
 * `where` names the object in messages. Other keys are left to the caller. */
static sgfp4_status parse_options(json_t *obj, const char *where, sgfp4_encode_options *o,
                                  unsigned *set, sgfp4_diag *diag)
{
    const json_t *v;
    if ((v = json_object_get(obj, "profile"))) {
        const char *s = json_string_value(v);
        if (!s || (strcmp(s, "v1") != 0 && strcmp(s, "v2") != 0))
            return POLICY_FAIL(diag, "%s: profile must be \"v1\" or \"v2\"", where);
        o->profile = s[1] == '1' ? SGFP4_PROFILE_V1 : SGFP4_PROFILE_V2;
        *set |= SET_PROFILE;
    }
    /* The ranges are the encoder's (sgfp4_encode refuses anything outside them), checked
     * here so that a bad file fails when it is read, naming the field. bpw: at most the 32
     * bits of a float32, the range of the CLI's --bpw too (the encoder itself takes 64). */
    if ((v = json_object_get(obj, "bpw"))) {
        if (!json_is_number(v) || !(json_number_value(v) > 0 && json_number_value(v) <= 32))
            return POLICY_FAIL(diag, "%s: bpw must be a number in (0, 32]", where);
        o->target_bpw = json_number_value(v);
        *set |= SET_BPW;
    }
    if ((v = json_object_get(obj, "policy"))) {
        const char *s = json_string_value(v);
        if (!s || (strcmp(s, "rate") != 0 && strcmp(s, "threshold") != 0))
            return POLICY_FAIL(diag, "%s: policy must be \"rate\" or \"threshold\"", where);
        o->policy = s[0] == 'r' ? SGFP4_POLICY_RATE : SGFP4_POLICY_THRESHOLD;
        *set |= SET_POLICY;
    }
    if ((v = json_object_get(obj, "threshold"))) {
        if (!json_is_number(v) || !(json_number_value(v) > 0 && json_number_value(v) <= 1e12))
            return POLICY_FAIL(diag, "%s: threshold must be a number in (0, 1e12]", where);
        o->threshold = json_number_value(v);
        *set |= SET_THRESHOLD;
    }
    if ((v = json_object_get(obj, "delta"))) {
        if (!json_is_number(v) || !(json_number_value(v) >= 0 && json_number_value(v) <= 1e6))
            return POLICY_FAIL(diag, "%s: delta must be a number in [0, 1e6]", where);
        o->delta = json_number_value(v);
        *set |= SET_DELTA;
    }
    if ((v = json_object_get(obj, "fit"))) {
        const char *s = json_string_value(v);
        if (!s || (strcmp(s, "best") != 0 && strcmp(s, "fast") != 0 &&
                   strcmp(s, "reference") != 0))
            return POLICY_FAIL(diag, "%s: fit must be \"best\", \"fast\" or \"reference\"", where);
        o->fit = s[0] == 'b' ? SGFP4_FIT_BEST : s[0] == 'f' ? SGFP4_FIT_FAST : SGFP4_FIT_REFERENCE;
        *set |= SET_FIT;
    }
    if ((v = json_object_get(obj, "metric"))) {
        const char *s = json_string_value(v);
        if (!s || (strcmp(s, "sse") != 0 && strcmp(s, "row") != 0))
            return POLICY_FAIL(diag, "%s: metric must be \"sse\" or \"row\"", where);
        o->metric = s[0] == 's' ? SGFP4_METRIC_SSE : SGFP4_METRIC_ROW_RELATIVE;
        *set |= SET_METRIC;
    }
    return SGFP4_OK;
}

static sgfp4_status check_keys(json_t *obj, const char *where, const char *const *known,
                               sgfp4_diag *diag)
{
    const char *key;
    json_t *value;
    json_object_foreach(obj, key, value) {
        bool ok = false;
        for (const char *const *k = known; *k && !ok; k++)
            ok = strcmp(*k, key) == 0;
        if (!ok)
            return POLICY_FAIL(diag, "%s: unknown key '%s'", where, key);
    }
    return SGFP4_OK;
}

static const char *const option_keys[] = {"profile", "bpw", "policy", "threshold",
                                          "delta",   "fit", "metric", NULL};
static const char *const rule_keys[] = {"match", "action", "profile", "bpw", "policy",
                                        "threshold", "delta", "fit", "metric", NULL};
static const char *const top_keys[] = {"version", "defaults", "embeddings", "min_elements",
                                       "rates", "rules", NULL};

static sgfp4_status parse_rule(json_t *obj, size_t index, policy_rule *r, sgfp4_diag *diag)
{
    char where[32];
    snprintf(where, sizeof where, "rules[%zu]", index);
    if (!json_is_object(obj))
        return POLICY_FAIL(diag, "%s is not an object", where);
    sgfp4_status s = check_keys(obj, where, rule_keys, diag);
    if (s != SGFP4_OK)
        return s;
    json_t *match = json_object_get(obj, "match");
    const size_t n = json_is_array(match) ? json_array_size(match) : json_is_string(match) ? 1 : 0;
    if (n == 0)
        return POLICY_FAIL(diag, "%s: match must be a glob or a non-empty array of globs", where);
    r->globs = calloc(n, sizeof *r->globs);
    if (!r->globs)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    for (size_t g = 0; g < n; g++) {
        const char *glob = json_string_value(json_is_array(match) ? json_array_get(match, g) : match);
        if (!glob)
            return POLICY_FAIL(diag, "%s: match[%zu] is not a string", where, g);
        if (!(r->globs[r->glob_count++] = strdup(glob)))
            return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    }
    r->action = ACTION_DEFAULT;
    const json_t *action = json_object_get(obj, "action");
    if (action) {
        const char *a = json_string_value(action);
        if (!a || (strcmp(a, "skip") != 0 && strcmp(a, "quantize") != 0))
            return POLICY_FAIL(diag, "%s: action must be \"skip\" or \"quantize\"", where);
        r->action = a[0] == 's' ? ACTION_SKIP : ACTION_QUANTIZE;
    }
    return parse_options(obj, where, &r->values, &r->set, diag);
}

static sgfp4_status parse_policy(sgfp4_model_policy *p, json_t *root, sgfp4_diag *diag)
{
    if (!json_is_object(root))
        return POLICY_FAIL(diag, "the document is not a JSON object");
    sgfp4_status s = check_keys(root, "top level", top_keys, diag);
    if (s != SGFP4_OK)
        return s;
    const json_t *version = json_object_get(root, "version");
    if (version && (!json_is_integer(version) || json_integer_value(version) != 1))
        return POLICY_FAIL(diag, "version must be 1");
    json_t *defaults = json_object_get(root, "defaults");
    if (defaults) {
        unsigned set = 0;
        if (!json_is_object(defaults))
            return POLICY_FAIL(diag, "defaults is not an object");
        if ((s = check_keys(defaults, "defaults", option_keys, diag)) != SGFP4_OK ||
            (s = parse_options(defaults, "defaults", &p->defaults, &set, diag)) != SGFP4_OK)
            return s;
    }
    const json_t *emb = json_object_get(root, "embeddings");
    if (emb) {
        const char *e = json_string_value(emb);
        if (!e || (strcmp(e, "skip") != 0 && strcmp(e, "quantize") != 0))
            return POLICY_FAIL(diag, "embeddings must be \"skip\" or \"quantize\"");
        p->embeddings = e[0] == 'q';
    }
    const json_t *rates = json_object_get(root, "rates");
    if (rates) {
        const char *r = json_string_value(rates);
        if (!r || (strcmp(r, "uniform") != 0 && strcmp(r, "sensitivity") != 0 &&
                   strcmp(r, "auto") != 0))
            return POLICY_FAIL(diag, "rates must be \"auto\", \"uniform\" or \"sensitivity\"");
        p->rates = r[0] == 'u'   ? SGFP4_RATES_UNIFORM
                   : r[0] == 's' ? SGFP4_RATES_SENSITIVITY
                                 : SGFP4_RATES_AUTO;
    }
    const json_t *min = json_object_get(root, "min_elements");
    if (min) {
        if (!json_is_integer(min) || json_integer_value(min) < 1)
            return POLICY_FAIL(diag, "min_elements must be a positive integer");
        p->min_elements = (uint64_t)json_integer_value(min);
    }
    json_t *rules = json_object_get(root, "rules");
    if (rules) {
        if (!json_is_array(rules))
            return POLICY_FAIL(diag, "rules is not an array");
        const size_t n = json_array_size(rules);
        p->rules = calloc(n ? n : 1, sizeof *p->rules);
        if (!p->rules)
            return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
        for (size_t r = 0; r < n; r++) {
            p->rule_count++;
            if ((s = parse_rule(json_array_get(rules, r), r, &p->rules[r], diag)) != SGFP4_OK)
                return s;
        }
    }
    return SGFP4_OK;
}

sgfp4_status sgfp4_model_policy_parse(const char *json, size_t size, sgfp4_model_policy **out,
                                      sgfp4_diag *diag)
{
    sgfp4_diag_clear(diag);
    if (!out || (!json && size))
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1, "NULL argument");
    *out = NULL;
    json_error_t err;
    json_t *root = json_loadb(json, size, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, err.position, -1, -1,
                          "policy: line %d, column %d: %s", err.line, err.column, err.text);
    sgfp4_model_policy *p = NULL;
    sgfp4_status s = sgfp4_model_policy_create(&p);
    if (s == SGFP4_OK)
        s = parse_policy(p, root, diag);
    json_decref(root);
    if (s != SGFP4_OK) {
        sgfp4_model_policy_free(p);
        return s;
    }
    *out = p;
    return SGFP4_OK;
}

static bool contains(const char *name, const char *word) { return strstr(name, word) != NULL; }

static bool looks_like_embedding(const char *name)
{
    return contains(name, "embed") || contains(name, "wte") || contains(name, "wpe") ||
           strncmp(name, "lm_head", 7) == 0 || strcmp(name, "output.weight") == 0;
}

static bool looks_like_norm(const char *name)
{
    return contains(name, "norm") || contains(name, "ln_") || contains(name, ".ln");
}

/* The companions of already-quantized weights (FP8 block scales `weight_scale_inv`,
 * `weight_scale`, `input_scale`, GPTQ/AWQ `scales` and `qzeros`, bitsandbytes `absmax`):
 * their last name component says so. Quantizing them would change every weight they scale. */
static bool looks_like_quant_companion(const char *name)
{
    const char *dot = strrchr(name, '.');
    const char *last = dot ? dot + 1 : name;
    return contains(last, "scale") || contains(last, "absmax") || contains(last, "zero");
}

/* The encoder settings a policy decides, from the options they were decided in. */
static void settings_from(sgfp4_model_decision *d, const sgfp4_encode_options *o)
{
    d->profile = o->profile;
    d->policy = o->policy;
    d->target_bpw = o->target_bpw;
    d->threshold = o->threshold;
    d->delta = o->delta;
    d->fit = o->fit;
    d->metric = o->metric;
}

static void apply(sgfp4_encode_options *o, const policy_rule *r)
{
    if (r->set & SET_PROFILE) o->profile = r->values.profile;
    if (r->set & SET_BPW) o->target_bpw = r->values.target_bpw;
    if (r->set & SET_POLICY) o->policy = r->values.policy;
    if (r->set & SET_THRESHOLD) o->threshold = r->values.threshold;
    if (r->set & SET_DELTA) o->delta = r->values.delta;
    if (r->set & SET_FIT) o->fit = r->values.fit;
    if (r->set & SET_METRIC) o->metric = r->values.metric;
}

/* True when the zero-padded 64x64 grid of a matrix is more than 1.5 times its area (e.g.
 * 32x64: 2x). The padding costs container bytes but carries nothing, so such a tensor
 * cannot reach useful quality at the usual rates (the 32x64 attention matrices of a small
 * model land at rel-L2 ~0.5 at 4.5 bits per weight): pass it through by default. */
static int mostly_padding(const sgfp4_model_tensor *t)
{
    const uint64_t rows = t->shape[0], cols = t->shape[1];
    if (rows > (UINT64_C(1) << 30) || cols > (UINT64_C(1) << 30))
        return 0; /* beyond any real matrix; keeps the arithmetic below 2^64 */
    const uint64_t padded = ((rows + 63) / 64 * 64) * ((cols + 63) / 64 * 64);
    return padded * 2 > rows * cols * 3;
}

/* True when the shape is one the decision can use: present for its rank, within the
 * reader's rank limit, and multiplying out to `elements` (a caller may pass any view). */
static bool shape_matches(const sgfp4_model_tensor *t)
{
    if (t->rank > SGFP4_MODEL_MAX_RANK || (t->rank && !t->shape))
        return false;
    uint64_t product = 1;
    for (size_t k = 0; k < t->rank; k++) {
        if (t->shape[k] && product > UINT64_MAX / t->shape[k])
            return false;
        product *= t->shape[k];
    }
    return product == t->elements;
}

/* The first rule whose glob matches the tensor's name, or NULL. */
static const policy_rule *first_rule(const sgfp4_model_policy *p, const char *name,
                                     size_t *index)
{
    for (size_t r = 0; r < p->rule_count; r++)
        for (size_t g = 0; g < p->rules[r].glob_count; g++)
            if (fnmatch(p->rules[r].globs[g], name, 0) == 0) {
                *index = r;
                return &p->rules[r];
            }
    return NULL;
}

bool sgfp4_model_policy_rate_is_default(const sgfp4_model_policy *p,
                                        const sgfp4_model_tensor *t)
{
    size_t index;
    const policy_rule *rule = first_rule(p, t->name, &index);
    return !rule || !(rule->set & SET_BPW);
}

/* The decision for tensor t (policy and tensor not NULL) into the whole struct *d. */
static void decide(const sgfp4_model_policy *p, const sgfp4_model_tensor *t,
                   sgfp4_model_decision *d)
{
    sgfp4_encode_options o = p->defaults;
    if (o.profile == SGFP4_PROFILE_AUTO)
        o.profile = SGFP4_PROFILE_V2;
    settings_from(d, &o);
    size_t index = 0;
    const policy_rule *rule = first_rule(p, t->name, &index);
    if (!sgfp4_st_dtype_is_quantizable(t->dtype)) {
        snprintf(d->reason, sizeof d->reason, "dtype %s cannot be quantized",
                 sgfp4_st_dtype_name(t->dtype));
        return;
    }
    if (!shape_matches(t)) {
        snprintf(d->reason, sizeof d->reason, "the shape does not multiply out to %llu elements",
                 (unsigned long long)t->elements);
        return;
    }
    if (t->elements == 0) { /* also every shape with a 0 dimension, the last one included */
        snprintf(d->reason, sizeof d->reason, "empty tensor");
        return;
    }
    if (rule && rule->action == ACTION_SKIP) {
        snprintf(d->reason, sizeof d->reason, "rule %zu (%s): skip", index, rule->globs[0]);
        return;
    }
    if (!rule || rule->action != ACTION_QUANTIZE) {
        const char *why = t->rank != 2                   ? "not a matrix"
                          : t->elements < p->min_elements ? "tiny"
                          : mostly_padding(t)             ? "mostly padding"
                          : looks_like_norm(t->name)      ? "a norm"
                          : looks_like_quant_companion(t->name) ? "a quantization scale"
                          : (!p->embeddings && looks_like_embedding(t->name)) ? "an embedding"
                                                                              : NULL;
        if (why) {
            snprintf(d->reason, sizeof d->reason, "default: %s", why);
            return;
        }
    }
    d->quantize = true;
    sgfp4_model_tensor_matrix(t, &d->rows, &d->cols); /* elements > 0: checked above */
    if (rule) {
        apply(&o, rule);
        settings_from(d, &o);
        snprintf(d->reason, sizeof d->reason, "rule %zu (%s)", index, rule->globs[0]);
    } else {
        snprintf(d->reason, sizeof d->reason, "default: %s",
                 looks_like_embedding(t->name) ? "embedding" : "matrix");
    }
    /* Below the cheapest all-FP4 tree (16x16 leaves: 4.125 bits per weight) part of the
     * weights must be ternary; the model-level benchmark shows that to break a small model
     * (stories260K: mean KL 0.72 at 4.0 against 0.16 at 4.5). */
    if (d->profile != SGFP4_PROFILE_V1 && d->policy == SGFP4_POLICY_RATE &&
        d->target_bpw < 4.125)
        snprintf(d->warning, sizeof d->warning,
                 "%.3g bits per weight is below 4.125: part of the weights will be ternary, "
                 "which can break the model (encoder.md, \"Low rates\")",
                 d->target_bpw);
}

sgfp4_status sgfp4_model_policy_decide(const sgfp4_model_policy *p, const sgfp4_model_tensor *t,
                                       sgfp4_model_decision *decision)
{
    if (!decision || !SGFP4_RESULT_KNOWN(sgfp4_model_decision, decision))
        return SGFP4_ERR_ARGUMENT;
    sgfp4_model_decision d;
    memset(&d, 0, sizeof d);
    const bool given = p && t && t->name;
    if (given)
        decide(p, t, &d);
    else
        snprintf(d.reason, sizeof d.reason, "no policy or no tensor");
    sgfp4_result_store(decision, &d);
    return given ? SGFP4_OK : SGFP4_ERR_ARGUMENT;
}

sgfp4_status sgfp4_model_decision_options(const sgfp4_model_policy *p,
                                          const sgfp4_model_decision *d,
                                          sgfp4_encode_options *o)
{
    sgfp4_encode_options full;
    if (!d || !o || !SGFP4_RESULT_KNOWN(sgfp4_model_decision, d) ||
        SGFP4_OPTIONS_READ(sgfp4_encode_options, o, &full) != SGFP4_OK)
        return SGFP4_ERR_ARGUMENT;
    /* The caller's options may be an older, shorter layout: only its struct_size bytes. The
     * decision's fields read here are all in its first layout. */
    const size_t size = o->struct_size;
    if (p)
        full = p->defaults;
    else
        sgfp4_encode_options_init(&full);
    full.struct_size = size;
    full.profile = d->profile;
    full.policy = d->policy;
    full.target_bpw = d->target_bpw;
    full.threshold = d->threshold;
    full.delta = d->delta;
    full.fit = d->fit;
    full.metric = d->metric;
    memcpy(o, &full, size);
    return SGFP4_OK;
}
