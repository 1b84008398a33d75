// SPDX-License-Identifier: MIT
/*
 * Helpers of nccl_call_patterns.c: data types, the integer-valued inputs and their reference
 * results, and the collective check that reports "FAIL ..." lines on rank 0. Header-only (every
 * function static): it is included by nccl_call_patterns.c alone.
 */
#ifndef SSC_TESTS_NCCL_CALL_PATTERNS_H
#define SSC_TESTS_NCCL_CALL_PATTERNS_H

#include <math.h>
#include <mpi.h>
#include <nccl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_check.h"

static int g_rank, g_n, g_passed, g_failed;
static ncclComm_t g_comm;
static unsigned g_seed; /* changed before every fill, so a call that did nothing is caught */

/* ---------------------------------------------------------------- reporting */

/* Ends a check on every rank: it passes only if every rank's part passed. On failure rank 0
 * prints "FAIL <name>: rank <r>: <why>" with the lowest failing rank's reason. */
static void check(const char* name, int ok) {
  int mine = ok ? g_n : g_rank, first = g_n;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == g_n) {
    ++g_passed;
  } else {
    if (!ok && g_why[0] == '\0') why("failed");
    MPI_Bcast(g_why, sizeof(g_why), MPI_CHAR, first, MPI_COMM_WORLD);
    if (g_rank == 0 && g_failed < 400) printf("FAIL %s: rank %d: %s\n", name, first, g_why);
    if (g_rank == 0 && g_failed == 400) printf("(further failures counted, not printed)\n");
    fflush(stdout);
    ++g_failed;
  }
  g_why[0] = '\0';
}

/* ---------------------------------------------------------------- data types */

enum { F32, I32, F16, F64, I8, U8, NDT };
static const struct {
  ncclDataType_t type;
  const char* name;
  size_t size;
} kDt[NDT] = {{ncclFloat32, "float32", 4}, {ncclInt32, "int32", 4}, {ncclFloat16, "half", 2},
              {ncclFloat64, "double", 8},  {ncclInt8, "int8", 1},   {ncclUint8, "uint8", 1}};

static uint16_t toHalf(float f) { /* exact for the small integers used here */
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  int e = (int)((x >> 23) & 0xff) - 127 + 15;
  if ((x & 0x7fffffff) == 0 || e <= 0) return sign;
  if (e >= 31) return sign | 0x7c00;
  return (uint16_t)(sign | (e << 10) | ((x & 0x7fffff) >> 13));
}
static float fromHalf(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, x;
  if (e == 0) return (sign ? -1.f : 1.f) * ldexpf((float)m, -24);
  x = e == 31 ? sign | 0x7f800000 | (m << 13) : sign | ((e - 15 + 127) << 23) | (m << 13);
  float f;
  memcpy(&f, &x, 4);
  return f;
}

static void put(int dt, void* b, size_t k, double v) {
  switch (dt) {
    case F32: ((float*)b)[k] = (float)v; break;
    case I32: ((int32_t*)b)[k] = (int32_t)v; break;
    case F16: ((uint16_t*)b)[k] = toHalf((float)v); break;
    case F64: ((double*)b)[k] = v; break;
    case I8: ((int8_t*)b)[k] = (int8_t)v; break;
    default: ((uint8_t*)b)[k] = (uint8_t)v; break;
  }
}
static double get(int dt, const void* b, size_t k) {
  switch (dt) {
    case F32: return ((const float*)b)[k];
    case I32: return ((const int32_t*)b)[k];
    case F16: return fromHalf(((const uint16_t*)b)[k]);
    case F64: return ((const double*)b)[k];
    case I8: return ((const int8_t*)b)[k];
    default: return ((const uint8_t*)b)[k];
  }
}

/* ---------------------------------------------------------------- values and references */

/* Reductions; PMH/PMD: ncclRedOpCreatePreMulSum with a host-immediate / device scalar. */
enum { SUM, PROD, MAX, MIN, AVG, PMH, PMD, NOPS };
static const char* kOpName[NOPS] = {"sum", "prod",         "max",           "min",
                                    "avg", "mulsum(host)", "mulsum(device)"};
static const ncclRedOp_t kNcclOp[NOPS] = {ncclSum, ncclProd, ncclMax, ncclMin,
                                          ncclAvg, ncclSum,  ncclSum};

/* Rank r's element g: small integers (1..11; 1..2 for prod), exact in every type, and sums of
 * up to 5 ranks scaled by 2 stay below int8's 127, so every reduction is exact. */
static double val(int op, int r, size_t g) {
  if (op == PROD) return 1 + ((g + (size_t)r + g_seed) % 3 == 0);
  return 1 + (double)((g * 7 + (size_t)r * 3 + g_seed) % 11);
}
/* The pre-multiplication scalar of rank r: nccl-tests' ncclVerifiablePremulScalar. */
static double scalarOf(int r) { return r % 2 == 0 ? 1.0 : 2.0; }

static double reduced(int op, size_t g) {
  double acc = 0;
  for (int r = 0; r < g_n; ++r) {
    double x = val(op, r, g) * (op == PMH || op == PMD ? scalarOf(r) : 1.0);
    if (r == 0)
      acc = x;
    else if (op == PROD)
      acc *= x;
    else if (op == MAX)
      acc = x > acc ? x : acc;
    else if (op == MIN)
      acc = x < acc ? x : acc;
    else
      acc += x;
  }
  return op == AVG ? acc / g_n : acc;
}

static int same(int dt, int op, double got, double want) {
  if (op != AVG) return got == want;
  double tol = dt == F64 ? 1e-12 : 1e-5;
  return fabs(got - want) <= tol * (fabs(want) > 1 ? fabs(want) : 1);
}

#endif
