// SPDX-License-Identifier: MIT
// Test data and independent references for collective results: every rank can compute what any
// rank contributed, so each rank checks its own output without trusting the library.
#pragma once

#include <cstdint>
#include <string>

#include "starscream/starscream.h"

namespace ssc::test {

// The value rank r contributes at global index i for a call with `op` (kept exactly
// representable in every type, and so that products stay small).
int64_t inputValue(int r, uint64_t i, sscDataType_t type, sscRedOp_t op);

// The scalar rank r uses for pre-multiplied sums: ranks differ, as PreMulSum allows.
int64_t preMulScalar(int r);

// What op over ranks 0..n-1 of inputValue(r, i) must give, in double. PreMulSum ops are passed as
// sscNumOps, with preMulScalar(r) as each rank's scalar.
double reduceReference(int n, uint64_t i, sscDataType_t type, sscRedOp_t op);

// Whether `got` matches `want` for this type and op: exact for integers and for min/max,
// within the rounding a reduction of n terms may accumulate for floating types.
bool closeEnough(double got, double want, sscDataType_t type, sscRedOp_t op, int n);

const char* opName(sscRedOp_t op);

}  // namespace ssc::test
