/* The encoder's team: a thread pool and the cancel hook (team.h).
 * SPDX-License-Identifier: MIT */
#include <string.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "common/pool.h"
#include "encode/team.h"

struct sgfp4_team {
    sgfp4_allocator alloc;
    sgfp4_thread_pool *pool; /* NULL: the calling thread alone */
    int (*cancel)(void *user);
    void *cancel_user;
    uint64_t asked_ns; /* when the hook was last asked */
    bool cancelled;
};

static bool ask(sgfp4_team *t)
{
    t->asked_ns = sgfp4_now_ns();
    t->cancelled = t->cancel(t->cancel_user) != 0;
    return t->cancelled;
}

bool sgfp4_team_cancelled(sgfp4_team *t)
{
    if (t->cancelled || !t->cancel)
        return t->cancelled;
    return sgfp4_now_ns() - t->asked_ns >= SGFP4_TEAM_CHECK_NS && ask(t);
}

static bool stop_check(void *user) { return sgfp4_team_cancelled(user); }

sgfp4_team *sgfp4_team_create(unsigned threads, const sgfp4_allocator *alloc,
                              int (*cancel)(void *user), void *cancel_user)
{
    sgfp4_team *t = sgfp4_alloc_with(alloc, sizeof *t);
    if (!t)
        return NULL;
    memset(t, 0, sizeof *t);
    if (alloc)
        t->alloc = *alloc;
    t->cancel = cancel;
    t->cancel_user = cancel_user;
    if (threads > SGFP4_MAX_THREADS)
        threads = SGFP4_MAX_THREADS;
    if (threads > 1 && sgfp4_pool_create(threads, alloc, false, &t->pool) != SGFP4_OK) {
        sgfp4_free_with(alloc, t);
        return NULL;
    }
    if (cancel)
        ask(t);
    return t;
}

bool sgfp4_team_run_on(sgfp4_team *t, unsigned threads, uint64_t count, sgfp4_work_fn fn,
                       void *context)
{
    if (t->cancelled)
        return false;
    const sgfp4_pool_stop stop = {stop_check, t};
    const sgfp4_pool_stop *check = t->cancel ? &stop : NULL;
    if (t->pool && threads > 1)
        return !sgfp4_pool_run_until(t->pool, threads, count, fn, context, check);
    for (uint64_t i = 0; i < count; i++) {
        if (check && sgfp4_team_cancelled(t))
            return false;
        fn(context, i, 0);
    }
    return true;
}

bool sgfp4_team_run(sgfp4_team *t, uint64_t count, sgfp4_work_fn fn, void *context)
{
    return sgfp4_team_run_on(t, sgfp4_team_threads(t), count, fn, context);
}

unsigned sgfp4_team_threads(const sgfp4_team *t)
{
    return sgfp4_thread_pool_threads(t->pool) > 1 ? sgfp4_thread_pool_threads(t->pool) : 1;
}

void sgfp4_team_free(sgfp4_team *t)
{
    if (!t)
        return;
    sgfp4_thread_pool_free(t->pool);
    const sgfp4_allocator alloc = t->alloc;
    sgfp4_free_with(&alloc, t);
}
