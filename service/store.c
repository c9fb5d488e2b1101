/* store.c -- the daemon's state in SQLite: jobs, fixed plans, placements.
 *
 * One connection, one mutex. Writes are IMMEDIATE transactions; reads of
 * another process's writes are noticed through PRAGMA data_version, which
 * changes whenever another connection commits to the file.
 */
#include "service/store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "base/clock.h"

#define STORE_SCHEMA "strata-state 1"

struct store {
    sqlite3 *db;
    pthread_mutex_t mu;
    char path[1024];
    long long data_version; /* at the last sync; -1: never synced */
};

static const char SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS jobs(key TEXT PRIMARY KEY, namespace TEXT NOT NULL,"
    " name TEXT NOT NULL, version INTEGER NOT NULL, registered_at REAL NOT NULL,"
    " layers INTEGER NOT NULL, doc TEXT NOT NULL, plan TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS placements(job TEXT NOT NULL, role TEXT NOT NULL,"
    " idx INTEGER NOT NULL, node TEXT NOT NULL, type TEXT NOT NULL, zone TEXT NOT NULL,"
    " units INTEGER NOT NULL, ps INTEGER NOT NULL, PRIMARY KEY(job, role, idx));"
    "CREATE INDEX IF NOT EXISTS placements_node ON placements(node);"
    "CREATE TABLE IF NOT EXISTS cluster_nodes(idx INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
    " doc TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS binds(seq INTEGER PRIMARY KEY, uid TEXT NOT NULL UNIQUE,"
    " job TEXT NOT NULL, role TEXT NOT NULL, idx INTEGER NOT NULL);";

const char *store_path(const store *s) { return s->path; }

/* Writes "FILE: what: sqlite's message" into err. */
static int fail(store *s, char *err, size_t errlen, const char *what) {
    snprintf(err, errlen, "state file %s: %s: %s", s->path, what,
             s->db ? sqlite3_errmsg(s->db) : "cannot open");
    return -1;
}

/* Runs one statement returning a single integer (PRAGMA data_version). */
static int one_int(store *s, const char *sql, long long *out) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) *out = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : -1;
}

/* Runs one statement returning a single text into buf. */
static int one_text(store *s, const char *sql, char *buf, size_t len) {
    sqlite3_stmt *st;
    buf[0] = '\0';
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(st, 0);
        snprintf(buf, len, "%s", t ? (const char *)t : "");
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

void store_close(store *s) {
    if (!s) return;
    sqlite3_close(s->db);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* Reads every job of the file into a fresh registry, to prove at open
 * that each row reads. Returns 0, or -1 with err. */
static int check_rows(store *s, char *err, size_t errlen) {
    jobs_registry *r = jobs_create(1 << 16, 0); /* rows beyond the daemon's own limit are its to refuse */
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = store_sync(s, r, 1, err, errlen);
    jobs_free(r);
    s->data_version = -1; /* the daemon's own registry still needs its first sync */
    return rc;
}

store *store_open(const char *path, char *err, size_t errlen) {
    store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    snprintf(s->path, sizeof s->path, "%s", path ? path : ":memory:");
    s->data_version = -1;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
    if (sqlite3_open_v2(s->path, &s->db, flags, NULL) != SQLITE_OK) {
        fail(s, err, errlen, "cannot open");
        store_close(s);
        return NULL;
    }
    sqlite3_busy_timeout(s->db, 10000);
    char mode[32], check[256], schema[64];
    /* The first statement reads the header: a file that is not a database
     * fails here ("file is not a database"). */
    if (one_text(s, "PRAGMA journal_mode=WAL", mode, sizeof mode)) {
        fail(s, err, errlen, "not a readable SQLite database");
        store_close(s);
        return NULL;
    }
    if (one_text(s, "PRAGMA quick_check", check, sizeof check) || strcmp(check, "ok")) {
        if (check[0] && strcmp(check, "ok"))
            snprintf(err, errlen, "state file %s: corrupt (integrity check: %.200s)", s->path,
                     check);
        else
            fail(s, err, errlen, "corrupt (integrity check failed)");
        store_close(s);
        return NULL;
    }
    if (sqlite3_exec(s->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(s->db, SCHEMA, NULL, NULL, NULL) != SQLITE_OK) {
        fail(s, err, errlen, "cannot create the tables (not a strata state file?)");
        store_close(s);
        return NULL;
    }
    if (one_text(s, "SELECT value FROM meta WHERE key='schema'", schema, sizeof schema)) {
        fail(s, err, errlen, "cannot read its schema");
        store_close(s);
        return NULL;
    }
    if (!schema[0]) {
        if (sqlite3_exec(s->db, "INSERT OR IGNORE INTO meta VALUES('schema','" STORE_SCHEMA "')",
                         NULL, NULL, NULL) != SQLITE_OK) {
            fail(s, err, errlen, "cannot write its schema");
            store_close(s);
            return NULL;
        }
    } else if (strcmp(schema, STORE_SCHEMA)) {
        snprintf(err, errlen, "state file %s: schema \"%.40s\", this strata reads \"%s\"",
                 s->path, schema, STORE_SCHEMA);
        store_close(s);
        return NULL;
    }
    if (check_rows(s, err, errlen)) {
        store_close(s);
        return NULL;
    }
    return s;
}

int store_begin(store *s, char *err, size_t errlen) {
    pthread_mutex_lock(&s->mu);
    if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        fail(s, err, errlen, "cannot take the write lock");
        pthread_mutex_unlock(&s->mu);
        return -1;
    }
    return 0;
}

int store_end(store *s, int commit, char *err, size_t errlen) {
    int rc = 0;
    if (commit && sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = fail(s, err, errlen, "cannot commit");
    if (!commit || rc) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int store_n_holding(store *s, char *err, size_t errlen) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT COUNT(DISTINCT job) FROM placements WHERE units > 0 OR ps > 0",
                           -1, &st, NULL) != SQLITE_OK) {
        fail(s, err, errlen, "cannot read the placements");
        return -1;
    }
    int n = -1;
    if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int(st, 0);
    else fail(s, err, errlen, "cannot read the placements");
    sqlite3_finalize(st);
    return n;
}

json_t *store_taken(store *s, const char *key, char *err, size_t errlen) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT node, SUM(units), SUM(ps) FROM placements WHERE job != ?1 "
                           "GROUP BY node", -1, &st, NULL) != SQLITE_OK) {
        fail(s, err, errlen, "cannot read the placements");
        return NULL;
    }
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    json_t *o = json_object();
    int rc;
    while (o && (rc = sqlite3_step(st)) == SQLITE_ROW)
        json_object_set_new(o, (const char *)sqlite3_column_text(st, 0),
                            json_pack("{s:I, s:I}", "units", (json_int_t)sqlite3_column_int64(st, 1),
                                      "ps", (json_int_t)sqlite3_column_int64(st, 2)));
    if (o && rc != SQLITE_DONE) {
        fail(s, err, errlen, "cannot read the placements");
        json_decref(o);
        o = NULL;
    }
    sqlite3_finalize(st);
    if (!o && !err[0]) snprintf(err, errlen, "out of memory");
    return o;
}

/* Runs a prepared statement to completion and finalizes it. */
static int step_done(sqlite3_stmt *st) {
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Writes the placements rows of one role of a plan. */
static int put_tasks(store *s, const char *key, const json_t *plan, const char *role) {
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(plan, role), i, t) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(s->db, "INSERT INTO placements VALUES(?1,?2,?3,?4,?5,?6,?7,?8)",
                               -1, &st, NULL) != SQLITE_OK)
            return -1;
        int is_ps = !strcmp(role, "ps");
        const char *node = json_string_value(json_object_get(t, "node"));
        const char *type = json_string_value(json_object_get(t, "type"));
        const char *zone = json_string_value(json_object_get(t, "zone"));
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, is_ps ? "ps" : "worker", -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)i);
        sqlite3_bind_text(st, 4, node ? node : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, type ? type : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, zone ? zone : "", -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 7, is_ps ? 0 : 1);
        sqlite3_bind_int(st, 8, is_ps ? 1 : 0);
        if (step_done(st)) return -1;
    }
    return 0;
}

int store_put_job(store *s, const char *key, const json_t *doc, int n_layers,
                  const json_t *plan, uint64_t *version, double *registered_at, char *err,
                  size_t errlen) {
    long long top = 0;
    if (one_int(s, "SELECT COALESCE(MAX(CAST(value AS INTEGER)), 0) FROM meta WHERE "
                   "key='version'", &top))
        return fail(s, err, errlen, "cannot read the version");
    char *doc_text = json_dumps(doc, JSON_COMPACT);
    char *plan_text = json_dumps(plan, JSON_COMPACT);
    const char *slash = strchr(key, '/');
    int rc = -1;
    sqlite3_stmt *st = NULL;
    double now = clock_wall_s();
    char v[32];
    snprintf(v, sizeof v, "%lld", top + 1);
    if (!doc_text || !plan_text || !slash) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO meta VALUES('version', ?1)", -1, &st,
                           NULL) != SQLITE_OK)
        goto sqlfail;
    sqlite3_bind_text(st, 1, v, -1, SQLITE_STATIC);
    if (step_done(st)) goto sqlfail;
    if (sqlite3_prepare_v2(s->db, "DELETE FROM placements WHERE job = ?1", -1, &st, NULL) !=
        SQLITE_OK)
        goto sqlfail;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (step_done(st)) goto sqlfail;
    if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO jobs VALUES(?1,?2,?3,?4,?5,?6,?7,?8)",
                           -1, &st, NULL) != SQLITE_OK)
        goto sqlfail;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, key, (int)(slash - key), SQLITE_STATIC);
    sqlite3_bind_text(st, 3, slash + 1, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, top + 1);
    sqlite3_bind_double(st, 5, now);
    sqlite3_bind_int(st, 6, n_layers);
    sqlite3_bind_text(st, 7, doc_text, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 8, plan_text, -1, SQLITE_STATIC);
    if (step_done(st)) goto sqlfail;
    if (put_tasks(s, key, plan, "workers") || put_tasks(s, key, plan, "ps")) goto sqlfail;
    *version = (uint64_t)(top + 1);
    *registered_at = now;
    rc = 0;
    goto done;
sqlfail:
    rc = fail(s, err, errlen, "cannot write the job");
done:
    free(doc_text);
    free(plan_text);
    return rc;
}

int store_delete_job(store *s, const char *key, char *err, size_t errlen) {
    if (store_begin(s, err, errlen)) return -1;
    sqlite3_stmt *st;
    int rc = -1;
    if (sqlite3_prepare_v2(s->db, "DELETE FROM jobs WHERE key = ?1", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        if (!step_done(st)) {
            int gone = sqlite3_changes(s->db);
            if (sqlite3_prepare_v2(s->db, "DELETE FROM placements WHERE job = ?1", -1, &st,
                                   NULL) == SQLITE_OK) {
                sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
                if (!step_done(st)) rc = gone > 0 || sqlite3_changes(s->db) > 0;
            }
            /* its pods remembered for the bind verb: nothing left to record */
            if (rc >= 0 && sqlite3_prepare_v2(s->db, "DELETE FROM binds WHERE job = ?1", -1,
                                              &st, NULL) == SQLITE_OK) {
                sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
                if (step_done(st)) rc = -1;
            } else if (rc >= 0) {
                rc = -1;
            }
        }
    }
    if (rc < 0) {
        fail(s, err, errlen, "cannot delete the job");
        store_end(s, 0, NULL, 0);
        return -1;
    }
    return store_end(s, 1, err, errlen) ? -1 : rc;
}

int store_bind(store *s, const char *key, const char *role, long idx, const char *node,
               const char *zone, const char *uid, char *err, size_t errlen) {
    if (store_begin(s, err, errlen)) return -1;
    sqlite3_stmt *st;
    int rc = -1;
    if (sqlite3_prepare_v2(s->db, "UPDATE placements SET node = ?4, zone = ?5 WHERE job = ?1 "
                           "AND role = ?2 AND idx = ?3", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, role, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)idx);
        sqlite3_bind_text(st, 4, node, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, zone ? zone : "", -1, SQLITE_STATIC);
        if (!step_done(st)) rc = sqlite3_changes(s->db) > 0;
    }
    /* the pod is bound: its row in binds has served */
    if (rc >= 0 && uid && *uid) {
        if (sqlite3_prepare_v2(s->db, "DELETE FROM binds WHERE uid = ?1", -1, &st, NULL) !=
                SQLITE_OK)
            rc = -1;
        else {
            sqlite3_bind_text(st, 1, uid, -1, SQLITE_STATIC);
            if (step_done(st)) rc = -1;
        }
    }
    if (rc < 0) {
        fail(s, err, errlen, "cannot record the binding");
        store_end(s, 0, NULL, 0);
        return -1;
    }
    return store_end(s, 1, err, errlen) ? -1 : rc;
}

/* ---- the pods placed, for the bind verb ------------------------------------------------ */

/* Reads the row of pod uid (s->mu held): 1 with its task, 0 when there is
 * none, -1 on an SQLite error. */
static int pod_get_locked(store *s, const char *uid, char *key, size_t keylen, char *role,
                          size_t rolelen, long *idx) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT job, role, idx FROM binds WHERE uid = ?1", -1, &st,
                           NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, uid, -1, SQLITE_STATIC);
    int step = sqlite3_step(st), rc = step == SQLITE_ROW ? 1 : step == SQLITE_DONE ? 0 : -1;
    if (rc == 1) {
        snprintf(key, keylen, "%s", (const char *)sqlite3_column_text(st, 0));
        snprintf(role, rolelen, "%s", (const char *)sqlite3_column_text(st, 1));
        *idx = (long)sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    return rc;
}

int store_pod_get(store *s, const char *uid, char *key, size_t keylen, char *role,
                  size_t rolelen, long *idx, char *err, size_t errlen) {
    if (!uid || !*uid) return 0;
    pthread_mutex_lock(&s->mu);
    int rc = pod_get_locked(s, uid, key, keylen, role, rolelen, idx);
    if (rc < 0) fail(s, err, errlen, "cannot read the pods placed");
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int store_pod_put(store *s, const char *uid, const char *key, const char *role, long idx,
                  int max, char *err, size_t errlen) {
    if (!uid || !*uid) return 0;
    /* prioritize follows filter with the same pod: an unchanged row is not
     * written again (a read, no write lock) */
    char k[JOBS_KEY_MAX], r[16];
    long i = -1;
    pthread_mutex_lock(&s->mu);
    int have = pod_get_locked(s, uid, k, sizeof k, r, sizeof r, &i);
    pthread_mutex_unlock(&s->mu);
    if (have == 1 && !strcmp(k, key) && !strcmp(r, role) && i == idx) return 0;
    if (store_begin(s, err, errlen)) return -1;
    sqlite3_stmt *st;
    int rc = -1;
    if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO binds(uid, job, role, idx) "
                           "VALUES(?1, ?2, ?3, ?4)", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, uid, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, role, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)idx);
        rc = step_done(st);
    }
    /* bounded: the oldest rows past max go (a pod filtered that long ago
     * is bound by now, or will be filtered again) */
    if (rc == 0 && sqlite3_prepare_v2(s->db, "DELETE FROM binds WHERE seq <= (SELECT seq FROM "
                                      "binds ORDER BY seq DESC LIMIT 1 OFFSET ?1)", -1, &st,
                                      NULL) == SQLITE_OK) {
        sqlite3_bind_int(st, 1, max > 0 ? max : 1);
        rc = step_done(st);
    } else if (rc == 0) {
        rc = -1;
    }
    if (rc) {
        fail(s, err, errlen, "cannot remember the pod placed");
        store_end(s, 0, NULL, 0);
        return -1;
    }
    return store_end(s, 1, err, errlen);
}

int store_n_pods(store *s, char *err, size_t errlen) {
    long long n = 0;
    pthread_mutex_lock(&s->mu);
    int rc = one_int(s, "SELECT COUNT(*) FROM binds", &n);
    if (rc) fail(s, err, errlen, "cannot read the pods placed");
    pthread_mutex_unlock(&s->mu);
    return rc ? -1 : (int)n;
}

/* Loads the rows of the file into r (s->mu held). */
static int sync_locked(store *s, jobs_registry *r, char *err, size_t errlen) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT key, version, registered_at, layers, doc, plan FROM jobs",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(s, err, errlen, "cannot read the jobs");
    json_t *keys = json_object(); /* the file's keys */
    int rc = 0, step;
    while (rc == 0 && keys && (step = sqlite3_step(st)) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(st, 0);
        uint64_t version = (uint64_t)sqlite3_column_int64(st, 1);
        json_object_set_new(keys, key, json_true());
        jobs_entry *e = jobs_get(r, key);
        int same = e && e->version == version;
        jobs_release(r, e);
        if (same) continue;
        json_error_t je;
        const char *doc_text = (const char *)sqlite3_column_text(st, 4);
        const char *plan_text = (const char *)sqlite3_column_text(st, 5);
        json_t *doc = doc_text ? json_loads(doc_text, 0, &je) : NULL;
        json_t *plan = doc && plan_text ? json_loads(plan_text, 0, &je) : NULL;
        if (!doc || !json_is_object(doc) || !plan || !json_is_object(plan) ||
            strlen(key) >= JOBS_KEY_MAX) {
            snprintf(err, errlen, "state file %s: job %.130s: its %s does not read as JSON "
                     "(%.100s)", s->path, key, doc ? "plan" : "document", je.text);
            json_decref(doc);
            json_decref(plan);
            rc = -1;
            break;
        }
        char msg[512];
        if (jobs_load(r, key, doc, sqlite3_column_int(st, 3), plan, version,
                      sqlite3_column_double(st, 2), msg, sizeof msg) < 0) {
            snprintf(err, errlen, "state file %s: job %.130s: %s", s->path, key, msg);
            rc = -1;
        }
    }
    if (rc == 0 && (!keys || step != SQLITE_DONE)) rc = fail(s, err, errlen, "cannot read the jobs");
    sqlite3_finalize(st);
    json_t *held = rc == 0 ? jobs_keys(r) : NULL;
    size_t i;
    json_t *k;
    json_array_foreach(held, i, k) /* gone from the file: deleted elsewhere */
        if (!json_object_get(keys, json_string_value(k))) jobs_delete(r, json_string_value(k));
    json_decref(held);
    json_decref(keys);
    return rc;
}

int store_sync(store *s, jobs_registry *r, int force, char *err, size_t errlen) {
    if (force) {
        pthread_mutex_lock(&s->mu);
    } else if (pthread_mutex_trylock(&s->mu)) {
        /* a registration of this process holds the file (it may plan for
         * seconds): the extender's calls do not wait for it; they see
         * another process's writes at the next call */
        return 0;
    }
    long long dv = 0;
    int rc = 0;
    if (one_int(s, "PRAGMA data_version", &dv)) {
        rc = fail(s, err, errlen, "cannot read");
    } else if (force || dv != s->data_version) {
        rc = sync_locked(s, r, err, errlen);
        if (rc == 0) s->data_version = dv;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* ---- the daemon's cluster and online placements ---------------------------------------- */

int store_put_placements(store *s, const char *key, const json_t *plan, char *err,
                         size_t errlen) {
    if (put_tasks(s, key, plan, "workers") || put_tasks(s, key, plan, "ps"))
        return fail(s, err, errlen, "cannot write the placements");
    return 0;
}

int store_holds(store *s, const char *key, char *err, size_t errlen) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT (SELECT COUNT(*) FROM jobs WHERE key = ?1) + "
                           "(SELECT COUNT(*) FROM placements WHERE job = ?1)", -1, &st,
                           NULL) != SQLITE_OK)
        return fail(s, err, errlen, "cannot read the placements");
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) > 0 : -1;
    sqlite3_finalize(st);
    return rc < 0 ? fail(s, err, errlen, "cannot read the placements") : rc;
}

int store_put_cluster(store *s, const json_t *cluster, char *err, size_t errlen) {
    if (store_begin(s, err, errlen)) return -1;
    json_t *rest = json_copy((json_t *)cluster); /* everything but the nodes */
    char *rest_text = NULL;
    int rc = -1;
    sqlite3_stmt *st = NULL;
    if (!rest) goto done;
    json_object_del(rest, "nodes");
    if (!(rest_text = json_dumps(rest, JSON_COMPACT | JSON_SORT_KEYS))) goto done;
    if (sqlite3_exec(s->db, "DELETE FROM cluster_nodes", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO meta VALUES('cluster', ?1)", -1, &st,
                           NULL) != SQLITE_OK)
        goto done;
    sqlite3_bind_text(st, 1, rest_text, -1, SQLITE_STATIC);
    if (step_done(st)) goto done;
    size_t i;
    json_t *n;
    rc = 0;
    json_array_foreach(json_object_get(cluster, "nodes"), i, n) {
        char *text = json_dumps(n, JSON_COMPACT | JSON_SORT_KEYS);
        const char *name = json_string_value(json_object_get(n, "name"));
        if (!text || sqlite3_prepare_v2(s->db, "INSERT INTO cluster_nodes VALUES(?1,?2,?3)", -1,
                                        &st, NULL) != SQLITE_OK) {
            free(text);
            rc = -1;
            break;
        }
        sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
        sqlite3_bind_text(st, 2, name ? name : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, text, -1, SQLITE_STATIC);
        rc = step_done(st);
        free(text);
        if (rc) break;
    }
done:
    if (rc) fail(s, err, errlen, "cannot write the cluster");
    free(rest_text);
    json_decref(rest);
    if (rc) {
        store_end(s, 0, NULL, 0);
        return -1;
    }
    return store_end(s, 1, err, errlen);
}

/* Reads the cluster (s->mu held or inside a transaction). */
static json_t *get_cluster_locked(store *s, char *err, size_t errlen) {
    char *rest_text = NULL;
    sqlite3_stmt *st;
    json_t *cl = NULL, *nodes = NULL;
    json_error_t je;
    je.text[0] = '\0';
    if (sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE key='cluster'", -1, &st, NULL) !=
        SQLITE_OK) {
        fail(s, err, errlen, "cannot read the cluster");
        return NULL;
    }
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        rest_text = strdup(t ? t : "");
    }
    sqlite3_finalize(st);
    if (step == SQLITE_DONE) return json_null(); /* never set */
    if (step != SQLITE_ROW || !rest_text) {
        free(rest_text);
        fail(s, err, errlen, "cannot read the cluster");
        return NULL;
    }
    cl = json_loads(rest_text, 0, &je);
    free(rest_text);
    nodes = json_array();
    if (!json_is_object(cl) || !nodes ||
        sqlite3_prepare_v2(s->db, "SELECT name, doc FROM cluster_nodes ORDER BY idx", -1, &st,
                           NULL) != SQLITE_OK) {
        snprintf(err, errlen, "state file %s: the cluster does not read (%.100s)", s->path,
                 je.text);
        json_decref(cl);
        json_decref(nodes);
        return NULL;
    }
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *n = json_loads((const char *)sqlite3_column_text(st, 1), 0, &je);
        if (!json_is_object(n)) {
            snprintf(err, errlen, "state file %s: cluster node %.100s does not read (%.100s)",
                     s->path, (const char *)sqlite3_column_text(st, 0), je.text);
            json_decref(n);
            break;
        }
        json_array_append_new(nodes, n);
    }
    sqlite3_finalize(st);
    if (step != SQLITE_DONE) {
        if (!err[0]) fail(s, err, errlen, "cannot read the cluster");
        json_decref(cl);
        json_decref(nodes);
        return NULL;
    }
    json_object_set_new(cl, "nodes", nodes);
    return cl;
}

json_t *store_get_cluster(store *s, int locked, char *err, size_t errlen) {
    if (locked) return get_cluster_locked(s, err, errlen);
    pthread_mutex_lock(&s->mu);
    json_t *cl = get_cluster_locked(s, err, errlen);
    pthread_mutex_unlock(&s->mu);
    return cl;
}

json_t *store_placements(store *s, char *err, size_t errlen) {
    sqlite3_stmt *st;
    pthread_mutex_lock(&s->mu);
    json_t *arr = json_array();
    int step = SQLITE_ERROR;
    if (arr && sqlite3_prepare_v2(s->db,
                                  "SELECT job, role, idx, node, units, ps FROM placements "
                                  "ORDER BY job, role DESC, idx", -1, &st, NULL) == SQLITE_OK) {
        while ((step = sqlite3_step(st)) == SQLITE_ROW)
            json_array_append_new(
                arr, json_pack("{s:s, s:s, s:I, s:s, s:I, s:I}", "job",
                               (const char *)sqlite3_column_text(st, 0), "role",
                               (const char *)sqlite3_column_text(st, 1), "index",
                               (json_int_t)sqlite3_column_int64(st, 2), "node",
                               (const char *)sqlite3_column_text(st, 3), "units",
                               (json_int_t)sqlite3_column_int64(st, 4), "ps",
                               (json_int_t)sqlite3_column_int64(st, 5)));
        sqlite3_finalize(st);
    }
    if (step != SQLITE_DONE) {
        fail(s, err, errlen, "cannot read the placements");
        json_decref(arr);
        arr = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    return arr;
}
