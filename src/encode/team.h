/* The encoder's worker threads: started once per encode call and given one job after another
 * (the analysis, every rate-control pass, the writing), instead of being started and joined
 * for each. A job runs fn(context, item, worker) for every item in [0, count); items are
 * claimed in increasing order from a shared counter, so which thread runs an item is not
 * fixed, and every item's result must depend on the item alone (each writes its own output),
 * which keeps the encoder's output the same for any thread count (DECISIONS D7).
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_ENCODE_TEAM_H
#define SGFP4_ENCODE_TEAM_H

#include <stdint.h>

#include "common/parallel.h"
#include "sgfp4.h"

typedef struct sgfp4_team sgfp4_team;

/* A team of `threads` threads in all, the caller's included (workers that cannot be started
 * are done without); memory from alloc. NULL when out of memory. */
sgfp4_team *sgfp4_team_create(unsigned threads, const sgfp4_allocator *alloc);
/* Runs the job on the team and returns when every item is done; `worker` is in
 * [0, threads), 0 being the caller. A NULL team runs it on the calling thread. */
void sgfp4_team_run(sgfp4_team *team, uint64_t count, sgfp4_work_fn fn, void *context);
/* Stops the workers. Accepts NULL. */
void sgfp4_team_free(sgfp4_team *team);

#endif
