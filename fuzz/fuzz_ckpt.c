/* fuzz_ckpt.c -- libFuzzer target: loading a checkpoint file.
 *
 * Writes each input to one scratch file (in $TMPDIR, /dev/shm when it
 * exists) and loads it twice, as strata does: ckpt_load for the metadata
 * (the layer of nets/ that train --resume and `strata serve` go through),
 * then agent_policy_load (the daemon's --policy and its reload on SIGHUP).
 * Any file must load or be refused with a message, never crash or leak:
 * memory (LeakSanitizer) nor HDF5 files or objects left open (groups,
 * datasets, attributes), which a daemon reloading a bad policy again and
 * again would pile up: their count after each input must be what it was
 * before.
 *
 * Seeds: fuzz/corpus/ckpt/ (small real checkpoints written by nets/ckpt's
 * tests, a 93 KB policy trained by `strata train` with the smallest
 * network (embed 8) for a few steps, and the inputs that once crashed).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "agent/policy.h"
#include "nets/ckpt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char scratch[512];

/* Picks the scratch file once: one per process, so that parallel fuzzers
 * (-jobs) never share one. */
static const char *scratch_path(void) {
    if (!scratch[0]) {
        const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
        snprintf(scratch, sizeof scratch, "%s/strata-fuzz-ckpt-%ld.h5", dir ? dir : "/tmp",
                 (long)getpid());
    }
    return scratch;
}

/* open_ids returns how many HDF5 files and objects in them (groups,
 * datasets, named datatypes, attributes) are open in the process. */
static ssize_t open_ids(void) {
    return H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (H5open() < 0) abort();
    ssize_t before = open_ids();
    const char *path = scratch_path();
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    if (fclose(f) != 0) abort();
    char err[1024];
    ckpt_info info;
    memset(&info, 0, sizeof info);
    err[0] = '\0';
    int st = ckpt_load(path, NULL, &info, err, sizeof err);
    if (st == CKPT_OK) ckpt_info_free(&info);
    else if (err[0] == '\0') abort(); /* a refusal must say why */
    agent_policy *p = agent_policy_load(path, err, sizeof err);
    agent_policy_free(p);
    unlink(path);
    ssize_t now = open_ids();
    if (now != before) {
        fprintf(stderr, "fuzz_ckpt: %zd HDF5 files or objects left open (were %zd)\n", now, before);
        abort();
    }
    return 0;
}
