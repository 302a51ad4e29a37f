/* Library calls run in the default floating-point environment (round to nearest even, no
 * flush-to-zero or denormals-are-zero), whatever the caller's thread has set: decode's
 * arithmetic is normative (DECISIONS D1) and the encoder's output is a function of its
 * input and options alone (D7), so the caller's modes must not reach them. Worker threads
 * inherit the environment of the thread that creates them (POSIX), so setting it once on
 * the calling thread covers a whole call.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_COMMON_FP_ENV_H
#define SGFP4_COMMON_FP_ENV_H

#include <fenv.h>
#include <stdbool.h>

typedef struct sgfp4_fp_scope {
    bool switched; /* the caller's environment was not the default: saved holds it */
    fenv_t saved;
} sgfp4_fp_scope;

/* Enters the default environment; cheap (one control-register read) when it already is.
 * Every enter is paired with a leave on the same thread. */
void sgfp4_fp_scope_enter(sgfp4_fp_scope *scope);
/* Gives the caller its environment back. */
void sgfp4_fp_scope_leave(sgfp4_fp_scope *scope);

#endif
