/* test_faults_kill.c -- SIGKILL during training's checkpoints, then resume.
 *
 * A small general-mode training run that writes a checkpoint after every
 * step (ckpt_every: 1, so that most of its time is spent saving; the file
 * part of a step is about 25 ms of 30) is killed with SIGKILL at a random
 * moment, KILLS times in a row; each round resumes from the last
 * checkpoint (`strata train CFG --resume OUT/last.h5 --out OUT`). After
 * every kill:
 *
 *   - OUT/last.h5 and OUT/best.h5, when present, load as policies
 *     (agent_policy_load) and as checkpoints (ckpt_load);
 *   - the step in last.h5 never goes back;
 *   - the resumed run starts (it was not refused), saves checkpoints in
 *     the rounds that wait for them, and is still running when killed.
 *
 * At the end a last resume runs to --stop-at (the step reached + 3) and
 * exits 0 with last.h5 at exactly that step. The atomicity of one save
 * against SIGKILL is tested at the nets/ layer in test_nets_ckpt.c; this
 * test checks the same property for the whole training loop (checkpoint
 * plus metrics plus resume).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/policy.h"
#include "base/clock.h"
#include "nets/ckpt.h"

#define KILLS 25

static char dir[1024], cfg[1200], out[1200];

static int setup(void **state) {
    (void)state;
    const char *t = getenv("STRATA_TMP"), *s = getenv("STRATA_SRC");
    if (!t || !s || !getenv("STRATA_BIN")) return -1;
    snprintf(dir, sizeof dir, "%s/faults_kill", t);
    mkdir(t, 0777);
    mkdir(dir, 0777);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(cfg, sizeof cfg, "%s/kill.yaml", dir);
    FILE *f = fopen(cfg, "w");
    if (!f) return -1;
    fprintf(f,
            "mode: general\n"
            "generator: %s/configs/train/gen.yaml\n"
            "eval: [%s/configs/train/eval/onprem-small-ctr-dlrm.yaml]\n"
            "valid: 2\nseed: 3\nsteps: 100000\ninstances: 2\nsamples: 4\n"
            "embed: 8\nhidden: 8\ndecoder: 8\nscorer: 8\n"
            "eval_every: 7\neval_samples: 2\nckpt_every: 1\nplacement: none\nthreads: 1\n",
            s, s);
    fclose(f);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
    return system(cmd) == 0 ? 0 : -1;
}

/* Starts `strata train cfg [--resume last | --overwrite] --out out [--stop-at N] --quiet`
 * with its output thrown away; returns the pid. */
static pid_t start_train(int resume, long stop_at) {
    char last[1300], stop[32];
    snprintf(last, sizeof last, "%s/last.h5", out);
    snprintf(stop, sizeof stop, "%ld", stop_at);
    const char *argv[16] = {"strata", "train", cfg, "--out", out, "--quiet"};
    int argc = 6;
    if (resume) {
        argv[argc++] = "--resume";
        argv[argc++] = last;
    } else {
        /* a round killed before its first checkpoint leaves metrics.csv:
         * the next round starts afresh over it */
        argv[argc++] = "--overwrite";
    }
    if (stop_at > 0) {
        argv[argc++] = "--stop-at";
        argv[argc++] = stop;
    }
    argv[argc] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        freopen("/dev/null", "w", stderr);
        execv(getenv("STRATA_BIN"), (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* Loads file both ways; fails the test when it does not load. Returns its
 * step, or -1 when the file does not exist. */
static long long check_loads(const char *name) {
    char path[1300], err[2048];
    snprintf(path, sizeof path, "%s/%s", out, name);
    if (access(path, F_OK) != 0) return -1;
    ckpt_info info;
    memset(&info, 0, sizeof info);
    int st = ckpt_load(path, NULL, &info, err, sizeof err);
    if (st != CKPT_OK) fail_msg("%s does not load after SIGKILL: %s", path, err);
    long long step = (long long)info.step;
    ckpt_info_free(&info);
    agent_policy *p = agent_policy_load(path, err, sizeof err);
    if (!p) fail_msg("%s is not a policy after SIGKILL: %s", path, err);
    agent_policy_free(p);
    return step;
}

/* The identity of OUT/last.h5 (its inode and modification time, in one
 * number), or 0 when there is none. A save writes a temporary file and
 * renames it over last.h5, so each save changes it. */
static unsigned long long last_inode(void) {
    char path[1300];
    struct stat sb;
    snprintf(path, sizeof path, "%s/last.h5", out);
    if (stat(path, &sb) != 0) return 0;
    return (((unsigned long long)sb.st_ino * 1000003ULL) ^
            ((unsigned long long)sb.st_mtim.tv_sec * 1000000000ULL +
             (unsigned long long)sb.st_mtim.tv_nsec)) | 1ULL;
}

#define PROGRESS_WAIT_S 120.0 /* a hang guard, not a speed bound */

/* Waits until last.h5 is replaced (its inode differs from *ino, which is
 * updated) while pid runs. Returns 1 when it was, 0 when pid exited first
 * (its status in *st), -1 after PROGRESS_WAIT_S. */
static int wait_save(pid_t pid, unsigned long long *ino, int *st) {
    double until = clock_now_s() + PROGRESS_WAIT_S;
    while (clock_now_s() < until) {
        unsigned long long now = last_inode();
        if (now != 0 && now != *ino) {
            *ino = now;
            return 1;
        }
        if (waitpid(pid, st, WNOHANG) == pid) return 0;
        usleep(1000);
    }
    return -1;
}

/* Sleeps for secs while pid runs. Returns 0, or 1 when pid exited (its
 * status in *st). */
static int sleep_running(pid_t pid, double secs, int *st) {
    double until = clock_now_s() + secs;
    while (clock_now_s() < until) {
        if (waitpid(pid, st, WNOHANG) == pid) return 1;
        usleep(1000);
    }
    return 0;
}

/* Where the kills land is set by the run's own progress, not by the wall
 * clock, so that a loaded machine (slow start-up, slow steps) moves them
 * with it:
 *
 *   - two rounds in three are "step" rounds: the run is let save one
 *     checkpoint (it has resumed and trains), its next save is timed (one
 *     step, mostly spent saving: the baseline of this round), and it is
 *     killed a random fraction of that period after that second save:
 *     most kills land inside a save;
 *   - the third is a "start-up" round: killed a random fraction of the
 *     last measured start-up (start to first save) after it starts, so
 *     within the loading, resuming or first step.
 *
 * A step round always moves last.h5 on (twice), so a working resume gives
 * at least 16 rounds of progress; a refused or broken resume exits, or
 * saves nothing, and fails the round. */
static void test_kill_during_checkpoints(void **state) {
    (void)state;
    srand(20261121);
    long long step = -1;
    int hit_running = 0, finished = 0;
    double startup = 0.3; /* start to first save, s: measured by each step round */
    for (int k = 0; k < KILLS; k++) {
        int resume = step >= 0, st = 0, exited = 0, step_round = k % 3 != 2;
        unsigned long long ino = last_inode();
        double t0 = clock_now_s(), wait = 0;
        pid_t pid = start_train(resume, 0);
        if (step_round) {
            int got = wait_save(pid, &ino, &st);
            if (got == 1) {
                startup = clock_now_s() - t0;
                double t1 = clock_now_s();
                got = wait_save(pid, &ino, &st);
                if (got == 1) {
                    double period = clock_now_s() - t1;
                    wait = period * (double)rand() / RAND_MAX;
                    exited = sleep_running(pid, wait, &st);
                }
            }
            if (got == 0) exited = 1;
            if (got < 0) {
                kill(pid, SIGKILL);
                waitpid(pid, &st, 0);
                fail_msg("round %d: last.h5 not replaced within %.0f s of a %s run", k,
                         PROGRESS_WAIT_S, resume ? "resumed" : "fresh");
            }
        } else {
            wait = startup * (double)rand() / RAND_MAX;
            exited = sleep_running(pid, wait, &st);
        }
        if (!exited) {
            kill(pid, SIGKILL);
            assert_int_equal(waitpid(pid, &st, 0), pid);
            hit_running++;
            assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        } else {
            /* a run cannot finish 100000 steps: it stopped on an error,
             * such as a refused --resume */
            fail_msg("round %d: strata train exited early (status %d)", k,
                     WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        }
        long long s = check_loads("last.h5");
        check_loads("best.h5");
        if (s >= 0 && s < step)
            fail_msg("round %d: last.h5 went back from step %lld to %lld", k, step, s);
        if (s > step) finished++;
        print_message("  round %2d (%s): killed %4.0f ms %s, last.h5 at step %lld\n", k,
                      step_round ? "step" : "start-up", wait * 1e3,
                      step_round ? "after a save" : "after the start", s);
        if (s >= 0) step = s;
    }
    /* Kills landed while the program ran, and checkpoints moved on. */
    assert_int_equal(hit_running, KILLS);
    assert_true(step > 0);
    assert_true(finished >= 2 * KILLS / 3);
    /* A last resume runs three more steps and stops cleanly. */
    pid_t pid = start_train(1, (long)step + 3);
    int st;
    double t0 = clock_now_s();
    while (waitpid(pid, &st, WNOHANG) != pid) {
        if (clock_now_s() - t0 > 4 * PROGRESS_WAIT_S) { /* a hang guard */
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            fail_msg("the final resume did not finish in %.0f s", 4 * PROGRESS_WAIT_S);
        }
        usleep(5000);
    }
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(check_loads("last.h5"), step + 3);
    /* No temporary file of a killed save outlives the next save for long:
     * at most the one of the last killed process can remain. */
    char cmd[2600];
    snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -c '\\.tmp\\.' > '%s/strays'", out, dir);
    (void)system(cmd);
    snprintf(cmd, sizeof cmd, "%s/strays", dir);
    FILE *f = fopen(cmd, "r");
    int strays = -1;
    if (f) {
        if (fscanf(f, "%d", &strays) != 1) strays = -1;
        fclose(f);
    }
    print_message("  %d kills, final step %lld, %d temporary files left\n", KILLS, step + 3,
                  strays);
    assert_true(strays >= 0 && strays <= 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_during_checkpoints),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
