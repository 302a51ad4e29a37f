/* Deterministic random numbers (xorshift64*, seeded by splitmix64 per stream) and the
 * sampling helpers of the benchmark. SPDX-License-Identifier: MIT */
#include <math.h>

#include "eval.h"

void eval_rng_seed(eval_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (stream + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    r->state = z ? z : 1;
}

double eval_rng_uniform(eval_rng *r)
{
    r->state ^= r->state >> 12;
    r->state ^= r->state << 25;
    r->state ^= r->state >> 27;
    return (double)((r->state * 0x2545F4914F6CDD1Dull) >> 11) * (1.0 / 9007199254740992.0);
}

void eval_log_softmax(const float *logits, int vocab, double *out)
{
    double max = logits[0];
    for (int i = 1; i < vocab; i++)
        max = logits[i] > max ? logits[i] : max;
    double sum = 0;
    for (int i = 0; i < vocab; i++)
        sum += exp((double)logits[i] - max);
    const double log_sum = max + log(sum);
    for (int i = 0; i < vocab; i++)
        out[i] = (double)logits[i] - log_sum;
}

int eval_sample(const float *logits, int vocab, eval_rng *r)
{
    double max = logits[0], sum = 0;
    for (int i = 1; i < vocab; i++)
        max = logits[i] > max ? logits[i] : max;
    for (int i = 0; i < vocab; i++)
        sum += exp((double)logits[i] - max);
    double u = eval_rng_uniform(r) * sum;
    for (int i = 0; i < vocab; i++) {
        u -= exp((double)logits[i] - max);
        if (u < 0)
            return i;
    }
    return vocab - 1;
}

int eval_argmax(const float *logits, int vocab)
{
    int best = 0;
    for (int i = 1; i < vocab; i++)
        if (logits[i] > logits[best])
            best = i;
    return best;
}
