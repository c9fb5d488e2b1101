/* bytes.c -- byte counts for people to read (see bytes.h). */
#include "base/bytes.h"

#include <math.h>
#include <stdio.h>

const bytes_style BYTES_IEC = {1024.0, {"B", "KiB", "MiB", "GiB", "TiB", "PiB"}, 4, 0};
const bytes_style BYTES_SI = {1000.0, {"B", "KB", "MB", "GB", "TB", "PB"}, 3, 1};

int bytes_format(char *buf, size_t len, double b, const bytes_style *st) {
    if (!isfinite(b)) return snprintf(buf, len, "-");
    int i = 0;
    while (fabs(b) >= st->step && i + 1 < BYTES_MAX_UNITS && st->units[i + 1]) {
        b /= st->step;
        i++;
    }
    if (i == 0 && st->whole_bytes) return snprintf(buf, len, "%.0f %s", b, st->units[0]);
    return snprintf(buf, len, "%.*g %s", st->digits, b, st->units[i]);
}
