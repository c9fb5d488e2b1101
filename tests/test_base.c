/* test_base.c -- the floor of the project (base/): splitmix64, the
 * monotonic clock and the byte formatter.
 *
 * The splitmix64 outputs are those of the reference C implementation
 * (Vigna's splitmix64.c) for seeds 0 and 1234567, as published with it
 * and in other ports' test vectors; every seeded solver draws from this
 * stream, so a changed constant would move every golden answer. The
 * clock is checked against direct readings of CLOCK_MONOTONIC.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "base/clock.h"
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_splitmix64_reference),
        cmocka_unit_test(test_splitmix64_unit),
        cmocka_unit_test(test_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
