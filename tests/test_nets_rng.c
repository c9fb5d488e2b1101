/* test_nets_rng.c -- the counter-based RNG (nets/rng) and sampling from a
 * masked distribution (nn_sample, nn_argmax in nets/layers).
 *
 * Philox4x32-10 is checked against the three published Random123
 * known-answer vectors (kat_vectors: zero counter and key, all-ones,
 * digits of pi). Sampling frequencies are checked against the
 * probabilities with a 5-sigma binomial bound.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nets/layers.h"
#include "nets/rng.h"

static void test_philox_kat(void **state)
{
    (void)state;
    uint32_t o[4];
    /* counter (0,0,0,0), key (0,0) */
    rng_block(o, 0, 0, 0);
    assert_true(o[0] == 0x6627e8d5u && o[1] == 0xe169c58du && o[2] == 0xbc57ac4cu && o[3] == 0x9b00dbd8u);
    /* all ones */
    rng_block(o, ~0ULL, ~0ULL, ~0ULL);
    assert_true(o[0] == 0x408f276du && o[1] == 0x41c83b0eu && o[2] == 0xa20bc7c6u && o[3] == 0x6d5451fdu);
    /* pi: counter words 243f6a88 85a308d3 13198a2e 03707344, key a4093822
     * 299f31d0 (word 0 is the low half of our 64-bit arguments) */
    rng_block(o, 0x299f31d0a4093822ULL, 0x85a308d3243f6a88ULL, 0x0370734413198a2eULL);
    assert_true(o[0] == 0xd16cfe09u && o[1] == 0x94fdccebu && o[2] == 0x5001e420u && o[3] == 0x24126ea1u);
}

static void test_cursor(void **state)
{
    (void)state;
    rng_t r;
    rng_init(&r, 42);
    assert_true(r.seed == 42 && r.stream == RNG_STREAM_USER && r.counter == 0);
    /* the cursor form and the stateless form agree, draw by draw */
    for (uint64_t i = 0; i < 100; i++) {
        double u = rng_uniform(&r);
        assert_true(u == rng_uniform_at(42, 0, i));
        assert_true(u >= 0 && u < 1);
    }
    assert_true(r.counter == 100);
    /* restoring (seed, stream, counter) resumes the same sequence */
    rng_t a = {7, 3, 1000}, b = a;
    double x = rng_normal(&a);
    assert_true(x == rng_normal(&b));
    /* distinct streams and seeds give distinct numbers */
    assert_true(rng_uniform_at(7, 3, 5) != rng_uniform_at(7, 4, 5));
    assert_true(rng_uniform_at(7, 3, 5) != rng_uniform_at(8, 3, 5));
    /* moments over 200000 draws: uniform mean 1/2 (sd of the mean
     * 0.2887/sqrt(n) = 6.5e-4), normal mean 0 and variance 1 */
    rng_init(&r, 1);
    double su = 0, sn = 0, sn2 = 0;
    int n = 200000;
    for (int i = 0; i < n; i++) {
        su += rng_uniform(&r);
        double z = rng_normal(&r);
        sn += z;
        sn2 += z * z;
    }
    assert_true(fabs(su / n - 0.5) < 5 * 6.5e-4);
    assert_true(fabs(sn / n) < 5 * 2.3e-3);
    assert_true(fabs(sn2 / n - 1) < 5 * 3.2e-3);
}

static void test_sample_frequencies(void **state)
{
    (void)state;
    /* K = 4: probabilities [0.1, 0.2, (masked), 0.7]; the masked entry has
     * a nonzero probability on purpose: the mask alone must exclude it. */
    enum { N = 20000, K = 4 };
    static float probs[N * K];
    static uint8_t mask[N * K];
    static int act[N];
    const float p[K] = {0.1f, 0.2f, 0.5f, 0.7f};
    const uint8_t m[K] = {1, 1, 0, 1};
    for (int n = 0; n < N; n++) {
        memcpy(probs + n * K, p, sizeof p);
        memcpy(mask + n * K, m, sizeof m);
    }
    rng_t r;
    rng_init(&r, 2024);
    assert_int_equal(nn_sample(act, probs, mask, N, K, &r), 0);
    assert_true(r.counter == N);
    int count[K] = {0};
    for (int n = 0; n < N; n++) {
        assert_true(act[n] >= 0 && act[n] < K);
        count[act[n]]++;
    }
    assert_int_equal(count[2], 0);
    /* the real entries sum to 1.0: expected N*p, sd sqrt(N p (1-p)) */
    double want[K] = {0.1, 0.2, 0, 0.7};
    for (int k = 0; k < K; k++) {
        double sd = sqrt(N * want[k] * (1 - want[k]));
        assert_true(fabs(count[k] - N * want[k]) <= 5 * sd + 1e-9);
    }
}

static void test_sample_independent_of_split(void **state)
{
    (void)state;
    /* sampling 1000 rows at once or in chunks of 1, 7 and 992 rows gives
     * the same actions: row n always uses counter base + n */
    enum { N = 1000, K = 5 };
    static float probs[N * K];
    rng_t r;
    rng_init(&r, 9);
    for (int i = 0; i < N * K; i++) probs[i] = (float)rng_uniform(&r);
    int whole[N], parts[N];
    rng_t a = {77, 2, 500}, b = a;
    nn_sample(whole, probs, NULL, N, K, &a);
    nn_sample(parts, probs, NULL, 1, K, &b);
    nn_sample(parts + 1, probs + K, NULL, 7, K, &b);
    nn_sample(parts + 8, probs + 8 * K, NULL, N - 8, K, &b);
    assert_memory_equal(whole, parts, sizeof whole);
    assert_true(a.counter == b.counter && a.counter == 500 + N);
}

static void test_sample_edges(void **state)
{
    (void)state;
    /* row 0 fully masked -> -1; row 1 one real entry -> always it; row 2
     * zero probability except one entry; argmax takes the largest real
     * entry, first on ties */
    float probs[3 * 3] = {0.3f, 0.3f, 0.4f, 0.9f, 0.05f, 0.05f, 0, 0, 1};
    uint8_t mask[3 * 3] = {0, 0, 0, 0, 1, 0, 1, 1, 1};
    int act[3];
    rng_t r;
    rng_init(&r, 5);
    for (int rep = 0; rep < 50; rep++) {
        assert_int_equal(nn_sample(act, probs, mask, 3, 3, &r), 1);
        assert_int_equal(act[0], -1);
        assert_int_equal(act[1], 1);
        assert_int_equal(act[2], 2);
    }
    float vals[2 * 3] = {1, 3, 3, 5, 9, 2};
    uint8_t m2[2 * 3] = {1, 1, 1, 1, 0, 1};
    assert_int_equal(nn_argmax(act, vals, m2, 2, 3), 0);
    assert_int_equal(act[0], 1); /* tie 3 = 3: the first */
    assert_int_equal(act[1], 0); /* 9 is masked: 5 */
    assert_int_equal(nn_argmax(act, vals, mask, 1, 3), 1);
    assert_int_equal(act[0], -1);
}

/* Rows whose real entries have NaN or zero probabilities (the softmax of
 * infinite logits) still get one of their real entries, never -1 (a caller
 * indexes with it), and both real entries come up. */
static void test_sample_nan_rows(void **state)
{
    (void)state;
    float probs[2 * 4] = {NAN, NAN, NAN, NAN, 0, NAN, 0, 0};
    uint8_t mask[2 * 4] = {1, 0, 1, 0, 1, 1, 1, 1};
    int act[2], seen[4] = {0};
    rng_t r;
    rng_init(&r, 9);
    for (int rep = 0; rep < 200; rep++) {
        assert_int_equal(nn_sample(act, probs, mask, 2, 4, &r), 0);
        assert_true(act[0] == 0 || act[0] == 2);
        assert_true(act[1] >= 0 && act[1] < 4);
        seen[act[0]]++;
    }
    assert_true(seen[0] > 50 && seen[2] > 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_philox_kat),         cmocka_unit_test(test_cursor),
        cmocka_unit_test(test_sample_frequencies), cmocka_unit_test(test_sample_independent_of_split),
        cmocka_unit_test(test_sample_edges),       cmocka_unit_test(test_sample_nan_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
