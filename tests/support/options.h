/* Options structs for the tests, made the one supported way (sgfp4_<x>_options_init, then
 * set fields), in one expression.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_TESTS_SUPPORT_OPTIONS_H
#define SGFP4_TESTS_SUPPORT_OPTIONS_H

#include "sgfp4.h"

/* Decode options with the given backend, thread count and store policy. */
static inline sgfp4_decode_options decode_options(sgfp4_backend backend, unsigned threads,
                                                  sgfp4_store store)
{
    sgfp4_decode_options o;
    sgfp4_decode_options_init(&o);
    o.backend = backend;
    o.threads = threads;
    o.store = store;
    return o;
}

#endif
