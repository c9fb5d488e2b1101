/* file.c -- reading a whole file, bounded (see file.h). */
#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* kind names a file type that is not a regular file. */
static const char *kind(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a plain file";
}

int file_read(const char *path, size_t max, char **text, size_t *len, file_info *info,
              char *why, size_t whylen)
{
    *text = NULL;
    *len = 0;
    /* O_NONBLOCK: opening a FIFO that has no writer must not wait for one. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        snprintf(why, whylen, "cannot open: %s", strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(why, whylen, "cannot open: %s", strerror(errno));
        close(fd);
        return -1;
    }
    if (S_ISDIR(st.st_mode)) { /* the message strata always gave */
        snprintf(why, whylen, "cannot open: %s", strerror(EISDIR));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "cannot read: not a regular file (%s)", kind(st.st_mode));
        close(fd);
        return -1;
    }
    if (st.st_size < 0 || (unsigned long long)st.st_size > max) {
        snprintf(why, whylen, "cannot read: %lld bytes, larger than the limit of %zu bytes",
                 (long long)st.st_size, max);
        close(fd);
        return -1;
    }
    /* a regular file: plain blocking reads from here on */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    size_t cap = (size_t)st.st_size + 1, n = 0;
    if (cap < 4096)
        cap = 4096;
    if (cap > max + 1)
        cap = max + 1;
    char *buf = malloc(cap + 1);
    if (!buf) {
        snprintf(why, whylen, "cannot read: out of memory");
        close(fd);
        return -1;
    }
    for (;;) {
        if (n == cap) { /* the file grew while being read: at most max + 1 bytes */
            if (cap > max) {
                snprintf(why, whylen, "cannot read: larger than the limit of %zu bytes", max);
                free(buf);
                close(fd);
                return -1;
            }
            size_t nc = cap * 2 > max + 1 ? max + 1 : cap * 2;
            char *nb = realloc(buf, nc + 1);
            if (!nb) {
                snprintf(why, whylen, "cannot read: out of memory");
                free(buf);
                close(fd);
                return -1;
            }
            buf = nb;
            cap = nc;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            snprintf(why, whylen, "cannot read: %s", strerror(errno));
            free(buf);
            close(fd);
            return -1;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    if (n > max) {
        snprintf(why, whylen, "cannot read: larger than the limit of %zu bytes", max);
        free(buf);
        return -1;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    if (info) {
        info->dev = st.st_dev;
        info->ino = st.st_ino;
        info->size = n;
    }
    return 0;
}
