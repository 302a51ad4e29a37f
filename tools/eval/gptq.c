/* GPTQ for the baselines: Frantar, Ashkboos, Hoefler, Alistarh, "GPTQ: Accurate
 * Post-Training Quantization for Generative Pre-trained Transformers" (ICLR 2023,
 * arXiv:2210.17323), Algorithm 1, reimplemented from the paper. For y = W x with
 * H = E[x x^T], the columns of W are quantized one at a time in natural order; after
 * column i the error of every row, divided by U_ii, is fed into the columns not yet
 * quantized through row i of U, the upper Cholesky factor of H^-1 (dampened:
 * H + 0.01 mean(diag H) I). A group's parameters are fitted when the sweep reaches its
 * first column, on the weights as the feedback has left them. Rows are independent given
 * U, so each row is swept alone; everything in double precision and in a fixed order
 * (the lazy batch updates of the paper change the speed, not the result, and are left
 * out). Inputs that are never active (H_jj = 0) get H_jj = 1 and weight 0, as in the
 * paper's code.
 * SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"

/* a (n x n, symmetric positive definite) = L L^T: L into the lower triangle of a (the
 * upper triangle is left alone). 0, or -1 if a is not positive definite. */
static int cholesky_lower(double *a, uint64_t n)
{
    for (uint64_t j = 0; j < n; j++) {
        double d = a[j * n + j];
        for (uint64_t k = 0; k < j; k++)
            d -= a[j * n + k] * a[j * n + k];
        if (!(d > 0))
            return -1;
        d = sqrt(d);
        a[j * n + j] = d;
        for (uint64_t i = j + 1; i < n; i++) {
            double s = a[i * n + j];
            for (uint64_t k = 0; k < j; k++)
                s -= a[i * n + k] * a[j * n + k];
            a[i * n + j] = s / d;
        }
    }
    return 0;
}

/* inv = (L L^T)^-1 for the lower triangular L in a (both n x n). */
static int inverse_from_cholesky(const double *a, uint64_t n, double *inv)
{
    double *li = calloc((size_t)(n * n), sizeof *li); /* L^-1, lower triangular */
    if (!li)
        return -1;
    for (uint64_t j = 0; j < n; j++) { /* column j of L^-1: L x = e_j */
        li[j * n + j] = 1.0 / a[j * n + j];
        for (uint64_t i = j + 1; i < n; i++) {
            double s = 0;
            for (uint64_t k = j; k < i; k++)
                s += a[i * n + k] * li[k * n + j];
            li[i * n + j] = -s / a[i * n + i];
        }
    }
    for (uint64_t i = 0; i < n; i++) /* (L^-T L^-1)_ik = sum over m >= max(i, k) */
        for (uint64_t k = i; k < n; k++) {
            double s = 0;
            for (uint64_t m = k; m < n; m++)
                s += li[m * n + i] * li[m * n + k];
            inv[i * n + k] = inv[k * n + i] = s;
        }
    free(li);
    return 0;
}

int gptq_factor_create(const float *h, uint64_t n, double damp, const char *name,
                       gptq_factor *f)
{
    memset(f, 0, sizeof *f);
    double *a = malloc((size_t)(n * n) * sizeof *a);
    double *inv = malloc((size_t)(n * n) * sizeof *inv);
    f->dead = calloc((size_t)n, 1);
    int rc = a && inv && f->dead ? 0 : -1;
    for (uint64_t i = 0; rc == 0 && i < n; i++)
        for (uint64_t j = 0; j < n; j++) {
            a[i * n + j] = h[i * n + j];
            if (!isfinite(a[i * n + j]) || a[i * n + j] != h[j * n + i]) {
                fprintf(stderr, "sgfp4-eval: the Hessian of %s is not finite and symmetric\n",
                        name);
                rc = -1;
                break;
            }
        }
    double mean = 0;
    for (uint64_t j = 0; rc == 0 && j < n; j++) {
        if (a[j * n + j] == 0) {
            f->dead[j] = 1;
            a[j * n + j] = 1;
        }
        mean += a[j * n + j];
    }
    for (uint64_t j = 0; rc == 0 && j < n; j++)
        a[j * n + j] += damp * mean / (double)n;
    if (rc == 0 && cholesky_lower(a, n) != 0) {
        fprintf(stderr, "sgfp4-eval: the Hessian of %s is not positive definite\n", name);
        rc = -1;
    }
    if (rc == 0)
        rc = inverse_from_cholesky(a, n, inv);
    if (rc == 0 && cholesky_lower(inv, n) != 0) { /* H^-1 = L2 L2^T, U = L2^T */
        fprintf(stderr, "sgfp4-eval: the inverse Hessian of %s is not positive definite\n",
                name);
        rc = -1;
    }
    if (rc == 0) {
        f->n = n;
        f->u = a; /* reused: U's upper triangle, zeros below */
        for (uint64_t i = 0; i < n; i++)
            for (uint64_t j = 0; j < n; j++)
                a[i * n + j] = j >= i ? inv[j * n + i] : 0.0;
        a = NULL;
    }
    free(a);
    free(inv);
    if (rc != 0)
        gptq_factor_free(f);
    return rc;
}

void gptq_factor_free(gptq_factor *f)
{
    free(f->u);
    free(f->dead);
    memset(f, 0, sizeof *f);
}

double gptq_quantize(const baseline *b, const gptq_factor *f, float *w, uint64_t rows,
                     uint64_t cols)
{
    const uint64_t n = cols, g = (uint64_t)baseline_group(b);
    double *row = malloc((size_t)n * sizeof *row);
    float *group = malloc((size_t)g * sizeof *group);
    if (!row || !group || n != f->n) {
        free(row);
        free(group);
        return -1;
    }
    for (uint64_t r = 0; r < rows; r++) {
        float *wr = w + r * n;
        for (uint64_t j = 0; j < n; j++)
            row[j] = f->dead[j] ? 0.0 : wr[j];
        baseline_params p;
        for (uint64_t i = 0; i < n; i++) {
            if (i % g == 0) {
                const uint64_t m = n - i < g ? n - i : g;
                for (uint64_t k = 0; k < m; k++)
                    group[k] = (float)row[i + k];
                baseline_fit(b, group, m, &p);
            }
            const float q = baseline_value(b, &p, (float)row[i]);
            const double *ui = f->u + i * n;
            const double e = (row[i] - q) / ui[i];
            for (uint64_t j = i + 1; j < n; j++)
                row[j] -= e * ui[j];
            wr[i] = q;
        }
    }
    free(row);
    free(group);
    return baseline_bits(b, rows, cols);
}
