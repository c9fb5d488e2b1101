/* ckpt_write.h -- the disk side of a checkpoint save (internal to nets/ckpt).
 *
 * ckpt_save (nets/ckpt.c) has HDF5 build the checkpoint in memory and
 * hands the bytes to this module, which owns the two things that make a
 * save safe:
 *
 *   - the file image: HDF5's core driver callbacks that keep the driver's
 *     buffer when HDF5 closes the file, so that the image is the file HDF5
 *     would have written (superblock flagged closed and checksummed);
 *   - the atomic replacement: the image goes to a temporary file in the
 *     target's folder (".<name>.tmp.<pid>.XXXXXX", given the target's mode),
 *     is fsync'ed, renamed over the target and the folder fsync'ed, so that
 *     a crash leaves the old or the new checkpoint, never a mix. Temporary
 *     files of dead processes are removed when a save begins.
 *
 * Messages name the target as ckpt_save's do ("ckpt_save '<path>': ...").
 */
#ifndef STRATA_NETS_CKPT_WRITE_H
#define STRATA_NETS_CKPT_WRITE_H

#include <hdf5.h>
#include <stddef.h>

/* The core driver's buffer, kept when HDF5 closes the file. */
typedef struct {
    void *mem;   /* the buffer, once HDF5 closed the file (the caller frees it) */
    size_t size; /* its size: the last one HDF5 asked for */
} ckpt_write_image;

/* Fills *cb with file image callbacks (for H5Pset_file_image_callbacks on a
 * core-driver file access list) that keep the buffer in *keep, which must
 * outlive the file and start as {NULL, 0}. */
void ckpt_write_image_callbacks(H5FD_file_image_callbacks_t *cb, ckpt_write_image *keep);

/* One atomic save under way: begun by ckpt_write_begin, ended by exactly
 * one of ckpt_write_commit or ckpt_write_abort. */
typedef struct {
    char *dir, *base; /* the target's folder and name */
    char *tmp;        /* the temporary file's path */
    int fd;           /* open on tmp, or -1 */
} ckpt_write_tx;

/* ckpt_write_begin removes stale temporary files next to path and creates
 * the temporary file (mode: the target's, or 0666 & ~umask). Returns
 * CKPT_OK with *t filled, or CKPT_EIO with a message and nothing to end. */
int ckpt_write_begin(ckpt_write_tx *t, const char *path, char *err, size_t errlen);

/* ckpt_write_commit writes image[n] to the temporary file, fsyncs and
 * closes it, renames it over path and fsyncs the folder. Returns CKPT_OK,
 * or CKPT_EIO with a message (the temporary file removed, the previous
 * checkpoint untouched). Ends *t either way; image stays the caller's. */
int ckpt_write_commit(ckpt_write_tx *t, const char *path, const unsigned char *image, size_t n, char *err,
                      size_t errlen);

/* ckpt_write_abort removes the temporary file and ends *t. */
void ckpt_write_abort(ckpt_write_tx *t);

#endif
