// SPDX-License-Identifier: MIT
// Out-of-line entry points for the narrow-float conversions declared in reduce.h. The
// implementations live in convert.h so that the reduction loops can inline them.
#include "src/kernels/host/convert.h"

#include "src/kernels/host/reduce.h"

namespace ssc {

float halfToFloat(uint16_t h) { return conv::halfToFloat(h); }
uint16_t floatToHalf(float f) { return conv::floatToHalf(f); }
float bf16ToFloat(uint16_t b) { return conv::bf16ToFloat(b); }
uint16_t floatToBf16(float f) { return conv::floatToBf16(f); }
float fp8e4m3ToFloat(uint8_t v) { return conv::fp8e4m3ToFloat(v); }
uint8_t floatToFp8e4m3(float f) { return conv::floatToFp8e4m3(f); }
float fp8e5m2ToFloat(uint8_t v) { return conv::fp8e5m2ToFloat(v); }
uint8_t floatToFp8e5m2(float f) { return conv::floatToFp8e5m2(f); }

}  // namespace ssc
