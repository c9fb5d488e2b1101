/* file.h -- reading a whole file, bounded.
 *
 * Every file strata reads whole (run configs and what they include,
 * placements, eval specs and the model files they name, train configs,
 * generator specs, the daemon's token file, `strata import-nodes`' nodes
 * JSON, `strata calibrate`'s measurements CSV) goes through file_read, which
 * refuses what could never end or could exhaust memory:
 *
 *   - anything but a regular file (a FIFO, a device such as /dev/zero, a
 *     socket, a directory), checked with fstat on a descriptor opened with
 *     O_NONBLOCK, so that a FIFO without a writer cannot block the open;
 *   - a file of more than `max` bytes (checked on its size, then again
 *     while reading, in case it grows).
 *
 * docs/reliability.md lists the limits the callers pass.
 */
#ifndef STRATA_FILE_H
#define STRATA_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* The limit on one config file (YAML: runs, includes, placements, eval
 * specs, train configs, generator specs): 4 MiB, some 500 times the largest
 * shipped one. */
#define FILE_MAX_CONFIG ((size_t)4 << 20)

/* What file_read found out about a file besides its text. */
typedef struct {
    dev_t dev; /* identity (include cycles) */
    ino_t ino;
    size_t size; /* bytes read */
} file_info;

/* file_read reads the regular file at path, of at most max bytes, into a
 * new buffer *text (NUL-terminated, *len bytes before the NUL; the caller
 * frees it) and fills *info when info is not NULL. Returns 0, or -1 with
 * why it could not in why[whylen] (without the path: the caller names the
 * file), e.g. "cannot open: No such file or directory", "not a regular
 * file (a FIFO)", "larger than the limit of 16777216 bytes". */
int file_read(const char *path, size_t max, char **text, size_t *len, file_info *info,
              char *why, size_t whylen);

#endif
