/* runload.c -- a run loaded and fitted (see runload.h). */
#include "solvers/runload.h"

#include <stdio.h>
#include <jansson.h>

#include "solvers/fit.h"

/* fitted fits every job of run (NULL passes through) and returns it, or
 * frees it and returns NULL with "name: message" in err. */
static cfg_run *fitted(cfg_run *run, const char *name, char *err, size_t errlen)
{
    if (!run)
        return NULL;
    char msg[1024];
    if (fit_run(run, msg, sizeof msg) < 0) {
        snprintf(err, errlen, "%s: %s", name, msg);
        cfg_free(run);
        return NULL;
    }
    return run;
}

cfg_run *run_load(const char *path, char *err, size_t errlen)
{
    return fitted(cfg_load(path, err, errlen), path, err, errlen);
}

cfg_run *run_load_buffer(const char *name, const char *text, size_t len, char *err,
                         size_t errlen)
{
    return fitted(cfg_load_buffer(name, text, len, err, errlen), name ? name : "<buffer>", err,
                  errlen);
}

cfg_run *run_load_json(const char *name, const json_t *root, char *err, size_t errlen)
{
    return fitted(cfg_load_json(name, root, err, errlen), name ? name : "<json>", err, errlen);
}

cfg_run *run_load_json_on(const char *name, const json_t *root, const model_cluster *cl, char *err,
                          size_t errlen)
{
    return fitted(cfg_load_json_on(name, root, cl, err, errlen), name ? name : "<json>", err, errlen);
}
