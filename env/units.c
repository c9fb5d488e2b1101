/* units.c -- parsing and printing numbers with units (see units.h).
 *
 * A value is: optional space, a decimal number (sign, digits, fraction,
 * exponent; no hex, no nan/inf), optional space, a suffix, optional space.
 * The number is scanned by hand so that strtod only ever sees text we have
 * already validated (strtod alone would accept "0x10", "nan" and "inf").
 * The suffix is matched against the short grammar of the field's kind; a
 * suffix of another kind, or an unknown one, yields the kind's "expected
 * ..." message.
 */
#include "env/units.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const double DEC[6] = {1.0, 1e3, 1e6, 1e9, 1e12, 1e15};
static const double BIN[6] = {1.0,
                              1024.0,
                              1048576.0,
                              1073741824.0,
                              1099511627776.0,
                              1125899906842624.0};
static const char *const DEC_NAME[6] = {"", "k", "M", "G", "T", "P"};
static const char *const BIN_NAME[6] = {"", "Ki", "Mi", "Gi", "Ti", "Pi"};

const char *units_expect(units_kind kind)
{
    switch (kind) {
    case UNITS_COUNT: return "a whole number such as 8";
    case UNITS_NUMBER: return "a number such as 0.5 or 1e6";
    case UNITS_BYTES: return "a size such as 16GiB or 512MB";
    case UNITS_RATE_BYTES: return "a rate such as 25Gbit/s or 3.1GB/s";
    case UNITS_FLOP: return "an amount of work such as 4.1GFLOP or 1e9";
    case UNITS_FLOPS: return "a speed such as 14TFLOPS or 1.5e13";
    case UNITS_SECONDS: return "a duration such as 50us, 0.5ms or 2s";
    case UNITS_FRACTION: return "a fraction such as 0.001 or 0.1%";
    case UNITS_DOLLARS: return "a price such as 3.06 or $3.06";
    }
    return "a value";
}

/* scan_number returns the length of the decimal number at the start of s
 * ([+-] digits [. digits] [e [+-] digits], at least one digit in the
 * mantissa; only [+-] digits when integer_only), or 0 when there is none;
 * *mant gets the length of the part before the exponent. An 'e' not
 * followed by digits is left for the suffix. */
static size_t scan_number(const char *s, int integer_only, size_t *mant)
{
    size_t i = 0, digits = 0;
    if (s[i] == '+' || s[i] == '-')
        i++;
    while (isdigit((unsigned char)s[i])) {
        i++;
        digits++;
    }
    if (!integer_only && s[i] == '.') {
        i++;
        while (isdigit((unsigned char)s[i])) {
            i++;
            digits++;
        }
    }
    *mant = i;
    if (digits == 0)
        return 0;
    if (!integer_only && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (s[j] == '+' || s[j] == '-')
            j++;
        if (isdigit((unsigned char)s[j])) {
            while (isdigit((unsigned char)s[j]))
                j++;
            i = j;
        }
    }
    return i;
}

/* A unit's scale: value = number * 10^shift * mult. Decimal factors go
 * into the exponent handed to strtod, so that "4.1GFLOP" reads exactly as
 * 4.1e9 does; mult is exact (a power of two) except for min/h/d. */
typedef struct {
    int shift;
    double mult;
} units_scale;

/* match_prefix reads an SI prefix (k m g t p, any case; Ki..Pi when binary)
 * at the start of s into *sc; returns its length, or 0 (scale 1) when s
 * does not start with a prefix letter. */
static size_t match_prefix(const char *s, int binary, units_scale *sc)
{
    static const char letters[] = "kmgtp";
    const char *p = s[0] ? strchr(letters, tolower((unsigned char)s[0])) : NULL;
    sc->shift = 0;
    sc->mult = 1.0;
    if (!p)
        return 0;
    int n = (int)(p - letters) + 1;
    if (binary && s[1] == 'i') {
        sc->mult = BIN[n];
        return 2;
    }
    sc->shift = 3 * n;
    return 1;
}

static int is_one_of(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return 1;
    return 0;
}

/* Outcome of matching a suffix. */
enum { SUF_OK = 0, SUF_BAD, SUF_AMBIGUOUS };

/* match_suffix interprets suffix (non-empty, trimmed) for kind; on SUF_OK
 * *sc is the unit's scale. */
static int match_suffix(units_kind kind, const char *suf, units_scale *sc)
{
    static const char *const bytes[] = {"B", "byte", "bytes", NULL};
    static const char *const byte_rate[] = {"B/s", "byte/s", "bytes/s", NULL};
    static const char *const bit_rate[] = {"bit/s", "bits/s", "bps", NULL};
    const char *rest;

    switch (kind) {
    case UNITS_COUNT:
    case UNITS_NUMBER:
    case UNITS_DOLLARS:
        return SUF_BAD;
    case UNITS_BYTES:
        rest = suf + match_prefix(suf, 1, sc);
        if (is_one_of(rest, bytes))
            return SUF_OK;
        return strcmp(rest, "b") == 0 ? SUF_AMBIGUOUS : SUF_BAD;
    case UNITS_RATE_BYTES:
        rest = suf + match_prefix(suf, 1, sc);
        if (is_one_of(rest, byte_rate))
            return SUF_OK;
        if (is_one_of(rest, bit_rate)) {
            sc->mult /= 8.0;
            return SUF_OK;
        }
        return (strcmp(rest, "b/s") == 0 || strcmp(rest, "Bps") == 0 ||
                strcmp(rest, "b") == 0)
                   ? SUF_AMBIGUOUS
                   : SUF_BAD;
    case UNITS_FLOP:
        rest = suf + match_prefix(suf, 0, sc);
        return strcasecmp(rest, "flop") == 0 ? SUF_OK : SUF_BAD;
    case UNITS_FLOPS:
        rest = suf + match_prefix(suf, 0, sc);
        return strcasecmp(rest, "flops") == 0 || strcasecmp(rest, "flop/s") == 0 ? SUF_OK
                                                                                  : SUF_BAD;
    case UNITS_SECONDS: {
        static const struct {
            const char *name;
            int shift;
            double mult;
        } t[] = {{"ns", -9, 1.0},  {"us", -6, 1.0},   {"\xc2\xb5s", -6, 1.0},
                 {"ms", -3, 1.0},  {"s", 0, 1.0},     {"min", 0, 60.0},
                 {"h", 0, 3600.0}, {"d", 0, 86400.0}};
        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
            if (strcmp(suf, t[i].name) == 0) {
                sc->shift = t[i].shift;
                sc->mult = t[i].mult;
                return SUF_OK;
            }
        return SUF_BAD;
    }
    case UNITS_FRACTION:
        if (strcmp(suf, "%") == 0) {
            sc->shift = -2;
            sc->mult = 1.0;
            return SUF_OK;
        }
        return SUF_BAD;
    }
    return SUF_BAD;
}

/* shown_text writes the first 80 characters of s[n] (with "..." when cut)
 * into out[len] for a message, and returns out. */
static const char *shown_text(char *out, size_t len, const char *s, size_t n)
{
    snprintf(out, len, "%.*s%s", (int)(n < 80 ? n : 80), s, n > 80 ? "..." : "");
    return out;
}

size_t units_put_long(char *out, long v)
{
    char tmp[24], *d = tmp + sizeof tmp;
    unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;
    *--d = '\0';
    do
        *--d = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *--d = '-';
    size_t n = (size_t)(tmp + sizeof tmp - 1 - d);
    memcpy(out, d, n + 1);
    return n;
}

int units_parse(units_kind kind, const char *text, double *out, char *err,
                size_t errlen)
{
    char buf[256];
    const char *s = text ? text : "";
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n == 0) {
        snprintf(err, errlen, "expected %s, got an empty value", units_expect(kind));
        return -1;
    }
    /* shown: the trimmed text, for messages (built only on error) */
    char shown[96];
    if (n >= sizeof buf) {
        snprintf(err, errlen, "expected %s, got \"%s\" (too long)", units_expect(kind),
                 shown_text(shown, sizeof shown, s, n));
        return -1;
    }
    memcpy(buf, s, n);
    buf[n] = '\0';

    const char *p = buf;
    if (kind == UNITS_DOLLARS && *p == '$')
        p++;
    size_t mant;
    size_t len = scan_number(p, kind == UNITS_COUNT, &mant);
    if (len == 0) {
        snprintf(err, errlen, "expected %s, got \"%s\"", units_expect(kind),
                 shown_text(shown, sizeof shown, s, n));
        return -1;
    }
    const char *suf = p + len;
    while (*suf == ' ' || *suf == '\t')
        suf++;

    units_scale sc = {0, 1.0};
    if (*suf) {
        int m = match_suffix(kind, suf, &sc);
        if (m == SUF_AMBIGUOUS) {
            if (kind == UNITS_BYTES)
                snprintf(err, errlen,
                         "ambiguous unit in \"%s\": write B for bytes, e.g. 16GB or 16GiB",
                         shown_text(shown, sizeof shown, s, n));
            else
                snprintf(err, errlen,
                         "ambiguous unit in \"%s\": write B/s for bytes or bit/s (bps) "
                         "for bits, e.g. 3.1GB/s or 25Gbit/s",
                         shown_text(shown, sizeof shown, s, n));
            return -1;
        }
        if (m != SUF_OK) {
            snprintf(err, errlen, "expected %s, got \"%s\"", units_expect(kind),
                 shown_text(shown, sizeof shown, s, n));
            return -1;
        }
    }

    /* exponent as written, clamped (strtod reports the overflow), plus the
     * unit's decimal shift */
    long e = 0;
    if (len > mant) {
        errno = 0;
        e = strtol(p + mant + 1, NULL, 10);
        if (errno == ERANGE || e > 100000)
            e = 100000;
        if (e < -100000)
            e = -100000;
    }
    char num[300]; /* mantissa (< 256 chars), 'e', exponent */
    memcpy(num, p, mant);
    num[mant] = 'e';
    units_put_long(num + mant + 1, e + sc.shift);
    errno = 0;
    double v = strtod(num, NULL);
    if (errno == ERANGE || !isfinite(v)) {
        snprintf(err, errlen, "\"%s\" is out of range", shown_text(shown, sizeof shown, s, n));
        return -1;
    }
    v *= sc.mult;
    if (!isfinite(v)) {
        snprintf(err, errlen, "\"%s\" is out of range", shown_text(shown, sizeof shown, s, n));
        return -1;
    }
    if (kind == UNITS_COUNT && (v > (double)INT_MAX || v < (double)INT_MIN)) {
        snprintf(err, errlen, "\"%s\" is out of range (at most %d)",
                 shown_text(shown, sizeof shown, s, n), INT_MAX);
        return -1;
    }
    *out = v;
    return 0;
}

/* exact4 writes x with %.4g into tmp[len] and returns whether that text
 * reads back as exactly x. */
static int exact4(double x, char *tmp, size_t len)
{
    snprintf(tmp, len, "%.4g", x);
    return strtod(tmp, NULL) == x;
}

/* fmt_scaled writes v with the largest prefix not exceeding it, then unit;
 * tries binary prefixes first when binary and keeps the first form that is
 * exact in four significant digits, else a rounded decimal form. */
static void fmt_scaled(double v, const char *unit, int binary, char *buf, size_t len)
{
    char tmp[64];
    double a = fabs(v);
    if (a == 0.0 || !isfinite(v)) {
        snprintf(buf, len, "%g%s", v, unit);
        return;
    }
    if (binary) {
        int n = 0;
        while (n < 5 && a >= BIN[n + 1])
            n++;
        if (exact4(v / BIN[n], tmp, sizeof tmp)) {
            snprintf(buf, len, "%s%s%s", tmp, BIN_NAME[n], unit);
            return;
        }
    }
    int n = 0;
    while (n < 5 && a >= DEC[n + 1])
        n++;
    exact4(v / DEC[n], tmp, sizeof tmp);
    snprintf(buf, len, "%s%s%s", tmp, DEC_NAME[n], unit);
}

void units_format(units_kind kind, double v, char *buf, size_t len)
{
    if (!buf || len == 0)
        return;
    switch (kind) {
    case UNITS_COUNT: snprintf(buf, len, "%.0f", v); return;
    case UNITS_NUMBER: snprintf(buf, len, "%.4g", v); return;
    case UNITS_FRACTION: snprintf(buf, len, "%.4g", v); return;
    case UNITS_DOLLARS: snprintf(buf, len, "$%.4g", v); return;
    case UNITS_BYTES: fmt_scaled(v, "B", 1, buf, len); return;
    case UNITS_RATE_BYTES: fmt_scaled(v, "B/s", 0, buf, len); return;
    case UNITS_FLOP: fmt_scaled(v, "FLOP", 0, buf, len); return;
    case UNITS_FLOPS: fmt_scaled(v, "FLOPS", 0, buf, len); return;
    case UNITS_SECONDS: {
        double a = fabs(v);
        if (a == 0.0 || !isfinite(v))
            snprintf(buf, len, "%gs", v);
        else if (a < 1e-6)
            snprintf(buf, len, "%.4gns", v * 1e9);
        else if (a < 1e-3)
            snprintf(buf, len, "%.4gus", v * 1e6);
        else if (a < 1.0)
            snprintf(buf, len, "%.4gms", v * 1e3);
        else if (a < 60.0)
            snprintf(buf, len, "%.4gs", v);
        else if (a < 3600.0)
            snprintf(buf, len, "%.4gmin", v / 60.0);
        else if (a < 86400.0)
            snprintf(buf, len, "%.4gh", v / 3600.0);
        else
            snprintf(buf, len, "%.4gd", v / 86400.0);
        return;
    }
    }
    snprintf(buf, len, "%g", v);
}
