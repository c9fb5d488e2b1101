/* test_serve_store.c -- the daemon's state file (service/store.h).
 *
 * Round trips through a real SQLite file: a job and its fixed plan written
 * by one store come back, with their version, into the registry of a store
 * reopened on the file and of a second store open on it at the same time
 * (two replicas sharing a volume); the units a plan takes are counted for
 * the other jobs and released by a delete. A file that is not a database,
 * a database that is not a state file and a row that does not read are
 * refused with the file named. The pods placed for the bind verb come back
 * from a reopened file, the oldest go past the bound, a bind records the
 * node and forgets the pod in one go, and a deleted job's pods are
 * forgotten.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "service/store.h"
#include "serve_client.h"

static char path[1024];

static int setup(void **state) {
    (void)state;
    snprintf(path, sizeof path, "%s/store-%d.db", sv_tmp(), (int)getpid());
    return 0;
}

/* A plan as k8s_fix_plan writes it: 2 workers on gpu-a, 1 ps on cpu-a. */
static json_t *plan(const char *node) {
    return json_pack("{s:b, s:[{s:i, s:i, s:s, s:s, s:s}, {s:i, s:i, s:s, s:s, s:s}],"
                     " s:[{s:i, s:i, s:s, s:s, s:s}]}",
                     "planned", 1, "workers", "index", 0, "stage", 0, "type", "gpu", "node", node,
                     "zone", "a", "index", 1, "stage", 0, "type", "gpu", "node", node, "zone", "a",
                     "ps", "index", 0, "stage", 0, "type", "cpu", "node", "cpu-a", "zone", "a");
}

static void put(store *s, const char *key, json_t *p, uint64_t *version) {
    char err[512];
    double at;
    json_t *doc = json_pack("{s:{}, s:{s:s}}", "cluster", "job", "name", strchr(key, '/') + 1);
    assert_int_equal(store_begin(s, err, sizeof err), 0);
    assert_int_equal(store_put_job(s, key, doc, 3, p, version, &at, err, sizeof err), 0);
    assert_int_equal(store_end(s, 1, err, sizeof err), 0);
    assert_true(at > 1e9);
    json_decref(doc);
    json_decref(p);
}

static json_int_t taken(store *s, const char *key, const char *node, const char *what) {
    char err[512];
    json_t *t = store_taken(s, key, err, sizeof err);
    assert_non_null(t);
    json_int_t v = json_integer_value(json_object_get(json_object_get(t, node), what));
    json_decref(t);
    return v;
}

static void test_round_trip(void **state) {
    (void)state;
    sv_remove_db(path);
    char err[512];
    store *s = store_open(path, err, sizeof err);
    assert_non_null(s);
    uint64_t v1, v2;
    put(s, "team-a/train", plan("gpu-a"), &v1);
    put(s, "team-b/train", plan("gpu-b"), &v2);
    assert_int_equal(v2, v1 + 1);
    /* what the others take: team-b sees team-a's 2 workers on gpu-a and
     * its ps on cpu-a, not its own */
    assert_int_equal(taken(s, "team-b/train", "gpu-a", "units"), 2);
    assert_int_equal(taken(s, "team-b/train", "gpu-b", "units"), 0);
    assert_int_equal(taken(s, "team-b/train", "cpu-a", "ps"), 1);
    assert_int_equal(taken(s, "new/job", "cpu-a", "ps"), 2);
    store_close(s);

    /* reopened: the registry gets both jobs back, with versions and plans */
    s = store_open(path, err, sizeof err);
    assert_non_null(s);
    jobs_registry *r = jobs_create(16, 0);
    assert_int_equal(store_sync(s, r, 0, err, sizeof err), 0);
    assert_int_equal(jobs_count(r), 2);
    jobs_entry *e = jobs_get(r, "team-b/train");
    assert_non_null(e);
    assert_int_equal(e->version, v2);
    assert_int_equal(e->n_layers, 3);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(e->plan, "workers"), 1), "node")),
                        "gpu-b");
    assert_string_equal(json_string_value(json_object_get(json_object_get(e->doc, "job"), "name")),
                        "train");
    jobs_release(r, e);

    /* a second store on the same file (another replica): its writes are
     * seen by the first at its next sync, and a delete releases the units */
    store *other = store_open(path, err, sizeof err);
    assert_non_null(other);
    uint64_t v3;
    put(other, "team-c/x", plan("gpu-c"), &v3);
    assert_true(v3 > v2);
    assert_int_equal(store_delete_job(other, "team-a/train", err, sizeof err), 1);
    assert_int_equal(store_delete_job(other, "team-a/train", err, sizeof err), 0);
    assert_int_equal(store_sync(s, r, 0, err, sizeof err), 0);
    assert_int_equal(jobs_count(r), 2);
    assert_null(jobs_get(r, "team-a/train"));
    e = jobs_get(r, "team-c/x");
    assert_non_null(e);
    assert_int_equal(e->version, v3);
    jobs_release(r, e);
    assert_int_equal(taken(s, "new/job", "gpu-a", "units"), 0);
    assert_int_equal(taken(s, "new/job", "gpu-c", "units"), 2);
    store_close(other);
    store_close(s);
    jobs_free(r);
    sv_remove_db(path);
}

/* The task store_pod_get reads for uid as "key role idx", or "none". */
static void pod_task(store *s, const char *uid, char *buf, size_t len) {
    char err[512], key[128], role[16];
    long idx = -1;
    int rc = store_pod_get(s, uid, key, sizeof key, role, sizeof role, &idx, err, sizeof err);
    assert_true(rc >= 0);
    if (rc == 0) snprintf(buf, len, "none");
    else snprintf(buf, len, "%s %s %ld", key, role, idx);
}

static void test_pods_placed(void **state) {
    (void)state;
    sv_remove_db(path);
    char err[512], got[256];
    store *s = store_open(path, err, sizeof err);
    assert_non_null(s);
    uint64_t v;
    put(s, "team-a/train", plan("gpu-a"), &v);
    /* filtered by this process, then the process goes away */
    assert_int_equal(store_pod_put(s, "uid-w1", "team-a/train", "worker", 1, 3, err,
                                   sizeof err), 0);
    assert_int_equal(store_pod_put(s, "uid-p0", "team-a/train", "ps", 0, 3, err, sizeof err), 0);
    /* the same again (prioritize after filter) writes nothing new */
    assert_int_equal(store_pod_put(s, "uid-p0", "team-a/train", "ps", 0, 3, err, sizeof err), 0);
    assert_int_equal(store_n_pods(s, err, sizeof err), 2);
    store_close(s);

    /* another process on the file: it knows both pods */
    s = store_open(path, err, sizeof err);
    assert_non_null(s);
    pod_task(s, "uid-w1", got, sizeof got);
    assert_string_equal(got, "team-a/train worker 1");
    pod_task(s, "uid-p0", got, sizeof got);
    assert_string_equal(got, "team-a/train ps 0");
    pod_task(s, "uid-none", got, sizeof got);
    assert_string_equal(got, "none");
    /* its bind: the placement row takes the node, the pod is forgotten */
    assert_int_equal(store_bind(s, "team-a/train", "worker", 1, "gpu-z", "b", "uid-w1", err,
                                sizeof err), 1);
    pod_task(s, "uid-w1", got, sizeof got);
    assert_string_equal(got, "none");
    assert_int_equal(taken(s, "new/job", "gpu-z", "units"), 1);
    assert_int_equal(taken(s, "new/job", "gpu-a", "units"), 1);

    /* bounded at 3: a fourth pod drops the oldest (uid-p0, then u1) */
    assert_int_equal(store_pod_put(s, "u1", "team-a/train", "worker", 0, 3, err, sizeof err), 0);
    assert_int_equal(store_pod_put(s, "u2", "team-a/train", "worker", 1, 3, err, sizeof err), 0);
    assert_int_equal(store_n_pods(s, err, sizeof err), 3);
    assert_int_equal(store_pod_put(s, "u3", "team-b/x", "ps", 0, 3, err, sizeof err), 0);
    assert_int_equal(store_n_pods(s, err, sizeof err), 3);
    pod_task(s, "uid-p0", got, sizeof got);
    assert_string_equal(got, "none");
    /* a pod placed again as another task is rewritten, and becomes the newest */
    assert_int_equal(store_pod_put(s, "u1", "team-a/train", "ps", 0, 3, err, sizeof err), 0);
    assert_int_equal(store_pod_put(s, "u4", "team-b/x", "ps", 1, 3, err, sizeof err), 0);
    pod_task(s, "u2", got, sizeof got);
    assert_string_equal(got, "none");
    pod_task(s, "u1", got, sizeof got);
    assert_string_equal(got, "team-a/train ps 0");
    /* deleting a job forgets its pods */
    assert_int_equal(store_delete_job(s, "team-a/train", err, sizeof err), 1);
    pod_task(s, "u1", got, sizeof got);
    assert_string_equal(got, "none");
    pod_task(s, "u3", got, sizeof got);
    assert_string_equal(got, "team-b/x ps 0");
    store_close(s);
    sv_remove_db(path);
}

static void expect_refused(const char *needle) {
    char err[1024] = "";
    store *s = store_open(path, err, sizeof err);
    if (s) fail_msg("opened a bad state file (expected \"%s\")", needle);
    if (!strstr(err, path) || !strstr(err, needle))
        fail_msg("expected the file and \"%s\" in: %s", needle, err);
    printf("refused: %s\n", err);
}

static void test_bad_files(void **state) {
    (void)state;
    /* not a database at all */
    sv_remove_db(path);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < 200; i++) fputs("this is not SQLite. ", f);
    fclose(f);
    expect_refused("not a readable SQLite database");

    /* a database, but someone else's schema version */
    sv_remove_db(path);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT "
                                      "NULL); INSERT INTO meta VALUES('schema','other 9')",
                                  NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    expect_refused("schema \"other 9\"");

    /* a state file whose job document was damaged */
    sv_remove_db(path);
    char err[512];
    store *s = store_open(path, err, sizeof err);
    assert_non_null(s);
    uint64_t v;
    put(s, "default/j", plan("gpu-a"), &v);
    store_close(s);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "UPDATE jobs SET doc='{\"cluster\": [' WHERE key='default/j'",
                                  NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    expect_refused("job default/j: its document does not read as JSON");

    /* a truncated file: the pages are gone */
    sv_remove_db(path);
    s = store_open(path, err, sizeof err);
    assert_non_null(s);
    for (int i = 0; i < 50; i++) {
        char key[64];
        snprintf(key, sizeof key, "default/j%d", i);
        put(s, key, plan("gpu-a"), &v);
    }
    store_close(s); /* checkpoints the WAL into the file */
    assert_int_equal(truncate(path, 6000), 0);
    char e2[1024] = "";
    s = store_open(path, e2, sizeof e2);
    if (s) fail_msg("opened a truncated state file");
    assert_non_null(strstr(e2, path));
    printf("refused: %s\n", e2);
    sv_remove_db(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_pods_placed),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
