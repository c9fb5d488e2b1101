/* units.h -- numbers with units in config files, parsed into SI doubles.
 *
 * Config values such as "16GiB", "25Gbit/s", "14TFLOPS" or "50us" are read
 * by field kind: the kind says which suffixes are allowed and what the
 * result means (bytes, bytes/s, FLOP, FLOP/s, seconds, a fraction, dollars
 * or a plain number). A bare number is always allowed and is taken in the
 * kind's SI unit. Spelling rules (docs/config.md repeats them for users):
 *
 *   prefixes   k/K M G T P = 1e3 .. 1e15 (case-insensitive);
 *              Ki Mi Gi Ti Pi = 1024^1 .. 1024^5 (sizes and rates only)
 *   bytes      B, byte, bytes                 ("16GiB", "3.2MB", "100B")
 *   rates      <size>/s for bytes per second, <prefix>bit/s, bits/s or
 *              bps for bits per second, divided by 8 ("25Gbit/s", "10Gbps");
 *              a lone "b" ("Gb", "Gb/s") and "Bps" are refused as ambiguous
 *   work       FLOP; speed FLOPS or FLOP/s (case-insensitive)
 *   time       ns us µs ms s min h d
 *   fraction   a number, or a percentage "0.1%"
 *   dollars    "3.06" or "$3.06"
 *
 * Space is allowed around the value and between number and unit. NaN, inf,
 * hexadecimal, empty text, unknown or wrong-kind suffixes, trailing text and
 * values that overflow a double (or an int, for counts) are errors.
 */
#ifndef STRATA_UNITS_H
#define STRATA_UNITS_H

#include <stddef.h>

typedef enum {
    UNITS_COUNT = 0,  /* a whole number ("8", "-1"), fits in an int */
    UNITS_NUMBER,     /* a plain real number ("0.5", "1e6") */
    UNITS_BYTES,      /* a size in bytes ("16GiB", "3.2MB") */
    UNITS_RATE_BYTES, /* bytes per second ("3.1GB/s", "25Gbit/s") */
    UNITS_FLOP,       /* an amount of work in FLOP ("4.1GFLOP") */
    UNITS_FLOPS,      /* a speed in FLOP/s ("14TFLOPS", "14TFLOP/s") */
    UNITS_SECONDS,    /* a duration in seconds ("50us", "1.5min") */
    UNITS_FRACTION,   /* a fraction ("0.001", "0.1%" = 0.001) */
    UNITS_DOLLARS,    /* dollars ("3.06", "$3.06") */
} units_kind;

/* units_parse reads text as a value of the given kind and stores it in SI
 * units in *out. Returns 0, or -1 with a message for the user in err[errlen]
 * (such as: expected a rate such as 25Gbit/s or 3.1GB/s, got "16GiB") and
 * *out untouched. The message does not name a file or key; callers prefix
 * it. Bounds (> 0, < 1, ...) are the caller's business, except that a
 * UNITS_COUNT must fit in an int. */
int units_parse(units_kind kind, const char *text, double *out, char *err,
                size_t errlen);

/* units_put_long writes v in decimal, NUL-terminated, into out (room for
 * 21 characters) and returns the number of digits and sign written. By
 * hand, for the loaders' hot paths (a figure's exponent, a key path's
 * index), where snprintf was a good share of reading a config. */
size_t units_put_long(char *out, long v);

/* units_expect returns a static phrase naming what a kind accepts, with
 * examples, e.g. "a size such as 16GiB or 512MB". */
const char *units_expect(units_kind kind);

/* units_format writes v (SI units of kind) into buf[len] in a short form
 * with a unit that units_parse reads back, e.g. 68719476736 bytes as
 * "64GiB", 1.25e9 bytes/s as "1.25GB/s", 0.0005 s as "500us". Up to four
 * significant digits; exact binary sizes prefer binary prefixes. */
void units_format(units_kind kind, double v, char *buf, size_t len);

#endif
