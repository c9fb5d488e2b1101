/* bench_agent.c -- the agent's benchmarks.
 *
 *   bench_agent [search|timers|all] [SRC]     (SRC: the source tree, default
 *                                              $STRATA_SRC or "..")
 *   bench_agent general CKPT [N] [SRC]
 *   bench_agent decode CKPT CONFIG [REPS]
 *   bench_agent draws SPEC [N] [BUDGET_MS]
 *   bench_agent cuts CONFIG CKPT [STEPS]
 *
 * search  Search mode (`strata train --search`) on every shipped model with
 *         at most 16 layers, on both shipped clusters: trains from scratch
 *         until the best plan found is within 1% of the exact optimum or 60 s
 *         have passed, and prints the gap and the time it took. Threads: 2.
 * timers  Where a training step's time goes, on the general config
 *         (configs/train/general.yaml) for 30 steps: drawing instances (with
 *         their exact and reference solves), the environments, the network,
 *         and inside the network the time spent in BLAS. The BLAS time is
 *         measured by recording every GEMM of those steps (nn_gemm_trace)
 *         and replaying the same shapes through cblas_sgemm. The issue's
 *         bound: at most half of a step outside BLAS and the environment.
 * general A trained policy's gap to the exact optimum on N (default 200)
 *         generated jobs and clusters never seen in training: drawn from
 *         configs/train/gen.yaml with seed 777 (training uses seed 1, and the
 *         generator's draws are keyed by seed), greedy and best of 16
 *         samples; then the held-out shipped jobs of configs/train/eval/.
 * decode  What the daemon spends per /v1/place with a policy: one greedy
 *         decode of each job of CONFIG with the node head placing its tasks,
 *         REPS times (default 200) on one thread, and the GEMMs of one
 *         decode grouped by shape. bench/wrk/place.yaml is the daemon
 *         benchmark's job and cluster.
 * draws   What drawing a general-mode instance costs: N (default 300) draws
 *         of the generator spec SPEC (seed 1), each drawn again until the
 *         exact solver, with a budget of BUDGET_MS (default 5000, the
 *         trainer's default `draw_budget`), gives it a plan, as the trainer
 *         does; prints the time per instance by size band, the
 *         share of it in draws thrown away, and how often the budget
 *         stopped the solver (the plan then is not proven optimal).
 * cuts    How often a policy's own greedy type is not the best one, where
 *         training cuts its plans: STEPS (default 60) steps of the train
 *         CONFIG (general mode, with dagger_soft > 0) from step 0 with
 *         CKPT's network and a learning rate of 0 (so every file meets the
 *         same jobs, cut at the same layers, and is measured as it is),
 *         its files written to a scratch folder; at every DAgger cut, the
 *         exact completion's cost with the policy's type there against the
 *         best type's (agent_train_dagger_soft). Prints the share of cuts
 *         where it is the best, dearer by up to 0.1%, 1%, 5%, 20% and more
 *         (no completion at all with its type counts as more), the share
 *         dearer by more than 0.1% (a miss), the mean extra cost where
 *         above 1% (over the cuts that have a completion), and how often
 *         two types or more complete within 0.5% of the best (ties).
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "agent/gen.h"
#include "agent/policy.h"
#include "agent/train.h"
#include "base/clock.h"
#include "env/config.h"
#include "env/model.h"
#include "solvers/solve.h"
#include "agent/trainconf.h"
#include "solvers/runload.h"
#include "bench/shipped.h"
#include "nets/layers.h"

static int bench_search(const char *src) {
    static const char *cases[][2] = {
        {"aws-mixed", "ctr-dlrm"},       {"aws-mixed", "bert-base"},    {"aws-mixed", "gpt2-small"},
        {"aws-mixed", "vgg16"},          {"onprem-small", "ctr-dlrm"},  {"onprem-small", "bert-base"},
        {"onprem-small", "gpt2-small"},  {"onprem-small", "vgg16"},
    };
    int n = (int)(sizeof cases / sizeof *cases), ok = 0;
    printf("search mode: within 1%% of exact in at most 60 s, 2 threads\n");
    printf("%-14s %-11s %6s %12s %12s %8s %8s %7s\n", "cluster", "model", "layers", "exact $", "best $", "gap", "time s",
           "steps");
    for (int i = 0; i < n; i++) {
        char path[2048], err[2048];
        snprintf(path, sizeof path, "%s/configs/train/eval/%s-%s.yaml", src, cases[i][0], cases[i][1]);
        agent_trainconf *tc = agent_trainconf_search(path, err, sizeof err);
        if (!tc) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        tc->threads = 2;
        tc->polish = 0; /* the learning alone, as docs/agent.md's table was measured */
        snprintf(tc->out, sizeof tc->out, "bench-agent-search");
        agent_trainer *t = agent_train_create(tc, NULL, err, sizeof err);
        if (!t) {
            fprintf(stderr, "%s\n", err);
            agent_trainconf_free(tc);
            return 1;
        }
        double t0 = clock_now_s(), reached = NAN;
        const model_job *job;
        const model_cluster *cl;
        const int *assign;
        double cost = INFINITY, exact = NAN;
        while (clock_now_s() - t0 < 60.0) {
            if (agent_train_step(t, err, sizeof err)) {
                fprintf(stderr, "%s\n", err);
                break;
            }
            agent_train_best(t, &job, &cl, &assign, &cost, &exact);
            if (assign && cost <= exact * 1.01) {
                reached = clock_now_s() - t0;
                break;
            }
        }
        agent_train_best(t, &job, &cl, &assign, &cost, &exact);
        double gap = cost / exact - 1;
        printf("%-14s %-11s %6d %12.2f %12.2f %7.2f%% %8.1f %7ld%s\n", cases[i][0], cases[i][1], job->n_layers,
               exact, cost, 100 * gap, isnan(reached) ? clock_now_s() - t0 : reached, agent_train_step_count(t),
               isnan(reached) ? "  NOT within 1%" : "");
        fflush(stdout);
        ok += !isnan(reached);
        agent_train_free(t);
        agent_trainconf_free(tc);
    }
    printf("%d of %d within 1%% in 60 s\n", ok, n);
    return ok == n ? 0 : 2;
}

/* replay times every recorded GEMM once on scratch buffers. */
static double replay(const nn_gemm_trace *tr) {
    size_t cap = 0;
    for (int i = 0; i < tr->n; i++) {
        const nn_gemm_call *c = &tr->calls[i];
        size_t a = (size_t)(c->trans_a ? c->K : c->M) * (size_t)c->lda;
        size_t b = (size_t)(c->trans_b ? c->N : c->K) * (size_t)c->ldb;
        size_t d = (size_t)c->M * (size_t)c->ldc;
        if (a > cap) cap = a;
        if (b > cap) cap = b;
        if (d > cap) cap = d;
    }
    float *A = calloc(cap + 16, sizeof *A), *B = calloc(cap + 16, sizeof *B), *C = calloc(cap + 16, sizeof *C);
    if (!A || !B || !C) {
        free(A), free(B), free(C);
        return NAN;
    }
    for (size_t e = 0; e < cap; e++) A[e] = B[e] = 0.01f * (float)(e % 97);
    double t0 = clock_now_s();
    for (int i = 0; i < tr->n; i++) {
        const nn_gemm_call *c = &tr->calls[i];
        cblas_sgemm(CblasRowMajor, c->trans_a ? CblasTrans : CblasNoTrans, c->trans_b ? CblasTrans : CblasNoTrans,
                    c->M, c->N, c->K, c->alpha, A, c->lda, B, c->ldb, c->beta, C, c->ldc);
    }
    double t = clock_now_s() - t0;
    free(A), free(B), free(C);
    return t;
}

static int bench_timers(const char *src) {
    char path[2048], err[2048];
    snprintf(path, sizeof path, "%s/configs/train/general.yaml", src);
    agent_trainconf *tc = agent_trainconf_load(path, err, sizeof err);
    if (!tc) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    tc->eval_every = 0;
    tc->ckpt_every = 0;
    tc->threads = 2;
    snprintf(tc->out, sizeof tc->out, "bench-agent-timers");
    agent_trainer *t = agent_train_create(tc, NULL, err, sizeof err);
    if (!t) {
        fprintf(stderr, "%s\n", err);
        agent_trainconf_free(tc);
        return 1;
    }
    /* warm up (allocations, first touch) */
    for (int s = 0; s < 3; s++)
        if (agent_train_step(t, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
    agent_train_times t0 = *agent_train_timing(t);
    nn_gemm_trace tr = {0};
    int steps = 30;
    double w0 = clock_now_s();
    nn_gemm_trace_begin(&tr);
    for (int s = 0; s < steps; s++)
        if (agent_train_step(t, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
    nn_gemm_trace_end();
    double wall = clock_now_s() - w0;
    const agent_train_times *t1 = agent_train_timing(t);
    double la = t1->lookahead - t0.lookahead;
    double inst = t1->instances - t0.instances, env = t1->env - t0.env, net = t1->net - t0.net,
           learn = t1->learn - t0.learn, io = t1->io - t0.io;
    double blas = replay(&tr);
    double other = wall - env - blas;
    int B = tc->instances * tc->samples;
    printf("training step breakdown: general config, %d steps of %d episodes, %d threads\n", steps, B, 2);
    printf("  wall time             %8.3f s  (%.1f ms/step, %.0f episodes/s)\n", wall, 1e3 * wall / steps,
           steps * B / wall);
    printf("  instances (+ solves)  %8.3f s  %5.1f%%\n", inst, 100 * inst / wall);
    printf("  environments          %8.3f s  %5.1f%%\n", env, 100 * env / wall);
    printf("    of which look-ahead %8.3f s  %5.1f%%  (agent code inside the parallel env sections)\n", la,
           100 * la / wall);
    printf("  network in rollouts   %8.3f s  %5.1f%%\n", net, 100 * net / wall);
    printf("  learning              %8.3f s  %5.1f%%\n", learn, 100 * learn / wall);
    printf("  files                 %8.3f s  %5.1f%%\n", io, 100 * io / wall);
    printf("  BLAS (%d GEMMs replayed) %6.3f s  %5.1f%% (of the network's %.3f s)\n", tr.n, blas, 100 * blas / wall,
           net + learn);
    printf("  outside BLAS and the environments: %.3f s = %.1f%% of the step (bound: 50%%)%s\n", other,
           100 * other / wall, other <= 0.5 * wall ? "" : "  OVER");
    printf("  ... counting the look-ahead as outside too: %.3f s = %.1f%%%s\n", other + la, 100 * (other + la) / wall,
           other + la <= 0.5 * wall ? "" : "  OVER");
    nn_gemm_trace_free(&tr);
    agent_train_free(t);
    agent_trainconf_free(tc);
    return other <= 0.5 * wall ? 0 : 2;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* decode_gaps decodes job on cl (greedy, best of 16) and writes the gaps to
 * exact into g[2] (INFINITY: no plan). */
static void decode_gaps(const agent_policy *pol, const model_job *job, const model_cluster *cl, double exact,
                        double g[2]) {
    char err[512];
    int *as = malloc((size_t)job->n_layers * sizeof *as);
    model_plan *plan = model_plan_create(job->n_layers);
    for (int k = 0; k < 2; k++) {
        agent_decode_opts o = {k ? AGENT_DECODE_SAMPLE : AGENT_DECODE_GREEDY, k ? 16 : 1, 1, PLACER_PLACE_NONE, 0, NULL, NULL, 0, 0, 0, 0};
        agent_decode_result r = {.assign = as, .task_node = NULL, .plan = plan};
        g[k] = as && plan && agent_policy_decode(pol, job, cl, &o, &r, err, sizeof err) == 0 ? plan->cost / exact - 1
                                                                                              : INFINITY;
    }
    free(as);
    model_plan_free(plan);
}

static void summary(const char *what, double *g, int n) {
    int nf = 0;
    double sum = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(g[i])) sum += g[i];
        else nf++;
    qsort(g, (size_t)n, sizeof *g, cmp_d);
    int k = n - nf;
    printf("  %-12s mean %6.2f%%  median %6.2f%%  p90 %6.2f%%  max %7.2f%%  no plan: %d of %d\n", what,
           k ? 100 * sum / k : NAN, k ? 100 * g[k / 2] : NAN, k ? 100 * g[(int)(0.9 * (k - 1))] : NAN,
           k ? 100 * g[k - 1] : NAN, nf, n);
}

static int bench_general(const char *ckpt, int n, const char *src) {
    char path[2048], err[2048];
    agent_policy *pol = agent_policy_load(ckpt, err, sizeof err);
    if (!pol) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    snprintf(path, sizeof path, "%s/configs/train/gen.yaml", src);
    agent_gen *gen = agent_gen_load(path, err, sizeof err);
    if (!gen) {
        fprintf(stderr, "%s\n", err);
        agent_policy_free(pol);
        return 1;
    }
    double *gg = calloc((size_t)n, sizeof *gg), *gs = calloc((size_t)n, sizeof *gs);
    int within[2] = {0, 0};
    agent_gen_inst in;
    memset(&in, 0, sizeof in);
    solve_result *res = solve_result_create(1024);
    printf("general policy %s (step %lld) on %d generated jobs never seen in training (seed 777)\n", ckpt,
           (long long)agent_policy_step(pol), n);
    for (int i = 0; i < n; i++) {
        double exact = INFINITY;
        for (int attempt = 0; attempt < 100 && !isfinite(exact); attempt++) {
            agent_gen_draw(gen, 777, (uint64_t)i, attempt, &in);
            solve_opts o;
            solve_opts_default(&o);
            if (solve_run(&in.job, &in.cl, &o, res) == 0) exact = res->plan->cost;
        }
        double g[2];
        decode_gaps(pol, &in.job, &in.cl, exact, g);
        gg[i] = g[0];
        gs[i] = g[1];
        within[0] += g[0] <= 0.01;
        within[1] += g[1] <= 0.01;
    }
    summary("greedy", gg, n);
    printf("    (%d of %d within 1%%)\n", within[0], n);
    summary("best of 16", gs, n);
    printf("    (%d of %d within 1%%)\n", within[1], n);
    printf("held-out shipped jobs (configs/train/eval/):\n");
    static const char *evals[] = {"aws-mixed-ctr-dlrm", "aws-mixed-bert-base", "aws-mixed-gpt2-small",
                                  "aws-mixed-resnet50", "aws-mixed-vgg16", "onprem-small-ctr-dlrm",
                                  "onprem-small-bert-base", "onprem-small-gpt2-small", "onprem-small-vgg16"};
    double sg = 0, ss = 0;
    for (size_t i = 0; i < sizeof evals / sizeof *evals; i++) {
        snprintf(path, sizeof path, "%s/configs/train/eval/%s.yaml", src, evals[i]);
        cfg_run *run = run_load(path, err, sizeof err);
        if (!run) {
            fprintf(stderr, "%s\n", err);
            continue;
        }
        solve_opts o;
        solve_opts_default(&o);
        solve_run(&run->jobs[0], &run->cluster, &o, res);
        double exact = res->plan->cost, g[2];
        decode_gaps(pol, &run->jobs[0], &run->cluster, exact, g);
        printf("  %-26s exact $%10.2f  greedy %+7.2f%%  best of 16 %+7.2f%%\n", evals[i], exact, 100 * g[0],
               100 * g[1]);
        sg += g[0];
        ss += g[1];
        cfg_free(run);
    }
    printf("  mean                                    greedy %+7.2f%%  best of 16 %+7.2f%%\n",
           100 * sg / (double)(sizeof evals / sizeof *evals), 100 * ss / (double)(sizeof evals / sizeof *evals));
    /* placement: the policy's greedy plan placed by the node head and by the heuristics */
    static const char *pl[] = {"policy", "spread", "pack", "aggregate", "zone", "best"};
    int npl = (int)(sizeof pl / sizeof *pl);
    printf("placement of the greedy plan, cost' / cost (1 = the links cost nothing; - = does not keep the target):\n");
    printf("  %-26s", "");
    for (int k = 0; k < npl; k++) printf(" %9s", pl[k]);
    printf("\n");
    for (size_t i = 0; i < sizeof evals / sizeof *evals; i++) {
        snprintf(path, sizeof path, "%s/configs/train/eval/%s.yaml", src, evals[i]);
        cfg_run *run = run_load(path, err, sizeof err);
        if (!run) continue;
        const model_job *job = &run->jobs[0];
        int *as = malloc((size_t)job->n_layers * sizeof *as);
        int *tn = malloc((size_t)agent_policy_max_tasks(job, &run->cluster) * sizeof *tn);
        model_plan *plan = model_plan_create(job->n_layers), *p0 = model_plan_create(job->n_layers);
        agent_decode_opts o = {AGENT_DECODE_GREEDY, 1, 1, PLACER_PLACE_NONE, 0, NULL, NULL, 0, 0, 0, 0};
        agent_decode_result r = {.assign = as, .task_node = tn, .plan = plan};
        double base = agent_policy_decode(pol, job, &run->cluster, &o, &r, err, sizeof err) == 0 ? plan->cost : NAN;
        printf("  %-26s", evals[i]);
        for (int k = 0; k < npl; k++) {
            placer_placement_parse(pl[k], &o.placement);
            int st = agent_policy_decode(pol, job, &run->cluster, &o, &r, err, sizeof err);
            if (st == 0 && isfinite(base))
                printf(" %9.4f", plan->cost / base);
            else
                printf(" %9s", "-");
        }
        printf("\n");
        free(as);
        free(tn);
        model_plan_free(plan);
        model_plan_free(p0);
        cfg_free(run);
    }
    solve_result_free(res);
    agent_gen_inst_clear(&in);
    agent_gen_free(gen);
    agent_policy_free(pol);
    free(gg);
    free(gs);
    return 0;
}

/* ---- decode ---------------------------------------------------------------- */

static int cmp_call(const void *a, const void *b) {
    const nn_gemm_call *x = a, *y = b;
    if (x->M != y->M) return x->M - y->M;
    if (x->N != y->N) return x->N - y->N;
    if (x->K != y->K) return x->K - y->K;
    return (x->trans_a * 2 + x->trans_b) - (y->trans_a * 2 + y->trans_b);
}

/* bench_decode times what the daemon does per /v1/place with a policy: one
 * greedy decode of every job of config with the node head placing the
 * tasks, `reps` times, single-threaded OpenBLAS (as the daemon runs it);
 * then records the GEMMs of one decode and prints them grouped by shape. */
static int bench_decode(const char *ckpt, const char *config, int reps) {
    char err[2048];
    agent_policy *pol = agent_policy_load(ckpt, err, sizeof err);
    cfg_run *run = pol ? run_load(config, err, sizeof err) : NULL;
    if (!run) {
        fprintf(stderr, "bench_agent: %s\n", err);
        agent_policy_free(pol);
        return 1;
    }
    openblas_set_num_threads(1);
    int rc = 0;
    for (int j = 0; j < run->n_jobs && rc == 0; j++) {
        const model_job *job = &run->jobs[j];
        int cap = agent_policy_max_tasks(job, &run->cluster);
        int *assign = malloc((size_t)job->n_layers * sizeof *assign);
        int *task_node = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *task_node);
        model_plan *plan = model_plan_create(job->n_layers);
        if (!assign || !task_node || !plan) {
            fprintf(stderr, "bench_agent: out of memory\n");
            rc = 1;
        }
        agent_decode_opts o = {AGENT_DECODE_GREEDY, 1, 1, PLACER_PLACE_POLICY, 0, NULL, NULL, 0, 0, 0, 0};
        agent_decode_result res = {.assign = assign, .task_node = task_node, .plan = plan};
        double *t = malloc((size_t)reps * sizeof *t);
        for (int r = 0; r < reps && rc == 0 && t; r++) {
            double t0 = clock_now_s();
            if (agent_policy_decode(pol, job, &run->cluster, &o, &res, err, sizeof err) < 0) {
                fprintf(stderr, "bench_agent: %s\n", err);
                rc = 1;
            }
            t[r] = clock_now_s() - t0;
        }
        if (rc == 0 && t) {
            nn_gemm_trace tr = {0};
            nn_gemm_trace_begin(&tr);
            agent_policy_decode(pol, job, &run->cluster, &o, &res, err, sizeof err);
            nn_gemm_trace_end();
            qsort(t, (size_t)reps, sizeof *t, cmp_d);
            printf("decode: job %s (%d layers) on %d nodes, greedy + node head: median %.0f us, min %.0f us "
                   "over %d decodes; %d passes, %s\n",
                   job->name, job->n_layers, run->cluster.n_nodes, 1e6 * t[reps / 2], 1e6 * t[0], reps,
                   res.samples_used, plan->reason == MODEL_FEASIBLE ? "feasible" : plan->why);
            qsort(tr.calls, (size_t)tr.n, sizeof *tr.calls, cmp_call);
            double flops = 0;
            printf("  GEMMs of one decode: %d calls\n  %6s %6s %6s %3s %3s %7s %10s\n", tr.n, "M", "N", "K", "tA",
                   "tB", "calls", "MFLOP");
            for (int i = 0; i < tr.n;) {
                int k = i;
                while (k < tr.n && cmp_call(&tr.calls[i], &tr.calls[k]) == 0) k++;
                const nn_gemm_call *c = &tr.calls[i];
                double f = 2.0 * c->M * c->N * c->K * (k - i);
                flops += f;
                printf("  %6d %6d %6d %3d %3d %7d %10.3f\n", c->M, c->N, c->K, c->trans_a, c->trans_b, k - i,
                       f * 1e-6);
                i = k;
            }
            printf("  total %.2f MFLOP\n", flops * 1e-6);
            nn_gemm_trace_free(&tr);
        }
        free(t);
        free(assign);
        free(task_node);
        model_plan_free(plan);
    }
    cfg_free(run);
    agent_policy_free(pol);
    return rc;
}

/* bench_draws times N instances of a generator spec as the trainer draws
 * them (agent/train.c: draw_inst, solve_costs' exact solve). Returns 0, or 1
 * when the spec does not load. */
static int bench_draws(const char *spec, int n, long budget_ms) {
    char err[2048];
    agent_gen *gen = agent_gen_load(spec, err, sizeof err);
    if (!gen) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    static const int band_hi[] = {8, 16, 32, 64, 1 << 30};
    enum { NB = 5 };
    double *t = calloc((size_t)n, sizeof *t), band_t[NB] = {0}, total = 0, wasted = 0;
    int band_n[NB] = {0}, stopped = 0, redrawn = 0;
    agent_gen_inst in;
    memset(&in, 0, sizeof in);
    solve_result *res = solve_result_create(4096);
    for (int i = 0; i < n && t && res; i++) {
        int L = 0;
        for (int attempt = 0; attempt < 100; attempt++) {
            if (agent_gen_draw(gen, 1, (uint64_t)i, attempt, &in)) break;
            solve_opts o;
            solve_opts_default(&o);
            o.budget_ms = budget_ms;
            double t0 = clock_now_s();
            int st = solve_run(&in.job, &in.cl, &o, res);
            double dt = clock_now_s() - t0;
            t[i] += dt;
            L = in.job.n_layers;
            if (st == 0) {
                stopped += res->stopped;
                break;
            }
            wasted += dt;
            redrawn++;
        }
        int b = 0;
        while (L > band_hi[b]) b++;
        band_t[b] += t[i];
        band_n[b]++;
        total += t[i];
    }
    if (!t || !res) {
        fprintf(stderr, "out of memory\n");
        free(t);
        solve_result_free(res);
        agent_gen_free(gen);
        return 1;
    }
    printf("%d instances of %s (seed 1), exact solver with a %ld ms budget: %.1f s, %.1f ms each\n", n,
           spec, budget_ms, total, 1e3 * total / n);
    for (int b = 0; b < NB - 1; b++)
        if (band_n[b])
            printf("  %2d-%-2d layers: %4d instances, %7.1f ms each, %5.1f%% of the time\n",
                   b ? band_hi[b - 1] + 1 : 1, band_hi[b], band_n[b], 1e3 * band_t[b] / band_n[b],
                   100 * band_t[b] / total);
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    double top = 0;
    for (int i = n - 1; i >= n - (n + 19) / 20; i--) top += t[i];
    printf("  median %.1f ms, p90 %.1f ms, max %.1f ms; the slowest 5%% take %.1f%% of the time\n",
           1e3 * t[n / 2], 1e3 * t[(int)(0.9 * (n - 1))], 1e3 * t[n - 1], 100 * top / total);
    printf("  draws thrown away: %d (%.1f%% of the time); plans not proven (budget): %d\n", redrawn,
           100 * wasted / total, stopped);
    free(t);
    solve_result_free(res);
    agent_gen_inst_clear(&in);
    agent_gen_free(gen);
    return 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static int bench_cuts(const char *config, const char *ckpt, int steps) {
    char err[4096];
    agent_trainconf *tc = agent_trainconf_load(config, err, sizeof err);
    if (!tc) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (!(tc->dagger_soft > 0)) {
        fprintf(stderr, "%s: dagger_soft: the cuts need every type's completion (dagger_soft > 0)\n", config);
        agent_trainconf_free(tc);
        return 1;
    }
    char dir[] = "/tmp/bench_cuts_XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        agent_trainconf_free(tc);
        return 1;
    }
    snprintf(tc->out, sizeof tc->out, "%s", dir);
    tc->eval_every = 0;
    tc->ckpt_every = 0;
    tc->valid = 1;
    /* CKPT's own policy, on the same jobs and cuts whatever the file: its
     * network copied into a run that starts at step 0 (init_from: draws
     * and cuts follow the config's seed and the step alone), learning
     * nothing (rate 0, so Adam and weight decay leave it as it is), a
     * batch of its own every step */
    snprintf(tc->init_from, sizeof tc->init_from, "%s", ckpt);
    tc->node_head_from[0] = '\0';
    tc->lr = tc->lr_final = 0;
    tc->reuse = 1;
    tc->average_every = 0;
    agent_trainer *t = agent_train_create(tc, NULL, err, sizeof err);
    if (!t) {
        fprintf(stderr, "%s\n", err);
        agent_trainconf_free(tc);
        return 1;
    }
    static const double edge[] = {1e-9, 1e-3, 1e-2, 5e-2, 0.2};
    enum { NE = 5 };
    long n = 0, hist[NE + 1] = {0}, ties = 0, big = 0, dead = 0;
    double big_cost = 0;
    int *actions = malloc(MODEL_MAX_LAYERS * sizeof *actions), rc = !actions;
    for (int s = 0; s < steps && !rc; s++) {
        if (agent_train_step(t, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            rc = 1;
            break;
        }
        for (int i = 0; i < tc->instances * tc->dagger_cuts; i++) {
            int cut, n_types;
            const int *greedy, *plan;
            const double *cc;
            const float *q;
            if (agent_train_dagger(t, i, &cut, &greedy, &plan, actions) ||
                agent_train_dagger_soft(t, i, &cc, &q, &n_types))
                continue;
            double best = cc[plan[cut]], extra = cc[greedy[cut]] / best - 1;
            int e = 0, near = 0;
            while (e < NE && extra >= edge[e]) e++;
            hist[e]++;
            if (isinf(extra)) dead++; /* no completion with its type (a plan that ends infeasible) */
            else if (extra > 1e-2) big++, big_cost += extra;
            for (int k = 0; k < n_types; k++) near += q[k] > 0 && cc[k] <= best * 1.005;
            ties += near >= 2;
            n++;
        }
    }
    if (!rc && n > 0) {
        printf("%s from %s: %ld cuts in %d steps\n", config, ckpt, n, steps);
        static const char *label[] = {"the best", "dearer by < 0.1%", "0.1-1%", "1-5%", "5-20%", ">= 20%"};
        for (int e = 0; e <= NE; e++) printf("  own type %-17s %5.1f%%\n", label[e], 100.0 * hist[e] / n);
        printf("  dearer by > 0.1%% (a miss): %.2f%% of the cuts\n", 100.0 * (n - hist[0] - hist[1]) / n);
        printf("  dearer by > 1%%: %.1f%% of the cuts, %.1f%% dearer on average there", 100.0 * (big + dead) / n,
               big ? 100 * big_cost / big : 0.0);
        if (dead) printf(" (%ld more with no completion at all, not in the mean)", dead);
        printf("\n");
        printf("  two types or more within 0.5%% of the best: %.1f%%\n", 100.0 * ties / n);
    } else if (!rc) {
        fprintf(stderr, "%s: no cut had every type's completion in %d steps\n", config, steps);
        rc = 1;
    }
    free(actions);
    agent_train_free(t);
    agent_trainconf_free(tc);
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); /* the scratch folder */
    return rc;
}

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "all";
    if (!strcmp(what, "decode")) {
        if (argc < 4) {
            fprintf(stderr, "usage: bench_agent decode CKPT CONFIG [REPS]\n");
            return 2;
        }
        return bench_decode(argv[2], argv[3], argc > 4 ? atoi(argv[4]) : 200);
    }
    if (!strcmp(what, "draws")) {
        if (argc < 3) {
            fprintf(stderr, "usage: bench_agent draws SPEC [N] [BUDGET_MS]\n");
            return 2;
        }
        int n = argc > 3 ? atoi(argv[3]) : 300;
        long budget = argc > 4 ? atol(argv[4]) : 5000;
        return bench_draws(argv[2], n > 0 ? n : 300, budget > 0 ? budget : 5000);
    }
    if (!strcmp(what, "cuts")) {
        if (argc < 4) {
            fprintf(stderr, "usage: bench_agent cuts CONFIG CKPT [STEPS]\n");
            return 2;
        }
        int steps = argc > 4 ? atoi(argv[4]) : 60;
        return bench_cuts(argv[2], argv[3], steps > 0 ? steps : 60);
    }
    if (!strcmp(what, "general")) {
        if (argc < 3) {
            fprintf(stderr, "usage: bench_agent general CKPT [N] [SRC]\n");
            return 2;
        }
        return bench_general(argv[2], argc > 3 ? atoi(argv[3]) : 200,
                             shipped_src_default(argc > 4 ? argv[4] : NULL));
    }
    const char *src = shipped_src_default(argc > 2 ? argv[2] : NULL);
    int rc = 0;
    if (!strcmp(what, "search") || !strcmp(what, "all")) rc |= bench_search(src);
    if (!strcmp(what, "timers") || !strcmp(what, "all")) rc |= bench_timers(src);
    return rc;
}
