/* rng.h -- a counter-based random number generator (Philox4x32-10, Salmon et
 * al., "Parallel random numbers: as easy as 1, 2, 3", SC'11).
 *
 * A draw is a pure function of (seed, stream, counter): rng_block() hashes
 * the 128-bit counter (counter, stream) under the 64-bit key seed into four
 * 32-bit words. Nothing is shared between draws, so a batched operation that
 * gives row n the counter base+n yields the same numbers whatever the number
 * of threads, the order rows are visited in, or how the batch is split.
 * rng_t is the small cursor (seed, stream, next counter) the network keeps
 * and checkpoints; restoring those three integers resumes the sequence
 * exactly. Verified against the Random123 known-answer vectors
 * (tests/test_nets_rng.c). It is deliberately not base/rng.h's splitmix64:
 * that one is a sequential stream for the seeded solvers and generators,
 * this one must give draws addressable by counter.
 */
#ifndef STRATA_NETS_RNG_H
#define STRATA_NETS_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t seed;    /* Philox key */
    uint64_t stream;  /* high 64 bits of the counter: independent sub-sequences */
    uint64_t counter; /* low 64 bits of the counter: next block to use */
} rng_t;

/* Streams reserved by nets/ so that different uses never share numbers. */
enum {
    RNG_STREAM_USER = 0,          /* rng_init() default: sampling, user draws */
    RNG_STREAM_INIT = 0x494e4954u /* parameter initialisation ("INIT") */
};

/* Philox4x32-10 on counter words (c0 lo, c0 hi, c1 lo, c1 hi) and key
 * (seed lo, seed hi); writes the four output words to out[4]. */
void rng_block(uint32_t out[4], uint64_t seed, uint64_t c0, uint64_t c1);

/* Cursor at counter 0 of stream RNG_STREAM_USER for `seed`. */
void rng_init(rng_t *r, uint64_t seed);

/* 64 random bits from block r->counter; advances the counter by one. */
uint64_t rng_u64(rng_t *r);

/* Uniform double in [0, 1) with 53 random bits from block r->counter;
 * advances the counter by one. */
double rng_uniform(rng_t *r);

/* Standard normal (Box-Muller on one block); advances the counter by one. */
double rng_normal(rng_t *r);

/* Stateless forms: the value rng_uniform/rng_normal would return for the
 * block at (seed, stream, counter). Batched kernels use these with
 * counter = base + row. */
double rng_uniform_at(uint64_t seed, uint64_t stream, uint64_t counter);
double rng_normal_at(uint64_t seed, uint64_t stream, uint64_t counter);

#endif
