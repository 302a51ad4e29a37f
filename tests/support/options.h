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

/* Encode options with the given profile and thread count (the rest the defaults). */
static inline sgfp4_encode_options encode_options(sgfp4_profile profile, unsigned threads)
{
    sgfp4_encode_options o;
    sgfp4_encode_options_init(&o);
    o.profile = profile;
    o.threads = threads;
    return o;
}

#endif
