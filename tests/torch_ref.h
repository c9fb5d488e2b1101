/* torch_ref.h -- reading scripts/torch_reference.py's HDF5 file from a test.
 *
 * The ctest fixture nets_torch_reference writes $STRATA_TMP/torch_reference.h5
 * (tests needing it declare FIXTURES_REQUIRED nets_torch_ref). open_ref and
 * close_ref are cmocka group setup/teardown; the readers fail the test when
 * a dataset or attribute is missing or has another size. Each test program
 * is one translation unit, so ref_file is per program.
 */
#ifndef STRATA_TEST_TORCH_REF_H
#define STRATA_TEST_TORCH_REF_H

#include <hdf5.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

static hid_t ref_file = -1;

/* Reads dataset `path` (converted to double) into a new buffer of exactly
 * n elements; fails the test if it is missing or has another size. */
static double *read_d(const char *path, size_t n)
{
    hid_t d = H5Dopen2(ref_file, path, H5P_DEFAULT);
    if (d < 0) fail_msg("reference file has no dataset %s", path);
    hid_t s = H5Dget_space(d);
    hssize_t np = H5Sget_simple_extent_npoints(s);
    if (np != (hssize_t)n) fail_msg("%s has %lld elements, expected %zu", path, (long long)np, n);
    double *buf = malloc((n ? n : 1) * sizeof *buf);
    assert_non_null(buf);
    assert_true(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
    H5Sclose(s);
    H5Dclose(d);
    return buf;
}

static void read_int(const char *path, int *out, size_t n)
{
    double *d = read_d(path, n);
    for (size_t i = 0; i < n; i++) out[i] = (int)d[i];
    free(d);
}

static double attr_d(const char *obj, const char *name)
{
    double v;
    hid_t a = H5Aopen_by_name(ref_file, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0) fail_msg("reference file: %s has no attribute %s", obj, name);
    assert_true(H5Aread(a, H5T_NATIVE_DOUBLE, &v) >= 0);
    H5Aclose(a);
    return v;
}

/* Compares n floats with the reference dataset at path (entries that are
 * -inf in both count as equal); prints and returns 1 if
 * max |diff| <= tol * max(floor, max |ref|). */
static int ref_compare(const char *label, const float *got, const char *path, size_t n, double floor,
                       double tol_rel)
{
    double *want = read_d(path, n);
    double diff = 0, scale = 0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (isinf(want[i]) && isinf(got[i]) && (want[i] < 0) == (got[i] < 0)) continue;
        double e = fabs((double)got[i] - want[i]);
        if (!(e <= diff)) { /* also catches NaN */
            diff = isnan(e) ? INFINITY : e;
            at = i;
        }
        if (isfinite(want[i])) scale = fmax(scale, fabs(want[i]));
    }
    double tol = tol_rel * fmax(floor, scale);
    int ok = diff <= tol;
    print_message("  %-26s max |diff| %.2e (at %zu, max |ref| %.2e) %s\n", label, diff, at, scale,
                  ok ? "ok" : "FAIL");
    free(want);
    return ok;
}

static int open_ref(void **state)
{
    (void)state;
    const char *tmp = getenv("STRATA_TMP");
    char path[1024];
    snprintf(path, sizeof path, "%s/torch_reference.h5", tmp ? tmp : ".");
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    ref_file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (ref_file < 0) {
        fprintf(stderr,
                "cannot open %s: run /usr/bin/python3 scripts/torch_reference.py %s first "
                "(ctest does it through the nets_torch_reference fixture)\n",
                path, path);
        return -1;
    }
    return 0;
}

static int close_ref(void **state)
{
    (void)state;
    if (ref_file >= 0) H5Fclose(ref_file);
    return 0;
}

#endif
