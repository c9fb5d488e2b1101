/* shell.h -- running a shell command line from a test.
 *
 * The tests that drive the real program and set up files with the shell
 * (the agent's training tests through tests/agent_fixture.h, the daemon's
 * through tests/serve_client.h) build a command with printf formatting and
 * want only its exit status; sh_run does that. (tests/harness.h's
 * harness_run is the one to use when the test reads the standard output.)
 */
#ifndef STRATA_TEST_SHELL_H
#define STRATA_TEST_SHELL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* sh_run formats a command line (printf-style, cut at 4 KiB) and runs it
 * through system(). Returns its exit status, or -1 when it did not exit
 * (killed by a signal) or could not run. */
static inline int sh_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int sh_run(const char *fmt, ...) {
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#endif
