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
 *   - the resumed run starts (it was not refused) and is still running
 *     when killed, or finished its --stop-at cleanly.
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

static void test_kill_during_checkpoints(void **state) {
    (void)state;
    srand(20261121);
    long long step = -1;
    int hit_running = 0, finished = 0;
    for (int k = 0; k < KILLS; k++) {
        int resume = step >= 0;
        pid_t pid = start_train(resume, 0);
        /* kill somewhere in the first 0.1 to 0.6 s: start-up, then steps
         * whose time is mostly checkpointing */
        double wait = 0.1 + 0.5 * (double)rand() / RAND_MAX, until = clock_now_s() + wait;
        int st = 0, exited = 0;
        while (clock_now_s() < until) {
            if (waitpid(pid, &st, WNOHANG) == pid) {
                exited = 1;
                break;
            }
            usleep(2000);
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
        print_message("  round %2d: killed after %3.0f ms, last.h5 at step %lld\n", k,
                      wait * 1e3, s);
        if (s >= 0) step = s;
    }
    /* Kills landed while the program ran, and checkpoints moved on. */
    assert_int_equal(hit_running, KILLS);
    assert_true(step > 0);
    assert_true(finished >= 3);
    /* A last resume runs three more steps and stops cleanly. */
    pid_t pid = start_train(1, (long)step + 3);
    int st;
    double t0 = clock_now_s();
    while (waitpid(pid, &st, WNOHANG) != pid) {
        if (clock_now_s() - t0 > 120) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            fail_msg("the final resume did not finish in 120 s");
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
