/* rng.h -- splitmix64, the one small seeded generator of the project.
 *
 * splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
 * generators", OOPSLA'14; the reference C code is Vigna's splitmix64.c) is
 * a 64-bit Weyl counter passed through a mixing function: the state is one
 * uint64_t the caller owns, so a seed fixes the stream on any machine. The
 * gym's random moves, the placers' tie-breaks, the seeded searches (which
 * seed xoshiro256** through it), `strata eval`'s instance generator and the
 * tests' random instances all draw from here; each keeps its own mapping of
 * the 64-bit outputs to integers, as those fix their streams.
 *
 * nets/rng.h is a different generator with its own job: Philox4x32-10, a
 * counter-based generator whose draws are a pure function of (seed, stream,
 * counter), so batched network kernels get the same numbers whatever the
 * threading, and a checkpoint resumes the sequence. It is not built on this.
 */
#ifndef STRATA_BASE_RNG_H
#define STRATA_BASE_RNG_H

#include <stdint.h>

/* splitmix64_next advances *state by the golden-ratio increment and
 * returns the mixed 64-bit output. */
uint64_t splitmix64_next(uint64_t *state);

/* splitmix64_unit returns the next output as a double uniform in [0, 1):
 * its top 53 bits times 2^-53. */
double splitmix64_unit(uint64_t *state);

#endif
