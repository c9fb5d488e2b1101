/* test_files.c -- files that never end or explode (issue 13).
 *
 * The bounded reader (base/file.h) and the loader's bounds on one load
 * (env/schema_ctx.h), on real files in $STRATA_TMP: a device, a FIFO
 * without a writer, a file over the limit, an include "diamond", files
 * that together exceed the bytes of one load, deeply nested flow YAML; and
 * the daemon's --token-file, a nodes JSON, a measurements CSV and a
 * policy checkpoint on a FIFO, and a CSV over its limit, through the real
 * program. Each
 * error is checked as the exact message a user sees.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/file.h"
#include "env/config.h"
#include "env/schema.h"
#include "env/schema_ctx.h"
#include "solvers/calib.h"

static char g_tmp[1024]; /* $STRATA_TMP/files */

static int setup(void **state)
{
    (void)state;
    const char *tmp = getenv("STRATA_TMP");
    snprintf(g_tmp, sizeof g_tmp, "%s/files", tmp ? tmp : "/tmp");
    mkdir(g_tmp, 0777);
    return 0;
}

/* tmp_path writes $STRATA_TMP/files/name into out[len]. */
static void tmp_path(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", g_tmp, name);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* a FIFO at path, made afresh */
static void make_fifo(const char *path)
{
    unlink(path);
    assert_int_equal(mkfifo(path, 0600), 0);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* file_read: a regular file up to the limit; one byte more, a device, a
 * FIFO and a directory are refused with the reason. */
static void test_file_read(void **state)
{
    (void)state;
    char path[1200], why[256], *text;
    size_t len;
    file_info info;
    tmp_path(path, sizeof path, "ten.txt");
    write_file(path, "0123456789");
    assert_int_equal(file_read(path, 10, &text, &len, &info, why, sizeof why), 0);
    assert_int_equal(len, 10);
    assert_int_equal(info.size, 10);
    assert_string_equal(text, "0123456789");
    free(text);
    assert_int_equal(file_read(path, 9, &text, &len, NULL, why, sizeof why), -1);
    assert_null(text);
    assert_string_equal(why, "cannot read: 10 bytes, larger than the limit of 9 bytes");
    assert_int_equal(file_read("/dev/zero", 9, &text, &len, NULL, why, sizeof why), -1);
    assert_string_equal(why, "cannot read: not a regular file (a character device)");
    assert_int_equal(file_read(g_tmp, 9, &text, &len, NULL, why, sizeof why), -1);
    assert_string_equal(why, "cannot open: Is a directory");
    tmp_path(path, sizeof path, "none.txt");
    unlink(path);
    assert_int_equal(file_read(path, 9, &text, &len, NULL, why, sizeof why), -1);
    assert_string_equal(why, "cannot open: No such file or directory");
}

/* A config, an include and a cfg_doc (eval specs, train configs) that is
 * /dev/zero or a FIFO without a writer: refused at once (the old loader
 * read /dev/zero until memory ran out and waited on the FIFO for ever). */
static void test_not_regular(void **state)
{
    (void)state;
    char err[4096], want[4096], path[1200], fifo[1200];
    assert_null(cfg_load("/dev/zero", err, sizeof err));
    assert_string_equal(err, "/dev/zero: cannot read: not a regular file (a character device)");

    tmp_path(path, sizeof path, "inc_zero.yaml");
    write_file(path, "model: v1\ninclude: /dev/zero\n");
    assert_null(cfg_load(path, err, sizeof err));
    snprintf(want, sizeof want,
             "/dev/zero: cannot read: not a regular file (a character device) (included from "
             "%s:2:10)",
             path);
    assert_string_equal(err, want);

    tmp_path(fifo, sizeof fifo, "fifo.yaml");
    make_fifo(fifo);
    double t0 = now();
    assert_null(cfg_load(fifo, err, sizeof err));
    snprintf(want, sizeof want, "%s: cannot read: not a regular file (a FIFO)", fifo);
    assert_string_equal(err, want);
    assert_null(cfg_doc_load(fifo, err, sizeof err));
    assert_string_equal(err, want);
    write_file(path, "include: [fifo.yaml]\n");
    assert_null(cfg_load(path, err, sizeof err));
    snprintf(want, sizeof want,
             "%s: cannot read: not a regular file (a FIFO) (included from %s:1:11)", fifo, path);
    assert_string_equal(err, want);
    assert_true(now() - t0 < 5);
    unlink(fifo);
}

/* A config over FILE_MAX_CONFIG (a sparse file: no disk used). The old
 * loader read it whole and failed on its NUL bytes as a syntax error. */
static void test_too_large(void **state)
{
    (void)state;
    char err[4096], want[4096], path[1200];
    tmp_path(path, sizeof path, "huge.yaml");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)FILE_MAX_CONFIG + 1), 0);
    close(fd);
    assert_null(cfg_load(path, err, sizeof err));
    snprintf(want, sizeof want, "%s: cannot read: %zu bytes, larger than the limit of %zu bytes",
             path, FILE_MAX_CONFIG + 1, FILE_MAX_CONFIG);
    assert_string_equal(err, want);
    unlink(path);
}

/* An include diamond: d0 includes d1 twice, d1 includes d2 twice, ...,
 * d10 holds `model: v1`. No cycle, but 2^11 - 2 = 2046 includes. Counted
 * depth-first, the first 10 go straight down to d10, the 11th is d9's
 * second include of d10, ...: the 257th is again a second include of d10
 * by d9 (at d9.yaml:1:21), which is refused there. The old loader walked
 * all 2046 (with 18 levels: 2^19, 7-14 s and 1.1 GB) and then said the
 * cluster was missing. */
static void test_include_diamond(void **state)
{
    (void)state;
    char err[4096], want[4096], path[1200], name[64];
    for (int i = 0; i <= 10; i++) {
        snprintf(name, sizeof name, "d%d.yaml", i);
        tmp_path(path, sizeof path, name);
        char text[128];
        if (i < 10)
            snprintf(text, sizeof text, "include: [d%d.yaml, d%d.yaml]\n", i + 1, i + 1);
        else
            snprintf(text, sizeof text, "model: v1\n");
        write_file(path, text);
    }
    tmp_path(path, sizeof path, "d0.yaml");
    assert_null(cfg_load(path, err, sizeof err));
    char d9[1200], d10[1200];
    tmp_path(d9, sizeof d9, "d9.yaml");
    tmp_path(d10, sizeof d10, "d10.yaml");
    snprintf(want, sizeof want,
             "%s:1:21: include[1]: more than %d includes in one load (a file included from "
             "several places counts each time): %s",
             d9, CFG_MAX_INCLUDES, d10);
    assert_string_equal(err, want);
}

/* Files that together hold more than CFG_MAX_LOAD_BYTES: each is within
 * FILE_MAX_CONFIG (a key and a long comment); after four of them the
 * fifth include is one too many, refused at its name: column
 * 10 ("include: [") + 4 * 11 ("bigN.yaml, ") + 1 = 55. */
static void test_load_bytes(void **state)
{
    (void)state;
    char err[4096], want[4096], path[1200], name[64];
    size_t each = FILE_MAX_CONFIG - 4096;
    char *text = malloc(each + 1);
    assert_non_null(text);
    memset(text, 'x', each);
    memcpy(text, "model: v1\n# ", 12);
    text[each - 1] = '\n';
    text[each] = '\0';
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "big%d.yaml", i);
        tmp_path(path, sizeof path, name);
        write_file(path, text);
    }
    free(text);
    tmp_path(path, sizeof path, "bigs.yaml");
    write_file(path, "include: [big0.yaml, big1.yaml, big2.yaml, big3.yaml, big4.yaml]\n");
    assert_null(cfg_load(path, err, sizeof err));
    char big[1200];
    tmp_path(big, sizeof big, "big4.yaml");
    snprintf(want, sizeof want,
             "%s:1:55: include[4]: the files of this load exceed %d MiB in total with %s", path,
             (int)(CFG_MAX_LOAD_BYTES >> 20), big);
    assert_string_equal(err, want);
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "big%d.yaml", i);
        tmp_path(path, sizeof path, name);
        unlink(path);
    }
}

/* Nesting: 64 levels load (then fail on the unknown key), 65 are refused
 * at the list that opens the 65th; 200 KB of '[' (36 s in the old loader)
 * is refused at once. */
static void test_nesting(void **state)
{
    (void)state;
    char err[4096], text[512];
    /* the top-level mapping is level 1: 63 lists inside it make 64 */
    int n = snprintf(text, sizeof text, "a: ");
    for (int i = 0; i < 63; i++) text[n++] = '[';
    for (int i = 0; i < 63; i++) text[n++] = ']';
    text[n] = '\0';
    assert_null(cfg_load_buffer("deep", text, strlen(text), err, sizeof err));
    assert_string_equal(err, "deep:1:1: a: unknown key (valid keys: model, objective, include, "
                             "cluster, job, jobs)");
    n = snprintf(text, sizeof text, "a: ");
    for (int i = 0; i < 64; i++) text[n++] = '[';
    for (int i = 0; i < 64; i++) text[n++] = ']';
    text[n] = '\0';
    assert_null(cfg_load_buffer("deep", text, strlen(text), err, sizeof err));
    /* the 64th '[' opens level 65, at column 3 + 64 */
    assert_string_equal(err, "deep:1:67: lists and mappings nested more than 64 deep");

    size_t big = 200 * 1000;
    char *deep = malloc(big + 1);
    assert_non_null(deep);
    memset(deep, '[', big);
    deep[big] = '\0';
    double t0 = now();
    assert_null(cfg_load_buffer("deep", deep, big, err, sizeof err));
    /* a bare list at the root: the 65th '[' is column 65 */
    assert_string_equal(err, "deep:1:65: lists and mappings nested more than 64 deep");
    assert_true(now() - t0 < 5);
    free(deep);
}

/* strata serve --token-file FIFO: refused at once with the reason (the
 * old reader waited on the FIFO for ever; `timeout` ends that as 124). */
static void test_token_fifo(void **state)
{
    (void)state;
    const char *bin = getenv("STRATA_BIN");
    if (!bin)
        skip();
    char fifo[1200], cmd[4096], out[4096] = "";
    tmp_path(fifo, sizeof fifo, "token.fifo");
    make_fifo(fifo);
    snprintf(cmd, sizeof cmd,
             "timeout 20 '%s' serve --listen 127.0.0.1:0 --token-file '%s' 2>&1; echo rc=$?",
             bin, fifo);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t got = fread(out, 1, sizeof out - 1, p);
    out[got] = '\0';
    pclose(p);
    char want[4096];
    snprintf(want, sizeof want,
             "strata: --token-file %s: cannot read: not a regular file (a FIFO)\nrc=2\n", fifo);
    assert_string_equal(out, want);
    unlink(fifo);
}

/* run_strata runs `timeout 20 strata ARGS 2>&1; echo rc=$?` (args already
 * quoted) into out[outlen]: a reader that waits on a FIFO for ever ends as
 * rc=124 instead of hanging the suite. */
static void run_strata(char *out, size_t outlen, const char *args)
{
    const char *bin = getenv("STRATA_BIN");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "timeout 20 '%s' %s 2>&1; echo rc=$?", bin, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t got = fread(out, 1, outlen - 1, p);
    out[got] = '\0';
    pclose(p);
}

/* strata import-nodes FIFO: refused at once with the reason (jansson's
 * json_load_file opened the FIFO and waited for a writer for ever). */
static void test_nodes_fifo(void **state)
{
    (void)state;
    const char *src = getenv("STRATA_SRC");
    if (!getenv("STRATA_BIN") || !src)
        skip();
    char fifo[1200], args[4096], out[4096], want[4096];
    tmp_path(fifo, sizeof fifo, "nodes.fifo");
    make_fifo(fifo);
    snprintf(args, sizeof args, "import-nodes '%s' --catalogue '%s/configs/catalogue/instances.yaml'", fifo, src);
    run_strata(out, sizeof out, args);
    snprintf(want, sizeof want, "strata: %s: cannot read: not a regular file (a FIFO)\nrc=2\n", fifo);
    assert_string_equal(out, want);
    unlink(fifo);
}

/* strata calibrate CONFIG FIFO: refused at once (the CSV reader's fopen
 * waited for a writer for ever). */
static void test_csv_fifo(void **state)
{
    (void)state;
    const char *src = getenv("STRATA_SRC");
    if (!getenv("STRATA_BIN") || !src)
        skip();
    char fifo[1200], args[4096], out[4096], want[4096];
    tmp_path(fifo, sizeof fifo, "measured.fifo");
    make_fifo(fifo);
    snprintf(args, sizeof args, "calibrate '%s/configs/default.yaml' '%s'", src, fifo);
    run_strata(out, sizeof out, args);
    snprintf(want, sizeof want, "strata: %s: cannot read: not a regular file (a FIFO)\nrc=2\n", fifo);
    assert_string_equal(out, want);
    unlink(fifo);
}

/* A measurements CSV one byte over CALIB_CSV_MAX_BYTES is refused before
 * it is parsed (the old reader went through the whole file, here comment
 * lines, and answered that it held no header). */
static void test_csv_too_large(void **state)
{
    (void)state;
    const char *src = getenv("STRATA_SRC");
    if (!getenv("STRATA_BIN") || !src)
        skip();
    char path[1200], args[4096], out[4096], want[4096];
    tmp_path(path, sizeof path, "huge.csv");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    static char line[64];
    memset(line, '#', sizeof line - 1);
    line[sizeof line - 1] = '\n';
    size_t total = CALIB_CSV_MAX_BYTES + 1;
    for (size_t w = 0; w < total; w += sizeof line)
        assert_int_equal(fwrite(line, 1, total - w < sizeof line ? total - w : sizeof line, f),
                         total - w < sizeof line ? total - w : sizeof line);
    assert_int_equal(fclose(f), 0);
    snprintf(args, sizeof args, "calibrate '%s/configs/default.yaml' '%s'", src, path);
    run_strata(out, sizeof out, args);
    snprintf(want, sizeof want, "strata: %s: cannot read: %zu bytes, larger than the limit of %zu bytes\nrc=2\n",
             path, CALIB_CSV_MAX_BYTES + 1, CALIB_CSV_MAX_BYTES);
    assert_string_equal(out, want);
    unlink(path);
}

/* strata solve --method policy --policy FIFO: refused at once, naming the
 * file (ckpt_load refuses what is not a regular file, and its sniff of the
 * first bytes opens with O_NONBLOCK and checks with fstat). */
static void test_ckpt_fifo(void **state)
{
    (void)state;
    const char *src = getenv("STRATA_SRC");
    if (!getenv("STRATA_BIN") || !src)
        skip();
    char fifo[1200], args[4096], out[4096], want[4096];
    tmp_path(fifo, sizeof fifo, "policy.fifo");
    make_fifo(fifo);
    snprintf(args, sizeof args, "solve '%s/configs/default.yaml' --method policy --policy '%s'", src, fifo);
    run_strata(out, sizeof out, args);
    snprintf(want, sizeof want, "strata: checkpoint '%s' is not a regular file\nrc=2\n", fifo);
    assert_string_equal(out, want);
    unlink(fifo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_read),       cmocka_unit_test(test_not_regular),
        cmocka_unit_test(test_too_large),       cmocka_unit_test(test_include_diamond),
        cmocka_unit_test(test_load_bytes),      cmocka_unit_test(test_nesting),
        cmocka_unit_test(test_token_fifo),      cmocka_unit_test(test_nodes_fifo),
        cmocka_unit_test(test_csv_fifo),        cmocka_unit_test(test_csv_too_large),
        cmocka_unit_test(test_ckpt_fifo),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
