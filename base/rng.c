/* rng.c -- splitmix64 (see rng.h). The constants are those of the
 * reference implementation. */
#include "base/rng.h"

uint64_t splitmix64_next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

double splitmix64_unit(uint64_t *state) {
    return (double)(splitmix64_next(state) >> 11) * 0x1.0p-53;
}
