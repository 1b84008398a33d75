// SPDX-License-Identifier: MIT
// Element-wise arithmetic of the host backend: the reduce-copy primitive the host executor runs
// for every plan step that combines data, for every sscDataType_t and reduction kind.
// fp16, bf16 and fp8 values are widened to float, combined, and rounded back to nearest-even
// (fp8 e4m3 saturates to +-448 as OCP "satfinite"; e5m2 overflows to infinity).
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/core/dtype.h"
#include "starscream/starscream.h"

namespace ssc {

// dst[i] = a[i] (op) b[i] for i < count. dst may alias a or b.
void hostReduce(sscDataType_t type, ReduceKind kind, const void* a, const void* b, void* dst,
                size_t count);

// Reads one element of `type` at p into a Scalar (used for sscRedOpCreatePreMulSum scalars).
Scalar scalarFromElement(sscDataType_t type, const void* p);

// dst[i] = src[i] * s (PreMulSum and float Avg, applied to each rank's input before summing).
void hostScale(sscDataType_t type, const void* src, void* dst, size_t count, Scalar s);
// dst[i] = src[i] / divisor (integer Avg, applied once to the final sum; truncates toward zero).
void hostDivide(sscDataType_t type, const void* src, void* dst, size_t count, uint64_t divisor);

// Conversions used by the reductions and by tests' references.
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
float bf16ToFloat(uint16_t b);
uint16_t floatToBf16(float f);
float fp8e4m3ToFloat(uint8_t v);
uint8_t floatToFp8e4m3(float f);
float fp8e5m2ToFloat(uint8_t v);
uint8_t floatToFp8e5m2(float f);

// Element i of a buffer of `type` as a double (tests and debug dumps); SetElement the reverse.
double getElementAsDouble(sscDataType_t type, const void* base, size_t i);
void setElementFromDouble(sscDataType_t type, void* base, size_t i, double v);

}  // namespace ssc
