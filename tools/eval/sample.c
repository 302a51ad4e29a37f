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

/* Stream k of seed s starts from splitmix64(s + G (k + 1)), a bijection of its argument, so
 * stream k1 of seed s1 and stream k2 of seed s2 start alike exactly when
 * G (k1 - k2) = s2 - s1 (mod 2^64), i.e. k1 - k2 = (s2 - s1) / G, G being odd. */
int eval_streams_overlap(uint64_t seed_a, uint64_t count_a, uint64_t seed_b, uint64_t count_b)
{
    const uint64_t g = 0x9E3779B97F4A7C15ull;
    uint64_t inverse = g; /* Newton's iteration doubles the correct low bits: 3, 6, ..., 96 */
    for (int i = 0; i < 5; i++)
        inverse *= 2 - g * inverse;
    const uint64_t d = (seed_b - seed_a) * inverse; /* k1 - k2, modulo 2^64 */
    return count_a > 0 && count_b > 0 && (d < count_a || 0 - d < count_b);
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
