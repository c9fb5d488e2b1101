/* shipped.h -- the shipped configs as the benchmarks read them.
 *
 * bench_place and bench_solvers run every shipped model (the .yaml files
 * of SRC_DIR/configs/models) on one shipped cluster (by default
 * SRC_DIR/configs/clusters/aws-mixed.yaml): they resolve the source tree
 * and the cluster from their command line, list the models, and compose
 * each model with the cluster through run_load (a temporary run file that
 * includes both). bench_agent finds the source tree the way the tests do.
 * These helpers do that once for all of them. Each prints its own error to
 * stderr prefixed with the benchmark's name (prog). Header-only (static
 * functions): every benchmark is one program built from one bench_*.c.
 */
#ifndef STRATA_BENCH_SHIPPED_H
#define STRATA_BENCH_SHIPPED_H

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "solvers/runload.h"

/* shipped_src_default returns the source tree named on the command line
 * (arg, NULL when none was given), else $STRATA_SRC, else ".." (a
 * benchmark run by hand from the build folder). */
static inline const char *shipped_src_default(const char *arg) {
    if (arg) return arg;
    return getenv("STRATA_SRC") ? getenv("STRATA_SRC") : "..";
}

/* shipped_paths makes the source tree src absolute into absrc (at least
 * PATH_MAX bytes) and puts the cluster file into cluster (at least
 * PATH_MAX bytes): cluster_arg made absolute when given, else the shipped
 * aws-mixed.yaml under absrc. Returns 0, or 2 (the benchmarks' exit status
 * for bad arguments) after printing which one does not exist. */
static inline int shipped_paths(const char *prog, const char *src, const char *cluster_arg,
                                char *absrc, char *cluster, size_t cluster_len) {
    if (!realpath(src, absrc)) {
        fprintf(stderr, "%s: %s: no such directory\n", prog, src);
        return 2;
    }
    if (cluster_arg) {
        if (!realpath(cluster_arg, cluster)) {
            fprintf(stderr, "%s: %s: no such file\n", prog, cluster_arg);
            return 2;
        }
    } else {
        snprintf(cluster, cluster_len, "%s/configs/clusters/aws-mixed.yaml", absrc);
    }
    return 0;
}

/* shipped_models lists the model files under absrc (the .yaml files of
 * configs/models, sorted) into g, to be released with globfree. Returns 0, or 2 after
 * printing that none matched. */
static inline int shipped_models(const char *prog, const char *absrc, glob_t *g) {
    char pattern[4200];
    snprintf(pattern, sizeof pattern, "%s/configs/models/*.yaml", absrc);
    if (glob(pattern, 0, NULL, g) != 0 || g->gl_pathc == 0) {
        fprintf(stderr, "%s: no models match %s\n", prog, pattern);
        return 2;
    }
    return 0;
}

/* shipped_name returns the file name part of path (what the tables print
 * for the cluster). */
static inline const char *shipped_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* shipped_load composes model with cluster (both absolute paths): writes a
 * run file including the two to $TMPDIR (or /tmp), loads it with run_load
 * and removes it. Returns the run (free with cfg_free), or NULL after
 * printing why. */
static inline cfg_run *shipped_load(const char *prog, const char *cluster, const char *model) {
    char path[4096], err[1024];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/%s_XXXXXX.yaml", tmp && *tmp ? tmp : "/tmp", prog);
    int fd = mkstemps(path, 5);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    if (!f) {
        if (fd >= 0) close(fd);
        fprintf(stderr, "%s: cannot write a temporary file\n", prog);
        return NULL;
    }
    fprintf(f, "model: v1\ninclude: [\"%s\", \"%s\"]\n", cluster, model);
    fclose(f);
    cfg_run *run = run_load(path, err, sizeof err);
    unlink(path);
    if (!run) fprintf(stderr, "%s: %s\n", prog, err);
    return run;
}

#endif
