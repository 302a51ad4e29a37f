/* Rates by sensitivity (docs/model.md, "Rates by sensitivity"): a first pass over the model
 * measures each taking-part tensor's rate-distortion curve (its analysis and pruning at a
 * grid of multipliers, what rate control would choose at each) and its sensitivity, the
 * means of its Fisher factors, which turn the encoder's normalized error into the KL
 * divergence it is predicted to cause. The bits go where they lower the predicted KL most:
 * one multiplier Lambda for the whole model, each tensor at its own lambda = Lambda / scale
 * (equal slopes of KL against bytes), Lambda chosen so that the tensors' bytes add up to the
 * most that stays within the total their own targets allow. Each tensor's target is then
 * what its curve gives there.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "encode/rate_control.h"
#include "model/model_internal.h"

/* What the first pass keeps per tensor: a few hundred bytes. */
typedef struct curve {
    const sgfp4_model_tensor *tensor;
    double weights;                       /* its elements */
    double scale;                         /* mean E[g^2] times mean E[x^2] */
    double lambda[SGFP4_CURVE_POINTS];
    uint64_t bytes[SGFP4_CURVE_POINTS];
} curve;

static double mean(const float *v, uint64_t n)
{
    double sum = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += v[i];
    return sum / (double)n;
}

/* The tensor's bytes at multiplier lambda: its curve, linear between points, its finest or
 * coarsest trees beyond them. */
static double bytes_at(const curve *c, double lambda)
{
    if (lambda <= c->lambda[0])
        return (double)c->bytes[0];
    for (unsigned k = 1; k < SGFP4_CURVE_POINTS; k++)
        if (lambda <= c->lambda[k]) {
            const double t = (lambda - c->lambda[k - 1]) / (c->lambda[k] - c->lambda[k - 1]);
            return (double)c->bytes[k - 1] + t * ((double)c->bytes[k] - (double)c->bytes[k - 1]);
        }
    return (double)c->bytes[SGFP4_CURVE_POINTS - 1];
}

static double total_at(const curve *c, size_t n, double lambda)
{
    double total = 0;
    for (size_t i = 0; i < n; i++)
        total += bytes_at(&c[i], lambda / c[i].scale);
    return total;
}

/* The curve of tensor t with its decided options and its importance factors; *taken = 0
 * when it does not take part (no row or no column factor). */
static sgfp4_status measure(const sgfp4_model *importance, const sgfp4_model_tensor *t,
                            const sgfp4_model_decision *d, sgfp4_encode_options *o, curve *c,
                            int *taken, sgfp4_diag *diag)
{
    float *columns = NULL, *rows = NULL, *owned = NULL;
    const float *values = NULL;
    *taken = 0;
    sgfp4_status s = sgfp4_importance_vector(importance, t, "", d->cols, &columns, diag);
    if (s == SGFP4_OK)
        s = sgfp4_importance_vector(importance, t, ":rows", d->rows, &rows, diag);
    if (s == SGFP4_OK && columns && rows)
        s = sgfp4_model_tensor_floats(t, &values, &owned, diag);
    if (s == SGFP4_OK && columns && rows) {
        o->column_importance = columns;
        o->row_importance = rows;
        double error[SGFP4_CURVE_POINTS];
        s = sgfp4_encode_rate_curve(values, d->rows, d->cols, 0, o, c->lambda,
                                    c->bytes, error);
        if (s != SGFP4_OK)
            sgfp4_fail(diag, s, (int64_t)t->offset, -1, -1,
                       "tensor '%s': its rate-distortion curve failed: %s", t->name,
                       sgfp4_status_str(s));
        c->tensor = t;
        c->weights = (double)t->elements;
        c->scale = mean(columns, d->cols) * mean(rows, d->rows);
        *taken = s == SGFP4_OK && c->scale > 0 && isfinite(c->scale);
    }
    free(owned);
    free(columns);
    free(rows);
    return s;
}

static int by_address(const void *a, const void *b)
{
    const uintptr_t x = (uintptr_t)((const curve *)a)->tensor;
    const uintptr_t y = (uintptr_t)((const curve *)b)->tensor;
    return x < y ? -1 : x > y;
}

sgfp4_status sgfp4_model_plan_rates(const sgfp4_model *source, const sgfp4_model_policy *policy,
                                    const sgfp4_model *importance, model_rates *out,
                                    sgfp4_diag *diag)
{
    memset(out, 0, sizeof *out);
    const sgfp4_model_rates mode = sgfp4_model_policy_rates(policy);
    if (mode == SGFP4_RATES_UNIFORM || (mode == SGFP4_RATES_AUTO && !importance))
        return SGFP4_OK;
    if (!importance)
        return sgfp4_fail(diag, SGFP4_ERR_ARGUMENT, -1, -1, -1,
                          "rates by sensitivity need an importance file");
    const size_t count = sgfp4_model_tensor_count(source);
    curve *c = malloc((count ? count : 1) * sizeof *c);
    if (!c)
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    size_t n = 0;
    double budget = 0; /* the bytes the taking-part tensors' own targets allow */
    sgfp4_status s = SGFP4_OK;
    for (size_t k = 0; s == SGFP4_OK && k < count; k++) {
        const sgfp4_model_tensor *t = sgfp4_model_tensor_at(source, k);
        sgfp4_model_decision d;
        sgfp4_model_decision_init(&d);
        sgfp4_model_policy_decide(policy, t, &d);
        if (!d.quantize || d.profile == SGFP4_PROFILE_V1 || d.policy != SGFP4_POLICY_RATE ||
            !sgfp4_model_policy_rate_is_default(policy, t))
            continue;
        int taken;
        sgfp4_encode_options o;
        sgfp4_encode_options_init(&o);
        sgfp4_model_decision_options(policy, &d, &o);
        s = measure(importance, t, &d, &o, &c[n], &taken, diag);
        sgfp4_model_tensor_evict(source, t);
        if (s == SGFP4_OK && taken) {
            budget += d.target_bpw * c[n].weights / 8.0;
            n++;
        }
    }
    if (s != SGFP4_OK || n == 0) {
        free(c);
        return s;
    }
    /* Lambda by bisection in log space (geometric means: sqrt is correctly rounded, so no
     * libm approximation enters the targets), the largest total not above the budget. */
    double lo = INFINITY, hi = 0;
    for (size_t i = 0; i < n; i++) {
        lo = fmin(lo, c[i].lambda[0] * c[i].scale);
        hi = fmax(hi, c[i].lambda[SGFP4_CURVE_POINTS - 1] * c[i].scale);
    }
    if (total_at(c, n, lo) > budget)
        for (unsigned step = 0; step < 200 && hi > lo * (1 + 1e-12); step++) {
            const double mid = sqrt(lo) * sqrt(hi);
            if (total_at(c, n, mid) > budget)
                lo = mid;
            else
                hi = mid;
        }
    else
        hi = lo; /* the finest trees of every tensor fit */
    out->tensor = malloc(n * sizeof *out->tensor);
    out->bpw = malloc(n * sizeof *out->bpw);
    if (!out->tensor || !out->bpw) {
        free(c);
        sgfp4_model_rates_free(out);
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    }
    qsort(c, n, sizeof *c, by_address);
    for (size_t i = 0; i < n; i++) {
        const double bpw = 8.0 * bytes_at(&c[i], hi / c[i].scale) / c[i].weights;
        out->tensor[i] = c[i].tensor;
        out->bpw[i] = fmin(fmax(bpw, 1e-3), 64.0);
    }
    out->count = n;
    free(c);
    return SGFP4_OK;
}

double sgfp4_model_rate_of(const model_rates *rates, const sgfp4_model_tensor *t)
{
    if (!rates)
        return 0;
    size_t lo = 0, hi = rates->count;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)rates->tensor[mid] < (uintptr_t)t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < rates->count && rates->tensor[lo] == t ? rates->bpw[lo] : 0;
}

void sgfp4_model_rates_free(model_rates *rates)
{
    free(rates->tensor);
    free(rates->bpw);
    memset(rates, 0, sizeof *rates);
}
