/* bytes.h -- byte counts for people to read: "1.5 GiB", "820 MB".
 *
 * One formatter, several house styles: a style fixes the step between
 * units (1000 or 1024), the unit labels, the significant digits of a
 * scaled figure and whether a figure under one step is written as whole
 * bytes. The count is divided by the step while it is at least one step
 * (in magnitude) and a larger unit is left, then written as
 * "<figure> <unit>". A count that is not finite is written "-".
 * Parsing sizes in configs, and writing them back in config syntax, is
 * env/units.h's job, not this one's.
 */
#ifndef STRATA_BASE_BYTES_H
#define STRATA_BASE_BYTES_H

#include <stddef.h>

#define BYTES_MAX_UNITS 6

typedef struct {
    double step;                         /* 1000 (SI) or 1024 (IEC) */
    const char *units[BYTES_MAX_UNITS];  /* bytes first, then one per step; NULL ends early */
    int digits;                          /* significant digits of a scaled figure (%.*g) */
    int whole_bytes;                     /* 1: a figure under one step as %.0f */
} bytes_style;

/* IEC units up to PiB, 4 significant digits: "1.5 GiB", "512 B" (the
 * memory figures of infeasibility reasons). */
extern const bytes_style BYTES_IEC;

/* SI units KB up to PB, 3 significant digits, whole bytes: "1.5 GB",
 * "512 B" (the plan table's traffic figures). */
extern const bytes_style BYTES_SI;

/* bytes_format writes b in style st into buf[len] (truncated as snprintf
 * does). Returns what snprintf returns. */
int bytes_format(char *buf, size_t len, double b, const bytes_style *st);

#endif
