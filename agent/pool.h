/* pool.h -- a small persistent thread pool for the agent's parallel loops.
 *
 * agent_pool_for(pool, n, fn, ctx) calls fn(ctx, i, worker) for every i in
 * 0..n-1, spread over the pool's threads (the calling thread is worker 0),
 * and returns when all calls are done. Indices are handed out in contiguous
 * blocks, one per worker, so a loop whose calls are independent gives the
 * same results whatever the number of threads. Workers sleep on a
 * condition variable between loops (no spinning), so they do not compete
 * with OpenBLAS's threads during the GEMMs.
 *
 * A pool is driven by one thread at a time. A NULL pool (or one thread)
 * runs the loop on the caller.
 */
#ifndef STRATA_AGENT_POOL_H
#define STRATA_AGENT_POOL_H

typedef struct agent_pool agent_pool;

typedef void (*agent_pool_fn)(void *ctx, int i, int worker);

/* agent_pool_create starts threads-1 workers (threads <= 0: the number of
 * online CPUs). Returns NULL when threads cannot be started. */
agent_pool *agent_pool_create(int threads);
void agent_pool_free(agent_pool *pool);

/* agent_pool_threads returns the number of workers (>= 1; 1 for NULL). */
int agent_pool_threads(const agent_pool *pool);

/* agent_pool_for runs fn(ctx, i, worker) for i in [0, n). */
void agent_pool_for(agent_pool *pool, int n, agent_pool_fn fn, void *ctx);

#endif
