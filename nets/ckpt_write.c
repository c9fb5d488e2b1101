/* ckpt_write.c -- the disk side of a checkpoint save: HDF5's in-memory
 * file image, kept when HDF5 closes it, and the atomic replacement of the
 * target by that image; see ckpt_write.h.
 */
#include "nets/ckpt_write.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nets/ckpt.h"

static void msg(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- the file image (HDF5's file image callbacks; what
 * H5LTopen_file_image does for images it opens) ---- */

static void *img_malloc(size_t size, H5FD_file_image_op_t op, void *udata)
{
    ckpt_write_image *k = udata;
    (void)op;
    void *m = malloc(size);
    if (m && k) k->size = size;
    return m;
}

static void *img_memcpy(void *dest, const void *src, size_t size, H5FD_file_image_op_t op, void *udata)
{
    (void)op;
    (void)udata;
    return memcpy(dest, src, size);
}

static void *img_realloc(void *ptr, size_t size, H5FD_file_image_op_t op, void *udata)
{
    ckpt_write_image *k = udata;
    (void)op;
    void *m = realloc(ptr, size);
    if (m && k) k->size = size;
    return m;
}

static herr_t img_free(void *ptr, H5FD_file_image_op_t op, void *udata)
{
    ckpt_write_image *k = udata;
    if (op == H5FD_FILE_IMAGE_OP_FILE_CLOSE && k && !k->mem)
        k->mem = ptr;
    else
        free(ptr);
    return 0;
}

static void *img_udata_copy(void *udata)
{
    return udata;
}

static herr_t img_udata_free(void *udata)
{
    (void)udata;
    return 0;
}

void ckpt_write_image_callbacks(H5FD_file_image_callbacks_t *cb, ckpt_write_image *keep)
{
    H5FD_file_image_callbacks_t c = {img_malloc, img_memcpy,    img_realloc,   img_free,
                                     img_udata_copy, img_udata_free, keep};
    *cb = c;
}

/* ---- the atomic replacement ---- */

/* Splits path into dir and base (both malloc'ed). */
static int split_path(const char *path, char **dir, char **base)
{
    char *a = strdup(path), *b = strdup(path);
    if (!a || !b) {
        free(a);
        free(b);
        return -1;
    }
    *dir = strdup(dirname(a));
    *base = strdup(basename(b));
    free(a);
    free(b);
    if (!*dir || !*base) {
        free(*dir);
        free(*base);
        return -1;
    }
    return 0;
}

/* Removes ".<base>.tmp.<pid>.*" in dir whose pid is not a live process:
 * the leftovers of saves that were killed. */
static void clean_stale(const char *dir, const char *base)
{
    char prefix[512];
    snprintf(prefix, sizeof prefix, ".%s.tmp.", base);
    size_t pl = strlen(prefix);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, pl) != 0) continue;
        char *end;
        long pid = strtol(e->d_name + pl, &end, 10);
        if (end == e->d_name + pl || *end != '.' || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
        unlink(full);
    }
    closedir(d);
}

static int fsync_path(const char *path, int dir)
{
    int fd = open(path, O_RDONLY | (dir ? O_DIRECTORY : 0));
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int ckpt_write_begin(ckpt_write_tx *t, const char *path, char *err, size_t errlen)
{
    t->dir = t->base = t->tmp = NULL;
    t->fd = -1;
    char *dir, *base;
    if (split_path(path, &dir, &base)) {
        msg(err, errlen, "ckpt_save '%s': out of memory", path);
        return CKPT_EIO;
    }
    clean_stale(dir, base);
    size_t tlen = strlen(dir) + strlen(base) + 64;
    char *tmp = malloc(tlen);
    int rc = CKPT_EIO, fd = -1;
    if (!tmp) {
        msg(err, errlen, "ckpt_save '%s': out of memory", path);
        goto out;
    }
    snprintf(tmp, tlen, "%s/.%s.tmp.%ld.XXXXXX", dir, base, (long)getpid());
    fd = mkstemp(tmp);
    if (fd < 0) {
        msg(err, errlen, "ckpt_save '%s': cannot create a temporary file in '%s': %s", path, dir,
            strerror(errno));
        free(tmp);
        tmp = NULL;
        goto out;
    }
    /* mkstemp makes the file 0600: give it the target's mode, or what a
   * plain creat would (0666 & ~umask) */
    {
        struct stat st;
        mode_t mode;
        if (stat(path, &st) == 0) {
            mode = st.st_mode & 07777;
        } else {
            mode_t um = umask(0);
            umask(um);
            mode = 0666 & ~um;
        }
        fchmod(fd, mode);
    }
    t->dir = dir;
    t->base = base;
    t->tmp = tmp;
    t->fd = fd;
    return CKPT_OK;
out:
    free(dir);
    free(base);
    return rc;
}

int ckpt_write_commit(ckpt_write_tx *t, const char *path, const unsigned char *image, size_t n, char *err,
                      size_t errlen)
{
    int rc = CKPT_EIO, fd = t->fd;
    char *dir = t->dir, *base = t->base, *tmp = t->tmp;
    size_t isize = n;
    const char *why = NULL;
    for (size_t off = 0; off < (size_t)isize && !why;) {
        ssize_t w = write(fd, image + off, (size_t)isize - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) why = w < 0 ? strerror(errno) : "no progress";
        else off += (size_t)w;
    }
    if (why) {
        msg(err, errlen, "ckpt_save '%s': writing %lld bytes to '%s' failed: %s (disk full or file size limit?); the "
            "previous checkpoint is untouched", path, (long long)isize, tmp, why);
        goto fail;
    }
    if (fsync(fd)) {
        msg(err, errlen, "ckpt_save '%s': fsync of '%s' failed: %s; the previous checkpoint is untouched", path,
            tmp, strerror(errno));
        goto fail;
    }
    if (close(fd)) {
        fd = -1;
        msg(err, errlen, "ckpt_save '%s': closing '%s' failed: %s; the previous checkpoint is untouched", path,
            tmp, strerror(errno));
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path)) {
        msg(err, errlen, "ckpt_save '%s': rename from '%s' failed: %s", path, tmp, strerror(errno));
        goto fail;
    }
    fsync_path(dir, 1); /* make the rename durable; some file systems refuse, harmless */
    rc = CKPT_OK;
    goto out;
fail:
    if (fd >= 0) close(fd);
    unlink(tmp);
out:
    free(tmp);
    free(dir);
    free(base);
    return rc;
}

void ckpt_write_abort(ckpt_write_tx *t)
{
    if (t->fd >= 0) close(t->fd);
    if (t->tmp) unlink(t->tmp);
    free(t->tmp);
    free(t->dir);
    free(t->base);
    t->dir = t->base = t->tmp = NULL;
    t->fd = -1;
}
