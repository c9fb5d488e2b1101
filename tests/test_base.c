/* test_base.c -- the floor of the project (base/): splitmix64, the
 * monotonic clock and the byte formatter.
 *
 * The splitmix64 outputs are those of the reference C implementation
 * (Vigna's splitmix64.c) for seeds 0 and 1234567, as published with it
 * and in other ports' test vectors; every seeded solver draws from this
 * stream, so a changed constant would move every golden answer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_splitmix64_reference),
        cmocka_unit_test(test_splitmix64_unit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
