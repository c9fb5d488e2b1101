/* test_units.c -- units_parse and units_format (env/units.h).
 *
 * Every expected value is the SI figure worked out by hand in the table's
 * comment column. Values are compared exactly: a decimal prefix is applied
 * through the exponent handed to strtod, so "4.1GFLOP" must equal the
 * double nearest 4.1e9, and binary prefixes and bits (/8) are exact powers
 * of two.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <string.h>

#include <cmocka.h>

#include "env/units.h"

typedef struct {
    units_kind kind;
    const char *text;
    double want;
} ok_case;

typedef struct {
    units_kind kind;
    const char *text;
    const char *msg; /* exact message, or NULL to check only that it fails */
} bad_case;

static void check_ok(const ok_case *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char err[256] = "";
        double v = -12345.0;
        int rc = units_parse(c[i].kind, c[i].text, &v, err, sizeof err);
        if (rc != 0)
            fail_msg("case %zu \"%s\": failed: %s", i, c[i].text, err);
        if (v != c[i].want)
            fail_msg("case %zu \"%s\": got %.17g, want %.17g", i, c[i].text, v, c[i].want);
    }
}

static void check_bad(const bad_case *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char err[256] = "";
        double v = -12345.0;
        int rc = units_parse(c[i].kind, c[i].text, &v, err, sizeof err);
        if (rc != -1)
            fail_msg("case %zu \"%s\": accepted as %.17g", i, c[i].text, v);
        if (v != -12345.0)
            fail_msg("case %zu \"%s\": *out was written on failure", i, c[i].text);
        if (err[0] == '\0')
            fail_msg("case %zu \"%s\": no message", i, c[i].text);
        if (c[i].msg && strcmp(err, c[i].msg) != 0)
            fail_msg("case %zu \"%s\":\n got  %s\n want %s", i, c[i].text, err, c[i].msg);
    }
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_count_and_number(void **state)
{
    (void)state;
    static const ok_case ok[] = {
        {UNITS_COUNT, "8", 8},
        {UNITS_COUNT, "-3", -3},
        {UNITS_COUNT, "+7", 7},
        {UNITS_COUNT, "  12\t", 12},
        {UNITS_COUNT, "0", 0},
        {UNITS_COUNT, "2147483647", 2147483647.0}, /* INT_MAX */
        {UNITS_NUMBER, "0.5", 0.5},
        {UNITS_NUMBER, "1e6", 1e6},
        {UNITS_NUMBER, ".5", 0.5},
        {UNITS_NUMBER, "5.", 5.0},
        {UNITS_NUMBER, "-2.5e-3", -0.0025},
        {UNITS_NUMBER, "1E3", 1000.0},
        {UNITS_NUMBER, "3e+2", 300.0},
    };
    static const bad_case bad[] = {
        {UNITS_COUNT, "2.5", "expected a whole number such as 8, got \"2.5\""},
        {UNITS_COUNT, "1e3", "expected a whole number such as 8, got \"1e3\""},
        {UNITS_COUNT, "8GB", "expected a whole number such as 8, got \"8GB\""},
        {UNITS_COUNT, "2147483648", "\"2147483648\" is out of range (at most 2147483647)"},
        {UNITS_COUNT, "", "expected a whole number such as 8, got an empty value"},
        {UNITS_COUNT, "   ", "expected a whole number such as 8, got an empty value"},
        {UNITS_NUMBER, "nan", "expected a number such as 0.5 or 1e6, got \"nan\""},
        {UNITS_NUMBER, "inf", "expected a number such as 0.5 or 1e6, got \"inf\""},
        {UNITS_NUMBER, "-Infinity", NULL},
        {UNITS_NUMBER, "0x10", "expected a number such as 0.5 or 1e6, got \"0x10\""},
        {UNITS_NUMBER, "1e999", "\"1e999\" is out of range"},
        {UNITS_NUMBER, "-1e999", "\"-1e999\" is out of range"},
        {UNITS_NUMBER, "1e-999", "\"1e-999\" is out of range"},
        {UNITS_NUMBER, "5%", "expected a number such as 0.5 or 1e6, got \"5%\""},
        {UNITS_NUMBER, "3 apples", NULL},
        {UNITS_NUMBER, "1.2.3", NULL},
        {UNITS_NUMBER, ".", NULL},
        {UNITS_NUMBER, "-", NULL},
        {UNITS_NUMBER, "1e", NULL},
        {UNITS_NUMBER, "1,5", NULL},
    };
    check_ok(ok, N(ok));
    check_bad(bad, N(bad));
}

static void test_bytes(void **state)
{
    (void)state;
    static const ok_case ok[] = {
        {UNITS_BYTES, "16GiB", 17179869184.0}, /* 16 * 2^30 */
        {UNITS_BYTES, "3.2MB", 3.2e6},
        {UNITS_BYTES, "512KiB", 524288.0}, /* 512 * 1024 */
        {UNITS_BYTES, "1e9", 1e9},
        {UNITS_BYTES, "100B", 100.0},
        {UNITS_BYTES, "1kB", 1000.0},
        {UNITS_BYTES, "1KB", 1000.0},
        {UNITS_BYTES, "2TiB", 2199023255552.0}, /* 2 * 2^40 */
        {UNITS_BYTES, "1PB", 1e15},
        {UNITS_BYTES, "1PiB", 1125899906842624.0}, /* 2^50 */
        {UNITS_BYTES, "1.5 GiB", 1610612736.0},    /* 1.5 * 2^30, space allowed */
        {UNITS_BYTES, "10 bytes", 10.0},
        {UNITS_BYTES, "4kbyte", 4000.0},
        {UNITS_BYTES, "2.5e3MB", 2.5e9}, /* 2.5e3 * 1e6 */
        {UNITS_BYTES, "0", 0.0},
        {UNITS_BYTES, "-1GB", -1e9}, /* sign kept; bounds are the caller's */
        {UNITS_BYTES, "64mB", 64e6}, /* prefixes ignore case */
    };
    static const bad_case bad[] = {
        {UNITS_BYTES, "16Gb", "ambiguous unit in \"16Gb\": write B for bytes, e.g. 16GB or 16GiB"},
        {UNITS_BYTES, "100b", "ambiguous unit in \"100b\": write B for bytes, e.g. 16GB or 16GiB"},
        {UNITS_BYTES, "16G", "expected a size such as 16GiB or 512MB, got \"16G\""},
        {UNITS_BYTES, "1GiBs", "expected a size such as 16GiB or 512MB, got \"1GiBs\""},
        {UNITS_BYTES, "25Gbit/s", "expected a size such as 16GiB or 512MB, got \"25Gbit/s\""},
        {UNITS_BYTES, "3.1GB/s", NULL},
        {UNITS_BYTES, "1GIB", NULL}, /* binary prefix is Ki..Pi with a lowercase i */
        {UNITS_BYTES, "1XB", NULL},
        {UNITS_BYTES, "fast", "expected a size such as 16GiB or 512MB, got \"fast\""},
        {UNITS_BYTES, "1 GiB garbage", NULL},
        {UNITS_BYTES, "GiB", NULL},
        {UNITS_BYTES, "1e400B", "\"1e400B\" is out of range"},
        {UNITS_BYTES, "1e300PB", "\"1e300PB\" is out of range"},     /* 1e315 */
        {UNITS_BYTES, "1e307PiB", "\"1e307PiB\" is out of range"},   /* 1e307 * 2^50 */
    };
    check_ok(ok, N(ok));
    check_bad(bad, N(bad));
}

static void test_rates(void **state)
{
    (void)state;
    static const ok_case ok[] = {
        {UNITS_RATE_BYTES, "3.1GB/s", 3.1e9},
        {UNITS_RATE_BYTES, "25Gbit/s", 3.125e9}, /* 25e9 / 8 */
        {UNITS_RATE_BYTES, "10Gbps", 1.25e9},    /* 10e9 / 8 */
        {UNITS_RATE_BYTES, "100MiB/s", 104857600.0}, /* 100 * 2^20 */
        {UNITS_RATE_BYTES, "1.25e9", 1.25e9},
        {UNITS_RATE_BYTES, "8bit/s", 1.0},
        {UNITS_RATE_BYTES, "1Gibit/s", 134217728.0}, /* 2^30 / 8 */
        {UNITS_RATE_BYTES, "1 Gbits/s", 1.25e8},
        {UNITS_RATE_BYTES, "40 bytes/s", 40.0},
        {UNITS_RATE_BYTES, "100kbps", 12500.0}, /* 1e5 / 8 */
        {UNITS_RATE_BYTES, "2 B/s", 2.0},
    };
    static const bad_case bad[] = {
        {UNITS_RATE_BYTES, "16GiB", "expected a rate such as 25Gbit/s or 3.1GB/s, got \"16GiB\""},
        {UNITS_RATE_BYTES, "10Gb/s",
         "ambiguous unit in \"10Gb/s\": write B/s for bytes or bit/s (bps) for bits, e.g. "
         "3.1GB/s or 25Gbit/s"},
        {UNITS_RATE_BYTES, "10GBps", NULL},
        {UNITS_RATE_BYTES, "10Gb", NULL},
        {UNITS_RATE_BYTES, "10Gbit", NULL},
        {UNITS_RATE_BYTES, "10GB/sec", NULL},
        {UNITS_RATE_BYTES, "10 GB/s/s", NULL},
        {UNITS_RATE_BYTES, "1e308GB/s", "\"1e308GB/s\" is out of range"},
    };
    check_ok(ok, N(ok));
    check_bad(bad, N(bad));
}

static void test_flop(void **state)
{
    (void)state;
    static const ok_case ok[] = {
        {UNITS_FLOP, "4.1GFLOP", 4.1e9}, /* exactly the double nearest 4.1e9 */
        {UNITS_FLOP, "1e9", 1e9},
        {UNITS_FLOP, "2 MFLOP", 2e6},
        {UNITS_FLOP, "3kflop", 3000.0},
        {UNITS_FLOP, "0.3TFLOP", 3e11},
        {UNITS_FLOPS, "14TFLOPS", 1.4e13},
        {UNITS_FLOPS, "14TFLOP/s", 1.4e13},
        {UNITS_FLOPS, "1.5e13", 1.5e13},
        {UNITS_FLOPS, "312 tflops", 3.12e14},
        {UNITS_FLOPS, "1PFLOPS", 1e15},
        {UNITS_FLOPS, "19.5TFLOPs", 1.95e13},
    };
    static const bad_case bad[] = {
        {UNITS_FLOP, "1TFLOPS", "expected an amount of work such as 4.1GFLOP or 1e9, got \"1TFLOPS\""},
        {UNITS_FLOP, "1GiFLOP", NULL},
        {UNITS_FLOP, "1GB", NULL},
        {UNITS_FLOPS, "14TFLOP", "expected a speed such as 14TFLOPS or 1.5e13, got \"14TFLOP\""},
        {UNITS_FLOPS, "14T", NULL},
        {UNITS_FLOPS, "14TFLOPS/s", NULL},
    };
    check_ok(ok, N(ok));
    check_bad(bad, N(bad));
}

static void test_seconds(void **state)
{
    (void)state;
    static const ok_case ok[] = {
        {UNITS_SECONDS, "50us", 5e-5},
        {UNITS_SECONDS, "50\xc2\xb5s", 5e-5}, /* micro sign */
        {UNITS_SECONDS, "0.5ms", 5e-4},
        {UNITS_SECONDS, "2s", 2.0},
        {UNITS_SECONDS, "1.5min", 90.0}, /* 1.5 * 60 */
        {UNITS_SECONDS, "1h", 3600.0},
        {UNITS_SECONDS, "3d", 259200.0}, /* 3 * 86400 */
        {UNITS_SECONDS, "10ns", 1e-8},
        {UNITS_SECONDS, "7", 7.0},
        {UNITS_SECONDS, "0.001", 0.001},
        {UNITS_SECONDS, "30 ms", 0.03},
    };
    static const bad_case bad[] = {
        {UNITS_SECONDS, "5m", "expected a duration such as 50us, 0.5ms or 2s, got \"5m\""},
        {UNITS_SECONDS, "1 hour", NULL},
        {UNITS_SECONDS, "2S", NULL},
        {UNITS_SECONDS, "1GB", NULL},
    };
    check_ok(ok, N(ok));
    check_bad(bad, N(bad));
}

static void test_fraction_and_dollars(void **state)
{
    (void)state;
    static const ok_case ok[] = {
        {UNITS_FRACTION, "0.001", 0.001},
        {UNITS_FRACTION, "0.1%", 0.001}, /* 0.1 / 100, read as 0.1e-2 */
        {UNITS_FRACTION, "5 %", 0.05},
        {UNITS_FRACTION, "50%", 0.5},
        {UNITS_FRACTION, "1.5", 1.5}, /* range is the caller's business */
        {UNITS_DOLLARS, "3.06", 3.06},
        {UNITS_DOLLARS, "$3.06", 3.06},
        {UNITS_DOLLARS, "$0", 0.0},
        {UNITS_DOLLARS, " $12.5 ", 12.5},
    };
    static const bad_case bad[] = {
        {UNITS_FRACTION, "0.1%%", "expected a fraction such as 0.001 or 0.1%, got \"0.1%%\""},
        {UNITS_FRACTION, "half", NULL},
        {UNITS_DOLLARS, "3.06$", "expected a price such as 3.06 or $3.06, got \"3.06$\""},
        {UNITS_DOLLARS, "3 USD", NULL},
        {UNITS_DOLLARS, "$", NULL},
        {UNITS_DOLLARS, "$$3", NULL},
        {UNITS_BYTES, "$3", NULL}, /* '$' only for prices */
    };
    check_ok(ok, N(ok));
    check_bad(bad, N(bad));
}

static void test_null_and_long(void **state)
{
    (void)state;
    char err[256];
    double v = 1.0;
    assert_int_equal(units_parse(UNITS_BYTES, NULL, &v, err, sizeof err), -1);
    assert_string_equal(err, "expected a size such as 16GiB or 512MB, got an empty value");
    char longtext[400];
    memset(longtext, '1', sizeof longtext - 1);
    longtext[sizeof longtext - 1] = '\0';
    assert_int_equal(units_parse(UNITS_NUMBER, longtext, &v, err, sizeof err), -1);
    assert_non_null(strstr(err, "(too long)"));
    /* 195 digits then e200 (about 1.1e394) fits the buffer and overflows */
    memcpy(longtext + 195, "e200", 5);
    assert_int_equal(units_parse(UNITS_NUMBER, longtext, &v, err, sizeof err), -1);
    assert_non_null(strstr(err, "is out of range"));
    assert_true(v == 1.0);
    /* a tiny err buffer is truncated, not overrun */
    char tiny[8];
    assert_int_equal(units_parse(UNITS_BYTES, "fast", &v, tiny, sizeof tiny), -1);
    assert_string_equal(tiny, "expecte");
    for (int k = UNITS_COUNT; k <= UNITS_DOLLARS; k++)
        assert_true(strlen(units_expect((units_kind)k)) > 10);
}

static void test_format(void **state)
{
    (void)state;
    static const struct {
        units_kind kind;
        double v;
        const char *want;
    } c[] = {
        {UNITS_BYTES, 68719476736.0, "64GiB"},  /* 64 * 2^30 */
        {UNITS_BYTES, 85899345920.0, "80GiB"},  /* 80 * 2^30 */
        {UNITS_BYTES, 1.5e9, "1.5GB"},          /* 1.397 GiB is not exact: decimal */
        {UNITS_BYTES, 1610612736.0, "1.5GiB"},  /* 1.5 * 2^30 */
        {UNITS_BYTES, 0.0, "0B"},
        {UNITS_BYTES, 1000.0, "1000B"},
        {UNITS_BYTES, 1234567890.0, "1.235GB"}, /* rounded */
        {UNITS_RATE_BYTES, 1.25e9, "1.25GB/s"},
        {UNITS_FLOPS, 1.4e13, "14TFLOPS"},
        {UNITS_FLOP, 4.1e9, "4.1GFLOP"},
        {UNITS_SECONDS, 0.0005, "500us"},
        {UNITS_SECONDS, 90.0, "1.5min"},
        {UNITS_SECONDS, 2.0, "2s"},
        {UNITS_COUNT, 12.0, "12"},
        {UNITS_DOLLARS, 3.06, "$3.06"},
    };
    for (size_t i = 0; i < N(c); i++) {
        char buf[64];
        units_format(c[i].kind, c[i].v, buf, sizeof buf);
        if (strcmp(buf, c[i].want) != 0)
            fail_msg("format %.17g: got %s, want %s", c[i].v, buf, c[i].want);
        /* what is printed reads back; exact figures read back exactly */
        double back;
        char err[256];
        if (units_parse(c[i].kind, buf, &back, err, sizeof err) != 0)
            fail_msg("format %.17g gave \"%s\" which does not parse: %s", c[i].v, buf, err);
        if (i != 6 && back != c[i].v)
            fail_msg("\"%s\" read back as %.17g, want %.17g", buf, back, c[i].v);
    }
}

/* units_put_long: the loaders' hand-made decimal writer (exponents, key
 * path indices), at zero, both signs, one-digit and the extremes. */
static void test_put_long(void **state)
{
    (void)state;
    static const struct {
        long v;
        const char *want;
    } cases[] = {{0, "0"}, {7, "7"}, {-6, "-6"}, {10, "10"}, {-100000, "-100000"},
                 {LONG_MAX, "9223372036854775807"}, {LONG_MIN, "-9223372036854775808"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char out[24];
        memset(out, 'x', sizeof out);
        size_t n = units_put_long(out, cases[i].v);
        assert_string_equal(out, cases[i].want);
        assert_int_equal(n, strlen(cases[i].want));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_count_and_number),
        cmocka_unit_test(test_bytes),
        cmocka_unit_test(test_rates),
        cmocka_unit_test(test_flop),
        cmocka_unit_test(test_seconds),
        cmocka_unit_test(test_fraction_and_dollars),
        cmocka_unit_test(test_null_and_long),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_put_long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
