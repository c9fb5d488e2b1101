/* test_validation.c -- docs/validation.md quotes what strata calibrate prints.
 *
 * docs/validation.md (written by scripts/validation.py) quotes, in code
 * blocks, `strata calibrate` commands on the shipped measurements
 * (configs/measurements/) each followed by the "MAPE on fitted rows ..."
 * line it printed. This test finds every such pair, runs the command again
 * from the source folder, and checks the program prints exactly the quoted
 * line, so that neither the page nor the measurements, job configs, cluster
 * or fit can change without the other.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/harness.h"

#define DOC_MAX (1 << 20)

/* mape_line copies the first line of text that starts with "MAPE" into
 * out[n] (without its newline); returns 0, or -1 when there is none. */
static int mape_line(const char *text, char *out, size_t n) {
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, "MAPE", 4)) continue;
        size_t len = strcspn(p, "\n");
        if (len >= n) return -1;
        memcpy(out, p, len);
        out[len] = '\0';
        return 0;
    }
    return -1;
}

static void test_doc_figures(void **state) {
    (void)state;
    char path[1200];
    snprintf(path, sizeof path, "%s/docs/validation.md", harness_src());
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("cannot open %s", path);
    char *doc = malloc(DOC_MAX);
    assert_non_null(doc);
    size_t len = fread(doc, 1, DOC_MAX - 1, f);
    fclose(f);
    doc[len] = '\0';
    int checked = 0, holdout_job = 0;
    static const char CMD[] = "$ strata calibrate ";
    for (char *p = strstr(doc, CMD); p; p = strstr(p + 1, CMD)) {
        char args[1024], want[256], got[256], cmd[2048];
        size_t alen = strcspn(p + sizeof CMD - 1, "\n");
        assert_true(alen < sizeof args);
        memcpy(args, p + sizeof CMD - 1, alen);
        args[alen] = '\0';
        /* the quoted MAPE line: after the command, before the block's end */
        const char *end = strstr(p, "```");
        const char *next = strstr(p + 1, CMD);
        if (next && (!end || next < end)) end = next;
        char *m = strstr(p, "\nMAPE");
        if (!m || (end && m > end)) fail_msg("%s: no MAPE line after \"%s\"", path, args);
        assert_int_equal(mape_line(m + 1, want, sizeof want), 0);
        snprintf(cmd, sizeof cmd, "cd %s && %s calibrate %s", harness_src(), harness_bin(), args);
        assert_int_equal(harness_run(cmd), 0);
        if (mape_line(harness_out, got, sizeof got)) fail_msg("%s printed no MAPE line", cmd);
        if (strcmp(got, want))
            fail_msg("%s\n  prints: %s\n  docs/validation.md quotes: %s", cmd, got, want);
        checked++;
        holdout_job += strstr(args, "--holdout-job") != NULL;
    }
    free(doc);
    /* on each of the two CSVs (wall clock, per CPU second): the random
     * split and one model held out at a time, four models */
    assert_int_equal(checked, 10);
    assert_int_equal(holdout_job, 8);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_doc_figures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
