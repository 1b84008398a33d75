// SPDX-License-Identifier: MIT
// Element types and reduction ops as the perf tests name them, and the host-side encoding of
// values into each type's bits.
//
// The correctness check computes expected results on the host and must write and read fp16, bf16
// and fp8 without a GPU runtime and without the library's private headers, so the conversions are
// written here once, from the format definitions (IEEE 754 binary16, bfloat16, OCP FP8 e4m3fn and
// e5m2). Only round-to-nearest-even is needed: every value the check produces is exact.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "starscream/starscream.h"

namespace ssc::perf {

// The ops of the perf tests, in nccl-tests' order and with its names. kMulSum is a per-rank
// pre-multiplied sum made with sscRedOpCreatePreMulSum; kNone marks collectives that move data
// without reducing it (all_gather, broadcast, alltoall, sendrecv).
enum class PerfOp { kSum = 0, kProd, kMax, kMin, kAvg, kMulSum, kNone };

// The six reducing ops, for "-o all".
std::span<const PerfOp> allReduceOps();
const char* opName(PerfOp op);
// "sum", "prod", "max", "min", "avg", "mulsum" -> op; anything else -> nullopt ("all" included:
// the caller handles it).
std::optional<PerfOp> parseOp(std::string_view name);
// The sscRedOp_t for ops that have one (all but kMulSum and kNone).
sscRedOp_t toSscOp(PerfOp op);

// Every element type, in nccl-tests' order (which is also sscDataType_t's), for "-d all".
std::span<const sscDataType_t> allTypes();
// nccl-tests' names: int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16,
// f8e4m3, f8e5m2.
const char* typeName(sscDataType_t type);
// Accepts the names above and a few common aliases (char, int, fp16, fp32, bf16, ...).
std::optional<sscDataType_t> parseType(std::string_view name);
size_t typeSize(sscDataType_t type);
bool isFloatType(sscDataType_t type);

// Largest L such that every integer 0..L is exactly representable (capped at 2^53 so that a
// double holds it too): 127 for int8, 16 for e4m3, 8 for e5m2, 256 for bfloat16, 2048 for half.
uint64_t exactIntegerLimit(sscDataType_t type);
// Largest e such that 2^e is representable (for int types: fits in the positive range), capped
// at 52 so that a double holds it.
int maxPowerOfTwo(sscDataType_t type);
// Unit roundoff 2^-p of a float type with p significand bits (0 for integer types).
double unitRoundoff(sscDataType_t type);
// Smallest positive subnormal of a float type (0 for integer types).
double minSubnormal(sscDataType_t type);

// The value of one element (integers convert exactly while |v| < 2^53).
double decode(sscDataType_t type, const void* element);
// Writes v as one element, rounding to nearest even; out-of-range values saturate for integers
// and e4m3 (which has no infinity) and overflow to infinity for the other float types.
void encode(sscDataType_t type, double value, void* element);
// True unless the element is an infinity or a NaN.
bool isFinite(sscDataType_t type, const void* element);
// Turns an infinity or NaN bit pattern into a finite one by clearing the top exponent bit, so
// random bytes can serve as data that every copy path must preserve.
void makeFinite(sscDataType_t type, void* element);

}  // namespace ssc::perf
