/* test_base.c -- the floor of the project (base/): splitmix64, the
 * monotonic clock, the byte formatter and the refcounted slot.
 *
 * The splitmix64 outputs are those of the reference C implementation
 * (Vigna's splitmix64.c) for seeds 0 and 1234567, as published with it
 * and in other ports' test vectors; every seeded solver draws from this
 * stream, so a changed constant would move every golden answer. The
 * clock is checked against direct readings of CLOCK_MONOTONIC. The byte
 * formatter's figures are worked out by hand at the unit boundaries. The
 * slot's entries are counted as they are freed: each exactly once, and
 * never while a reader holds it (ASan would also see a read after free).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "base/bytes.h"
#include "base/clock.h"
#include "base/rcslot.h"
#include "base/rng.h"

static void test_splitmix64_reference(void **state) {
    (void)state;
    static const uint64_t seed0[5] = {0xE220A8397B1DCDAFULL, 0x6E789E6AA1B965F4ULL,
                                      0x06C45D188009454FULL, 0xF88BB8A8724C81ECULL,
                                      0x1B39896A51A8749BULL};
    static const uint64_t seed1234567[5] = {6457827717110365317ULL, 3203168211198807973ULL,
                                            9817491932198370423ULL, 4593380528125082431ULL,
                                            16408922859458223821ULL};
    uint64_t s = 0;
    for (int i = 0; i < 5; i++) assert_true(splitmix64_next(&s) == seed0[i]);
    /* The state is a Weyl counter: five steps of the golden-ratio increment. */
    assert_true(s == 5 * 0x9E3779B97F4A7C15ULL);
    s = 1234567;
    for (int i = 0; i < 5; i++) assert_true(splitmix64_next(&s) == seed1234567[i]);
}

static void test_splitmix64_unit(void **state) {
    (void)state;
    /* The top 53 bits of the first output for seed 0 (0xE220A8397B1DCDAF
     * >> 11 = 0x1C4415072F63B9), times 2^-53. */
    uint64_t s = 0;
    double u = splitmix64_unit(&s);
    assert_true(u == (double)(0xE220A8397B1DCDAFULL >> 11) / 9007199254740992.0);
    assert_true(u > 0.88 && u < 0.89);
    /* Consumes exactly one output, like splitmix64_next. */
    uint64_t t = 0;
    (void)splitmix64_next(&t);
    assert_true(s == t);
    for (int i = 0; i < 10000; i++) {
        double v = splitmix64_unit(&s);
        assert_true(v >= 0.0 && v < 1.0);
    }
}

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Each reading lies between two direct readings of CLOCK_MONOTONIC taken
 * around it (so it is that clock, in seconds or nanoseconds), successive
 * readings never go back, and a 20 ms sleep shows as at least 20 ms. */
static void test_clock(void **state) {
    (void)state;
    double a = mono(), s = clock_now_s(), b = mono();
    assert_true(a <= s && s <= b);
    a = mono();
    double ns = (double)clock_now_ns() * 1e-9;
    b = mono();
    assert_true(a - 1e-6 <= ns && ns <= b + 1e-6); /* rounding of the double forms */
    double last_s = clock_now_s();
    uint64_t last_ns = clock_now_ns();
    for (int i = 0; i < 100000; i++) {
        double t = clock_now_s();
        uint64_t tn = clock_now_ns();
        assert_true(t >= last_s && tn >= last_ns);
        last_s = t;
        last_ns = tn;
    }
    double t0 = clock_now_s();
    uint64_t n0 = clock_now_ns();
    struct timespec nap = {0, 20000000};
    while (nanosleep(&nap, &nap) != 0) {
    }
    assert_true(clock_now_s() - t0 >= 0.020);
    assert_true(clock_now_ns() - n0 >= 20000000u);
    /* The wall clock is the epoch clock, not the monotonic one. */
    double w = clock_wall_s(), tw = (double)time(NULL);
    assert_true(w >= tw - 1.0 && w <= tw + 2.0);
}

typedef struct {
    double b;
    const char *want;
} bytes_case;

static void check_bytes(const bytes_style *st, const bytes_case *c, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char out[64];
        int len = bytes_format(out, sizeof out, c[i].b, st);
        if (strcmp(out, c[i].want))
            fail_msg("case %zu (%.17g): got \"%s\", want \"%s\"", i, c[i].b, out, c[i].want);
        assert_int_equal(len, (int)strlen(c[i].want));
    }
}

/* IEC: 1024 per step up to PiB, 4 significant digits at every step. */
static void test_bytes_iec(void **state) {
    (void)state;
    static const bytes_case c[] = {
        {0.0, "0 B"},
        {1023.0, "1023 B"},           /* the last count in bytes */
        {1024.0, "1 KiB"},            /* the first in KiB */
        {1536.0, "1.5 KiB"},
        {1048575.0, "1024 KiB"},      /* 1023.999 KiB rounds to 4 digits */
        {1048576.0, "1 MiB"},
        {85899345920.0, "80 GiB"},    /* 80 * 2^30 */
        {1.5e9, "1.397 GiB"},         /* 1.5e9 / 2^30 = 1.39698 */
        {1125899906842624.0, "1 PiB"},/* 2^50 */
        {1152921504606846976.0, "1024 PiB"}, /* 2^60: no unit above PiB */
        {INFINITY, "-"},
        {NAN, "-"},
    };
    check_bytes(&BYTES_IEC, c, sizeof c / sizeof *c);
}

/* SI: 1000 per step up to PB, 3 significant digits, whole bytes under
 * a kilobyte, negative counts scaled by their magnitude. */
static void test_bytes_si(void **state) {
    (void)state;
    static const bytes_case c[] = {
        {0.0, "0 B"},
        {12.5, "12 B"},         /* %.0f rounds half to even */
        {999.0, "999 B"},
        {999.6, "1000 B"},      /* still under one step: whole bytes */
        {1000.0, "1 KB"},
        {1234567.0, "1.23 MB"},
        {999999.0, "1e+03 KB"}, /* 999.999 KB to 3 digits */
        {-2500.0, "-2.5 KB"},
        {1e15, "1 PB"},
        {1e18, "1e+03 PB"},     /* no unit above PB */
        {-INFINITY, "-"},
    };
    check_bytes(&BYTES_SI, c, sizeof c / sizeof *c);
    /* A style with fewer units stops at its last; without whole bytes a
     * small count keeps its digits. */
    static const bytes_style to_tb = {1000.0, {"B", "kB", "MB", "GB", "TB", NULL}, 3, 0};
    static const bytes_case d[] = {
        {12.5, "12.5 B"},
        {1500.0, "1.5 kB"},
        {1e12, "1 TB"},
        {1e15, "1e+03 TB"},
    };
    check_bytes(&to_tb, d, sizeof d / sizeof *d);
    /* Truncated as snprintf truncates; the return is the full length. */
    char small[4];
    assert_int_equal(bytes_format(small, sizeof small, 1536.0, &BYTES_IEC), 7);
    assert_string_equal(small, "1.5");
}

/* An entry of the slot tests: a value readers check, and its ref. */
typedef struct {
    long value;
    rcslot_ref ref;
} rc_entry;

static atomic_long rc_freed;

static void rc_free(rcslot_ref *r) {
    rc_entry *e = RCSLOT_ENTRY(r, rc_entry, ref);
    e->value = -1; /* a reader that still held it would see -1 (and ASan the free) */
    free(e);
    atomic_fetch_add(&rc_freed, 1);
}

static rc_entry *rc_new(long v) {
    rc_entry *e = calloc(1, sizeof *e);
    assert_non_null(e);
    e->value = v;
    return e;
}

/* One reader, by hand: an entry swapped out while held stays whole until
 * its release, the current one until the slot goes; generations count. */
static void test_rcslot(void **state) {
    (void)state;
    atomic_store(&rc_freed, 0);
    rcslot *s = rcslot_create(rc_free);
    assert_non_null(s);
    assert_null(rcslot_acquire(s));
    rcslot_release(s, NULL);
    assert_null(RCSLOT_ENTRY((rcslot_ref *)NULL, rc_entry, ref));
    rc_entry *a = rc_new(1), *b = rc_new(2);
    assert_int_equal(rcslot_set(s, &a->ref), 1);
    rc_entry *got = RCSLOT_ENTRY(rcslot_acquire(s), rc_entry, ref);
    assert_ptr_equal(got, a);
    assert_int_equal(a->ref.refs, 2);
    assert_int_equal(rcslot_set(s, &b->ref), 2);
    assert_int_equal(atomic_load(&rc_freed), 0); /* a is held */
    assert_int_equal(got->value, 1);
    assert_int_equal(got->ref.generation, 1);
    rcslot_release(s, &got->ref);
    assert_int_equal(atomic_load(&rc_freed), 1);
    got = RCSLOT_ENTRY(rcslot_acquire(s), rc_entry, ref);
    assert_ptr_equal(got, b);
    assert_int_equal(got->ref.generation, 2);
    rcslot_release(s, &got->ref);
    assert_int_equal(atomic_load(&rc_freed), 1); /* b is the slot's */
    rcslot_free(s);
    assert_int_equal(atomic_load(&rc_freed), 2);
    rcslot_free(NULL);
}

#define RC_READERS 4
#define RC_SWAPS 20000

typedef struct {
    rcslot *s;
    atomic_int *stop;
    atomic_long reads; /* read by the writer while the reader counts */
    long bad;
} rc_reader;

static void *rc_read_loop(void *arg) {
    rc_reader *r = arg;
    long last = 0;
    while (!atomic_load(r->stop)) {
        rc_entry *e = RCSLOT_ENTRY(rcslot_acquire(r->s), rc_entry, ref);
        if (!e) continue;
        /* values only grow (the writer installs 1, 2, 3, ...) and an entry
         * held is never freed under the reader */
        if (e->value < last || e->value != (long)e->ref.generation) r->bad++;
        last = e->value;
        atomic_fetch_add(&r->reads, 1);
        rcslot_release(r->s, &e->ref);
    }
    return NULL;
}

/* Readers acquire and release while the main thread swaps RC_SWAPS
 * entries in: every entry is freed exactly once, none under a reader. */
static void test_rcslot_threads(void **state) {
    (void)state;
    atomic_store(&rc_freed, 0);
    rcslot *s = rcslot_create(rc_free);
    assert_non_null(s);
    atomic_int stop = 0;
    rc_reader rd[RC_READERS];
    pthread_t th[RC_READERS];
    for (int i = 0; i < RC_READERS; i++) {
        rd[i].s = s;
        rd[i].stop = &stop;
        atomic_init(&rd[i].reads, 0);
        rd[i].bad = 0;
        assert_int_equal(pthread_create(&th[i], NULL, rc_read_loop, &rd[i]), 0);
    }
    /* the first entry, then every reader has read before the swaps go on
     * (on a loaded machine the swaps could end before a reader ran) */
    assert_int_equal(rcslot_set(s, &rc_new(1)->ref), 1);
    double t0 = clock_now_s();
    for (int i = 0; i < RC_READERS; i++)
        while (atomic_load(&rd[i].reads) == 0) {
            if (clock_now_s() - t0 > 60) fail_msg("reader %d never read", i);
            sched_yield();
        }
    for (long v = 2; v <= RC_SWAPS; v++) {
        assert_int_equal(rcslot_set(s, &rc_new(v)->ref), (uint64_t)v);
        if (v % 64 == 0) sched_yield(); /* let the readers run between swaps */
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < RC_READERS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(rd[i].bad, 0);
        assert_true(atomic_load(&rd[i].reads) > 0);
    }
    assert_int_equal(atomic_load(&rc_freed), RC_SWAPS - 1);
    rcslot_free(s);
    assert_int_equal(atomic_load(&rc_freed), RC_SWAPS);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_splitmix64_reference),
        cmocka_unit_test(test_splitmix64_unit),
        cmocka_unit_test(test_clock),
        cmocka_unit_test(test_bytes_iec),
        cmocka_unit_test(test_bytes_si),
        cmocka_unit_test(test_rcslot),
        cmocka_unit_test(test_rcslot_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
