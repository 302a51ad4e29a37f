/* The encoder's worker threads: a pool (common/pool.h) started once per encode call and
 * given one job after another (the analysis, every rate-control pass, the writing), instead
 * of threads started and joined for each. A job runs fn(context, item, worker) for every
 * item in [0, count); items are claimed in increasing order by whichever thread is free, the
 * caller's included, so which thread runs an item is not fixed, and every item's result
 * must depend on the item alone (each writes its own output), which keeps the encoder's
 * output the same for any thread count (DECISIONS D7).
 *
 * The team also carries the caller's cancel hook (sgfp4_encode_options.cancel): the calling
 * thread asks it when the encode starts and then about every SGFP4_TEAM_CHECK_NS, between
 * the items it runs and in the encoder's serial loops; once it says stop, every job ends
 * at its next item and reports the cancellation.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_ENCODE_TEAM_H
#define SGFP4_ENCODE_TEAM_H

#include <stdbool.h>
#include <stdint.h>

#include "common/parallel.h"
#include "sgfp4.h"

/* How often the calling thread asks the cancel hook, at most. */
#define SGFP4_TEAM_CHECK_NS 10000000u

typedef struct sgfp4_team sgfp4_team;

/* A team of `threads` threads in all, the caller's included (workers that cannot be started
 * are done without), with the cancel hook (NULL: none), which it asks once now; memory from
 * alloc. NULL when out of memory. */
sgfp4_team *sgfp4_team_create(unsigned threads, const sgfp4_allocator *alloc,
                              int (*cancel)(void *user), void *cancel_user);
/* Runs the job on the team and returns when every item is done: true; or false, at once or
 * after the items begun, when the encode is cancelled (items are then missing). */
bool sgfp4_team_run(sgfp4_team *team, uint64_t count, sgfp4_work_fn fn, void *context);
/* sgfp4_team_run() on at most `threads` of the team's threads (1: the calling thread only,
 * for jobs too short to be worth waking the workers). */
bool sgfp4_team_run_on(sgfp4_team *team, unsigned threads, uint64_t count, sgfp4_work_fn fn,
                       void *context);
/* Whether the encode is cancelled, asking the hook if it was not asked for
 * SGFP4_TEAM_CHECK_NS. For the encoder's serial loops, on the calling thread. */
bool sgfp4_team_cancelled(sgfp4_team *team);
/* Threads in all (the caller's included) the team has. */
unsigned sgfp4_team_threads(const sgfp4_team *team);
/* Stops the workers. Accepts NULL. */
void sgfp4_team_free(sgfp4_team *team);

#endif
