/* test_nets_params.c -- the parameter store (nets/params): layout from the
 * table, validation messages, seeded initialisers, global-norm clipping and
 * AdamW, with the expected figures worked out by hand. (AdamW and clipping
 * are also compared with torch.optim.AdamW in test_nets_torch.c.)
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nets/params.h"

static void test_layout(void **state)
{
    (void)state;
    nn_tensor_spec t[3] = {
        nn_spec("enc", "w", NN_INIT_XAVIER, 1, 0, 5, 3, 0, 0),  /* 15 floats */
        nn_spec("enc", "b", NN_INIT_ZEROS, 0, 1, 17, 0, 0, 0),  /* 17 floats */
        nn_spec("head", "k", NN_INIT_NORMAL, 1, 0, 2, 2, 2, 2), /* 16 floats */
    };
    char err[256];
    nn_params *p = nn_params_create(t, 3, err, sizeof err);
    assert_non_null(p);
    /* offsets round up to 16 floats: 0, 16, 16 + 32 = 48; total 64 */
    assert_int_equal(p->off[0], 0);
    assert_int_equal(p->off[1], 16);
    assert_int_equal(p->off[2], 48);
    assert_int_equal(p->total, 64);
    assert_int_equal(p->size[1], 17);
    assert_int_equal(((uintptr_t)p->params | (uintptr_t)p->grads | (uintptr_t)p->m | (uintptr_t)p->v) % 64,
                     0);
    assert_int_equal(nn_params_find(p, "enc", "b"), 1);
    assert_int_equal(nn_params_find(p, "head", "k"), 2);
    assert_int_equal(nn_params_find(p, "head", "w"), -1);
    assert_true(nn_param(p, 2) == p->params + 48 && nn_grad(p, 1) == p->grads + 16);
    assert_int_equal(p->spec[2].ndim, 4);
    char s[32];
    assert_string_equal(nn_shape_str(s, sizeof s, 4, p->spec[2].dims), "[2,2,2,2]");
    nn_params_free(p);
    nn_params_free(NULL);
}

static void test_validation(void **state)
{
    (void)state;
    char err[256];
    nn_tensor_spec t[2] = {nn_spec("a", "w", NN_INIT_XAVIER, 1, 0, 4, 4, 0, 0),
                           nn_spec("a", "w", NN_INIT_ZEROS, 0, 0, 4, 0, 0, 0)};
    assert_null(nn_params_create(t, 2, err, sizeof err));
    assert_string_equal(err, "tensor a/w is declared twice (entries 0 and 1)");
    t[1] = nn_spec("a/x", "w", NN_INIT_ZEROS, 0, 0, 4, 0, 0, 0);
    assert_null(nn_params_create(t, 2, err, sizeof err));
    assert_non_null(strstr(err, "without '/'"));
    t[1] = nn_spec("a", "b", NN_INIT_ZEROS, 0, 0, 4, -2, 0, 0);
    assert_null(nn_params_create(t, 2, err, sizeof err));
    assert_string_equal(err, "tensor a/b: dimension 1 is -2, must be in 1..2^31");
    t[1] = nn_spec("a", "b", NN_INIT_XAVIER, 1, 0, 4, 0, 0, 0);
    assert_null(nn_params_create(t, 2, err, sizeof err));
    assert_non_null(strstr(err, "does not fit rank 1"));
    t[1] = nn_spec("meta", "b", NN_INIT_ZEROS, 0, 0, 4, 0, 0, 0); /* reserved for the checkpoint */
    assert_null(nn_params_create(t, 2, err, sizeof err));
    assert_null(nn_params_create(t, 0, err, sizeof err));
}

static void test_init(void **state)
{
    (void)state;
    nn_tensor_spec t[5] = {
        nn_spec("x", "w", NN_INIT_XAVIER, 1, 0, 30, 20, 0, 0),
        nn_spec("lstm", "w_hh", NN_INIT_ORTHO, 1, 0, 4 * 16, 16, 0, 0),
        nn_spec("lstm", "b", NN_INIT_LSTM_BIAS, 1, 1, 4 * 16, 0, 0, 0),
        nn_spec("wide", "w", NN_INIT_ORTHO, 2, 0, 3, 5, 0, 0),
        nn_spec("n", "g", NN_INIT_ONES, 0, 1, 7, 0, 0, 0),
    };
    char err[256];
    nn_params *p = nn_params_create(t, 5, err, sizeof err), *q = nn_params_create(t, 5, err, sizeof err);
    nn_params_init(p, 123);
    nn_params_init(q, 123);
    assert_memory_equal(p->params, q->params, p->total * sizeof(float)); /* seeded */
    nn_params_init(q, 124);
    assert_memory_not_equal(p->params, q->params, p->size[0] * sizeof(float));
    /* Xavier [30,20]: a = sqrt(6 / (20 + 30)) = 0.3464102; U(-a, a) has
     * variance a^2/3 = 0.04; with 600 draws the sample variance has sd
     * about 0.04 * sqrt(0.8/600) = 0.0015 */
    const float *w = nn_param(p, 0);
    double s2 = 0;
    for (int e = 0; e < 600; e++) {
        assert_true(fabsf(w[e]) <= 0.3464102f);
        s2 += (double)w[e] * w[e];
    }
    assert_true(fabs(s2 / 600 - 0.04) < 5 * 0.0015);
    /* orthogonal [64,16]: four 16x16 blocks, each Q^T Q = I */
    const float *o = nn_param(p, 1);
    for (int blk = 0; blk < 4; blk++)
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 16; j++) {
                double d = 0;
                for (int r = 0; r < 16; r++)
                    d += (double)o[(blk * 16 + r) * 16 + i] * o[(blk * 16 + r) * 16 + j];
                assert_true(fabs(d - (i == j)) < 1e-5);
            }
    /* wide [3,5] with gain 2: orthonormal rows scaled by 2, Q Q^T = 4 I */
    const float *wd = nn_param(p, 3);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double d = 0;
            for (int c = 0; c < 5; c++) d += (double)wd[i * 5 + c] * wd[j * 5 + c];
            assert_true(fabs(d - 4.0 * (i == j)) < 1e-5);
        }
    /* LSTM bias: forget block [16, 32) is 1, the rest 0 */
    const float *b = nn_param(p, 2);
    for (int e = 0; e < 64; e++) assert_true(b[e] == ((e >= 16 && e < 32) ? 1.0f : 0.0f));
    for (int e = 0; e < 7; e++) assert_true(nn_param(p, 4)[e] == 1.0f);
    nn_params_free(p);
    nn_params_free(q);
}

static void test_clip(void **state)
{
    (void)state;
    nn_tensor_spec t[2] = {nn_spec("a", "w", NN_INIT_ZEROS, 0, 0, 2, 0, 0, 0),
                           nn_spec("b", "w", NN_INIT_ZEROS, 0, 0, 3, 0, 0, 0)};
    char err[256];
    nn_params *p = nn_params_create(t, 2, err, sizeof err);
    /* gradients (3, 4 | 0, 12, 0): norm sqrt(9 + 16 + 144) = 13 */
    float g0[2] = {3, 4}, g1[3] = {0, 12, 0};
    memcpy(nn_grad(p, 0), g0, sizeof g0);
    memcpy(nn_grad(p, 1), g1, sizeof g1);
    assert_true(nn_clip_grad_norm(p, 20) == 13.0); /* below the limit: untouched */
    assert_true(nn_grad(p, 1)[1] == 12.0f);
    /* limit 6.5: scaled by 6.5 / (13 + 1e-6) = 0.49999996: 12 -> 5.9999995 */
    assert_true(nn_clip_grad_norm(p, 6.5) == 13.0);
    assert_true(fabsf(nn_grad(p, 0)[0] - 1.5f) < 1e-6f && fabsf(nn_grad(p, 1)[1] - 6.0f) < 1e-6f);
    assert_true(fabs(nn_clip_grad_norm(p, 0) - 6.5) < 1e-5); /* 0: measure only */
    nn_params_zero_grad(p);
    assert_true(nn_grad(p, 0)[1] == 0 && nn_grad(p, 1)[1] == 0);
    nn_params_free(p);
}

static void test_adamw(void **state)
{
    (void)state;
    nn_tensor_spec t[2] = {nn_spec("a", "w", NN_INIT_ONES, 0, 0, 1, 0, 0, 0),
                           nn_spec("a", "b", NN_INIT_ONES, 0, 1, 1, 0, 0, 0)};
    char err[256];
    nn_params *p = nn_params_create(t, 2, err, sizeof err);
    nn_params_init(p, 0);
    nn_adam_cfg c = {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.5};
    /* step 1, g = 2: m = 0.2, v = 0.004; bias-corrected m/(1-0.9) = 2,
     * sqrt(v/(1-0.999)) = 2, so the step is lr * 2 / (2 + 1e-8) = 0.1.
     * decayed tensor: 1 * (1 - 0.1 * 0.5) - 0.1 = 0.85; the other: 0.9 */
    nn_grad(p, 0)[0] = 2;
    nn_grad(p, 1)[0] = 2;
    nn_adam_step(p, &c, 1);
    assert_true(fabsf(nn_param(p, 0)[0] - 0.85f) < 1e-6f);
    assert_true(fabsf(nn_param(p, 1)[0] - 0.9f) < 1e-6f);
    assert_true(fabsf(p->m[p->off[1]] - 0.2f) < 1e-7f && fabsf(p->v[p->off[1]] - 0.004f) < 1e-9f);
    /* step 2, g = -1 (no-decay tensor): m = 0.9*0.2 - 0.1 = 0.08,
     * v = 0.999*0.004 + 0.001 = 0.004996, 1-0.9^2 = 0.19, 1-0.999^2 =
     * 0.001999, denom = sqrt(0.004996)/sqrt(0.001999) + 1e-8 = 1.5809015,
     * w = 0.9 - (0.1/0.19) * 0.08 / 1.5809015 = 0.8733663 */
    nn_grad(p, 1)[0] = -1;
    nn_adam_step(p, &c, 2);
    assert_true(fabsf(p->m[p->off[1]] - 0.08f) < 1e-7f);
    assert_true(fabsf(nn_param(p, 1)[0] - 0.8733663f) < 2e-6f);
    nn_params_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout), cmocka_unit_test(test_validation), cmocka_unit_test(test_init),
        cmocka_unit_test(test_clip),   cmocka_unit_test(test_adamw),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
