/* pool.c -- the agent's thread pool (see pool.h): workers wait on a
 * generation counter; each loop hands worker w the block of indices
 * [w*n/W, (w+1)*n/W).
 */
#include "agent/pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

struct agent_pool {
    int threads;
    pthread_t *tid;     /* [threads-1] */
    pthread_mutex_t mu;
    pthread_cond_t go;   /* a new loop (or shutdown) */
    pthread_cond_t done; /* a worker finished its block */
    unsigned long gen;   /* loops started */
    int pending;         /* workers still running the current loop */
    int stop;
    /* the current loop */
    int n;
    agent_pool_fn fn;
    void *ctx;
};

typedef struct {
    agent_pool *pool;
    int w;
} worker_arg;

static void run_block(agent_pool *p, int w) {
    long lo = (long)p->n * w / p->threads, hi = (long)p->n * (w + 1) / p->threads;
    for (long i = lo; i < hi; i++) p->fn(p->ctx, (int)i, w);
}

static void *worker_main(void *arg) {
    worker_arg *a = arg;
    agent_pool *p = a->pool;
    int w = a->w;
    free(a);
    unsigned long seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->gen == seen) pthread_cond_wait(&p->go, &p->mu);
        if (p->stop) break;
        seen = p->gen;
        pthread_mutex_unlock(&p->mu);
        run_block(p, w);
        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

agent_pool *agent_pool_create(int threads) {
    if (threads <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        threads = c > 0 ? (int)c : 1;
    }
    agent_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->threads = 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    if (threads > 1) {
        p->tid = calloc((size_t)threads - 1, sizeof *p->tid);
        if (!p->tid) {
            agent_pool_free(p);
            return NULL;
        }
    }
    for (int w = 1; w < threads; w++) {
        worker_arg *a = malloc(sizeof *a);
        if (!a) break;
        a->pool = p;
        a->w = w;
        if (pthread_create(&p->tid[w - 1], NULL, worker_main, a)) {
            free(a);
            break;
        }
        p->threads++;
    }
    if (p->threads != threads) {
        agent_pool_free(p);
        return NULL;
    }
    return p;
}

void agent_pool_free(agent_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (int w = 1; w < p->threads; w++) pthread_join(p->tid[w - 1], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
    free(p->tid);
    free(p);
}

int agent_pool_threads(const agent_pool *p) { return p ? p->threads : 1; }

void agent_pool_for(agent_pool *p, int n, agent_pool_fn fn, void *ctx) {
    if (n <= 0) return;
    if (!p || p->threads == 1 || n == 1) {
        for (int i = 0; i < n; i++) fn(ctx, i, 0);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->n = n;
    p->fn = fn;
    p->ctx = ctx;
    p->pending = p->threads - 1;
    p->gen++;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    run_block(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->pending > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
