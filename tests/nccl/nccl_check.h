// SPDX-License-Identifier: MIT
/*
 * What the NCCL test programs (nccl_preload_check.c, nccl_call_patterns.c) share: why the
 * current check failed on this rank, and NCCL calls that note it. Header-only (every function
 * static); each program reports checks its own way.
 */
#ifndef SSC_TESTS_NCCL_CHECK_H
#define SSC_TESTS_NCCL_CHECK_H

#include <nccl.h>
#include <stdarg.h>
#include <stdio.h>

#if NCCL_VERSION_CODE >= 22800 && !defined(RCCL_BFLOAT16)
#define HAVE_NCCL_228 \
  1 /* ncclAlltoAll, ncclGather/ncclScatter, shrink, revoke, symmetric windows */
#endif

static char g_why[600];

/* Records why this rank failed the current check (the first reason wins). */
static void why(const char* fmt, ...) {
  if (g_why[0] != '\0') return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_why, sizeof(g_why), fmt, ap);
  va_end(ap);
}

/* Runs an NCCL call; on failure notes the result and NCCL's message and yields 0. */
#define OK(call) ok_(#call, (call))
static int ok_(const char* what, ncclResult_t r) {
  if (r == ncclSuccess) return 1;
  why("%s -> %s: %s", what, ncclGetErrorString(r), ncclGetLastError(NULL));
  return 0;
}

#endif
