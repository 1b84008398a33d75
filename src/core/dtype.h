// SPDX-License-Identifier: MIT
// The data-type vocabulary every layer shares: element sizes and names, the four combiners, and a
// scalar in a type's own domain. It sits in the base layer so that the API's argument checks, the
// plans and the executors agree on one definition without reaching into the kernels.
#pragma once

#include <cstddef>
#include <cstdint>

#include "starscream/starscream.h"

namespace ssc {

// Size in bytes of one element; 0 for an unknown type.
size_t dtypeSize(sscDataType_t type);
bool dtypeValid(sscDataType_t type);
bool dtypeIsFloat(sscDataType_t type);  // fp16, bf16, fp32, fp64, fp8 types
const char* dtypeName(
    sscDataType_t type);  // "float", "half", "bfloat16", "int8", ... (nccl-tests names)
// The API's own name ("float32", "float16", "float8e4m3": sscFloat32 without "ssc"), for messages
// that compare calls; "an invalid datatype" for values outside sscDataType_t.
const char* dtypeApiName(int type);

// The four elementwise combiners. Avg and PreMulSum are Sum with a pre- or post-step
// (see ScalarOp in src/kernels/host/reduce.h), exactly as NCCL defines them.
enum class ReduceKind : uint8_t { kSum = 0, kProd = 1, kMax = 2, kMin = 3 };

// A scalar in the element type's own domain: integers keep an int64/uint64, floats a double.
struct Scalar {
  bool isInteger = false;
  int64_t i = 0;   // for signed and unsigned integer types (uint64 values stored bitwise)
  double f = 0.0;  // for floating-point types
};

}  // namespace ssc
