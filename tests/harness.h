/* harness.h -- running the strata program from a test, as a user would.
 *
 * ctest hands every test STRATA_BIN (the program), STRATA_SRC (the source
 * tree) and STRATA_TMP (a scratch folder); these helpers read them with
 * sensible fallbacks for a test run by hand from the build folder, and run
 * a shell command capturing its standard output. Each test program is one
 * translation unit, so the static buffer is per program.
 */
#ifndef STRATA_TEST_HARNESS_H
#define STRATA_TEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* Standard output of the last harness_run, NUL-terminated (cut at 1 MiB). */
static char harness_out[1 << 20];

static inline const char *harness_bin(void) {
    const char *b = getenv("STRATA_BIN");
    return b ? b : "./strata";
}

static inline const char *harness_src(void) {
    const char *s = getenv("STRATA_SRC");
    return s ? s : "..";
}

static inline const char *harness_tmp(void) {
    const char *t = getenv("STRATA_TMP");
    return t ? t : "/tmp";
}

/* harness_run runs cmd through the shell, captures its standard output in
 * harness_out, and returns its exit status (-1 when it did not exit, e.g.
 * killed by a signal; a crash is never a pass). */
static inline int harness_run(const char *cmd) {
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(harness_out, 1, sizeof harness_out - 1, p);
    harness_out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* harness_slurp reads the whole of the file at path into a malloc'ed,
 * NUL-terminated buffer the caller frees, its length in *len (may be NULL);
 * NULL, and *len 0, when the file cannot be opened or read. */
static inline char *harness_slurp(const char *path, size_t *len) {
    if (len) *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *b = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (b = malloc((size_t)n + 1)) &&
        fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) {
        b[n] = '\0';
        if (len) *len = (size_t)n;
    }
    return b;
}

#endif
