/* rng.c -- Philox4x32-10 counter-based generator; see rng.h for the contract.
 * The round function and constants are those of Random123 (philox.h):
 * multipliers 0xD2511F53 / 0xCD9E8D57, Weyl key increments 0x9E3779B9 /
 * 0xBB67AE85, ten rounds.
 */
#include "nets/rng.h"

#include <math.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void rng_block(uint32_t out[4], uint64_t seed, uint64_t c0, uint64_t c1)
{
    uint32_t x0 = (uint32_t)c0, x1 = (uint32_t)(c0 >> 32);
    uint32_t x2 = (uint32_t)c1, x3 = (uint32_t)(c1 >> 32);
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; round++) {
        if (round > 0) {
            k0 += PHILOX_W0;
            k1 += PHILOX_W1;
        }
        uint64_t p0 = (uint64_t)PHILOX_M0 * x0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * x2;
        uint32_t y0 = (uint32_t)(p1 >> 32) ^ x1 ^ k0;
        uint32_t y1 = (uint32_t)p1;
        uint32_t y2 = (uint32_t)(p0 >> 32) ^ x3 ^ k1;
        uint32_t y3 = (uint32_t)p0;
        x0 = y0;
        x1 = y1;
        x2 = y2;
        x3 = y3;
    }
    out[0] = x0;
    out[1] = x1;
    out[2] = x2;
    out[3] = x3;
}

void rng_init(rng_t *r, uint64_t seed)
{
    r->seed = seed;
    r->stream = RNG_STREAM_USER;
    r->counter = 0;
}

/* 53-bit uniform in [0,1) from two words. */
static double u53(uint32_t hi, uint32_t lo)
{
    uint64_t bits = (((uint64_t)hi << 32) | lo) >> 11;
    return (double)bits * 0x1.0p-53;
}

double rng_uniform_at(uint64_t seed, uint64_t stream, uint64_t counter)
{
    uint32_t w[4];
    rng_block(w, seed, counter, stream);
    return u53(w[0], w[1]);
}

double rng_normal_at(uint64_t seed, uint64_t stream, uint64_t counter)
{
    uint32_t w[4];
    rng_block(w, seed, counter, stream);
    /* u1 in (0,1] so the logarithm is finite. */
    double u1 = 1.0 - u53(w[0], w[1]);
    double u2 = u53(w[2], w[3]);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

uint64_t rng_u64(rng_t *r)
{
    uint32_t w[4];
    rng_block(w, r->seed, r->counter++, r->stream);
    return ((uint64_t)w[0] << 32) | w[1];
}

double rng_uniform(rng_t *r)
{
    return rng_uniform_at(r->seed, r->stream, r->counter++);
}

double rng_normal(rng_t *r)
{
    return rng_normal_at(r->seed, r->stream, r->counter++);
}
