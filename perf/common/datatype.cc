// SPDX-License-Identifier: MIT
#include "perf/common/datatype.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

namespace ssc::perf {
namespace {

constexpr std::array<PerfOp, 6> kReduceOps = {PerfOp::kSum, PerfOp::kProd, PerfOp::kMax,
                                              PerfOp::kMin, PerfOp::kAvg,  PerfOp::kMulSum};

constexpr std::array<sscDataType_t, sscNumTypes> kTypes = {
    sscInt8,    sscUint8,   sscInt32,   sscUint32,   sscInt64,      sscUint64,
    sscFloat16, sscFloat32, sscFloat64, sscBfloat16, sscFloat8e4m3, sscFloat8e5m2};

struct TypeAlias {
  const char* name;
  sscDataType_t type;
};
// The first entry for each type is its nccl-tests name, which typeName() returns.
constexpr TypeAlias kTypeNames[] = {
    {"int8", sscInt8},          {"uint8", sscUint8},       {"int32", sscInt32},
    {"uint32", sscUint32},      {"int64", sscInt64},       {"uint64", sscUint64},
    {"half", sscFloat16},       {"float", sscFloat32},     {"double", sscFloat64},
    {"bfloat16", sscBfloat16},  {"f8e4m3", sscFloat8e4m3}, {"f8e5m2", sscFloat8e5m2},
    {"char", sscInt8},          {"int", sscInt32},         {"fp16", sscFloat16},
    {"float16", sscFloat16},    {"fp32", sscFloat32},      {"float32", sscFloat32},
    {"fp64", sscFloat64},       {"float64", sscFloat64},   {"bf16", sscBfloat16},
    {"fp8e4m3", sscFloat8e4m3}, {"e4m3", sscFloat8e4m3},   {"fp8e5m2", sscFloat8e5m2},
    {"e5m2", sscFloat8e5m2},
};

// A binary floating-point format narrower than float. `finiteOnly` is OCP e4m3fn: no
// infinities, and the all-ones exponent still holds finite values except the single NaN code.
struct MiniFloat {
  int expBits;
  int mantBits;
  int bias;
  bool finiteOnly;
  uint32_t nanBits;
};
constexpr MiniFloat kHalf = {5, 10, 15, false, 0x7E00};
constexpr MiniFloat kBf16 = {8, 7, 127, false, 0x7FC0};
constexpr MiniFloat kE4m3 = {4, 3, 7, true, 0x7F};
constexpr MiniFloat kE5m2 = {5, 2, 15, false, 0x7E};

const MiniFloat* miniFloatOf(sscDataType_t type) {
  switch (type) {
    case sscFloat16: return &kHalf;
    case sscBfloat16: return &kBf16;
    case sscFloat8e4m3: return &kE4m3;
    case sscFloat8e5m2: return &kE5m2;
    default: return nullptr;
  }
}

uint32_t expMask(const MiniFloat& f) { return (1u << f.expBits) - 1; }
uint32_t mantMask(const MiniFloat& f) { return (1u << f.mantBits) - 1; }
uint32_t signBit(const MiniFloat& f) { return 1u << (f.expBits + f.mantBits); }
// Largest finite magnitude as bits: e4m3fn gives up only the all-ones code (0x7E = 448).
uint32_t maxFiniteBits(const MiniFloat& f) {
  if (f.finiteOnly) return (expMask(f) << f.mantBits) | (mantMask(f) - 1);
  return ((expMask(f) - 1) << f.mantBits) | mantMask(f);
}

double decodeMini(const MiniFloat& f, uint32_t bits) {
  const bool negative = (bits & signBit(f)) != 0;
  const uint32_t field = (bits >> f.mantBits) & expMask(f);
  const uint32_t mant = bits & mantMask(f);
  double magnitude;
  if (f.finiteOnly && field == expMask(f) && mant == mantMask(f)) {
    magnitude = std::numeric_limits<double>::quiet_NaN();
  } else if (!f.finiteOnly && field == expMask(f)) {
    magnitude =
        mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (field == 0) {
    magnitude = std::ldexp(static_cast<double>(mant), 1 - f.bias - f.mantBits);
  } else {
    magnitude = std::ldexp(static_cast<double>(mant | (1u << f.mantBits)),
                           static_cast<int>(field) - f.bias - f.mantBits);
  }
  return negative ? -magnitude : magnitude;
}

uint32_t encodeMini(const MiniFloat& f, double v) {
  if (std::isnan(v)) return f.nanBits;
  const uint32_t sign = std::signbit(v) ? signBit(f) : 0;
  const double a = std::fabs(v);
  const uint32_t overflow = f.finiteOnly ? maxFiniteBits(f) : (expMask(f) << f.mantBits);
  if (std::isinf(a)) return sign | overflow;
  if (a == 0) return sign;
  // a = m * 2^(E - mantBits) with m rounded to mantBits+1 bits. Below the normal range the
  // quantum stays that of the smallest normal binade, which is exactly the subnormal spacing.
  const int minExp = 1 - f.bias;
  int e2 = 0;
  std::frexp(a, &e2);
  const int exponent = std::max(e2 - 1, minExp);
  const double m = std::nearbyint(std::ldexp(a, f.mantBits - exponent));  // ties to even
  // (exponent - minExp) << mantBits, plus m, is the encoding for normal and subnormal values
  // alike, and a mantissa that rounds up to 2^(mantBits+1) carries into the exponent field.
  const double bits = std::ldexp(static_cast<double>(exponent - minExp), f.mantBits) + m;
  if (bits > static_cast<double>(maxFiniteBits(f))) return sign | overflow;
  return sign | static_cast<uint32_t>(bits);
}

template <typename T>
T loadAs(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T>
void storeAs(void* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

uint32_t loadMiniBits(sscDataType_t type, const void* p) {
  return typeSize(type) == 1 ? loadAs<uint8_t>(p) : loadAs<uint16_t>(p);
}

void storeMiniBits(sscDataType_t type, void* p, uint32_t bits) {
  if (typeSize(type) == 1) {
    storeAs<uint8_t>(p, static_cast<uint8_t>(bits));
  } else {
    storeAs<uint16_t>(p, static_cast<uint16_t>(bits));
  }
}

// Rounds to nearest and clamps into T's range (NaN becomes 0).
template <typename T>
T saturate(double v) {
  if (std::isnan(v)) return 0;
  const double r = std::nearbyint(v);
  if (r <= static_cast<double>(std::numeric_limits<T>::min())) {
    return std::numeric_limits<T>::min();
  }
  // 2^64 and 2^63 are exact doubles; anything at or past them saturates.
  if (r >= static_cast<double>(std::numeric_limits<T>::max())) {
    return std::numeric_limits<T>::max();
  }
  return static_cast<T>(r);
}

}  // namespace

std::span<const PerfOp> allReduceOps() { return kReduceOps; }

const char* opName(PerfOp op) {
  switch (op) {
    case PerfOp::kSum: return "sum";
    case PerfOp::kProd: return "prod";
    case PerfOp::kMax: return "max";
    case PerfOp::kMin: return "min";
    case PerfOp::kAvg: return "avg";
    case PerfOp::kMulSum: return "mulsum";
    case PerfOp::kNone: return "none";
  }
  return "?";
}

std::optional<PerfOp> parseOp(std::string_view name) {
  for (PerfOp op : kReduceOps) {
    if (name == opName(op)) return op;
  }
  return std::nullopt;
}

sscRedOp_t toSscOp(PerfOp op) {
  switch (op) {
    case PerfOp::kSum: return sscSum;
    case PerfOp::kProd: return sscProd;
    case PerfOp::kMax: return sscMax;
    case PerfOp::kMin: return sscMin;
    case PerfOp::kAvg: return sscAvg;
    default: return sscSum;  // kMulSum makes its own op; kNone passes an unused one
  }
}

std::span<const sscDataType_t> allTypes() { return kTypes; }

const char* typeName(sscDataType_t type) {
  for (const auto& alias : kTypeNames) {
    if (alias.type == type) return alias.name;
  }
  return "?";
}

std::optional<sscDataType_t> parseType(std::string_view name) {
  for (const auto& alias : kTypeNames) {
    if (name == alias.name) return alias.type;
  }
  return std::nullopt;
}

size_t typeSize(sscDataType_t type) {
  switch (type) {
    case sscInt8:
    case sscUint8:
    case sscFloat8e4m3:
    case sscFloat8e5m2: return 1;
    case sscFloat16:
    case sscBfloat16: return 2;
    case sscInt32:
    case sscUint32:
    case sscFloat32: return 4;
    case sscInt64:
    case sscUint64:
    case sscFloat64: return 8;
    default: return 0;
  }
}

bool isFloatType(sscDataType_t type) {
  return type == sscFloat16 || type == sscFloat32 || type == sscFloat64 || type == sscBfloat16 ||
         type == sscFloat8e4m3 || type == sscFloat8e5m2;
}

uint64_t exactIntegerLimit(sscDataType_t type) {
  constexpr uint64_t kDoubleExact = uint64_t{1} << 53;
  switch (type) {
    case sscInt8: return 127;
    case sscUint8: return 255;
    case sscInt32: return 0x7fffffffu;
    case sscUint32: return 0xffffffffu;
    case sscFloat16: return uint64_t{1} << 11;
    case sscFloat32: return uint64_t{1} << 24;
    case sscBfloat16: return uint64_t{1} << 8;
    case sscFloat8e4m3: return uint64_t{1} << 4;
    case sscFloat8e5m2: return uint64_t{1} << 3;
    default: return kDoubleExact;  // int64, uint64, double
  }
}

int maxPowerOfTwo(sscDataType_t type) {
  switch (type) {
    case sscInt8: return 6;
    case sscUint8: return 7;
    case sscInt32: return 30;
    case sscUint32: return 31;
    case sscFloat16: return 15;     // 65504 is the largest half
    case sscFloat8e4m3: return 8;   // 448 is the largest e4m3
    case sscFloat8e5m2: return 15;  // 57344 is the largest e5m2
    default: return 52;
  }
}

double unitRoundoff(sscDataType_t type) {
  switch (type) {
    case sscFloat16: return std::ldexp(1.0, -11);
    case sscFloat32: return std::ldexp(1.0, -24);
    case sscFloat64: return std::ldexp(1.0, -53);
    case sscBfloat16: return std::ldexp(1.0, -8);
    case sscFloat8e4m3: return std::ldexp(1.0, -4);
    case sscFloat8e5m2: return std::ldexp(1.0, -3);
    default: return 0.0;
  }
}

double minSubnormal(sscDataType_t type) {
  switch (type) {
    case sscFloat32: return std::numeric_limits<float>::denorm_min();
    case sscFloat64: return std::numeric_limits<double>::denorm_min();
    default: break;
  }
  const MiniFloat* f = miniFloatOf(type);
  return f ? std::ldexp(1.0, 1 - f->bias - f->mantBits) : 0.0;
}

double decode(sscDataType_t type, const void* element) {
  switch (type) {
    case sscInt8: return loadAs<int8_t>(element);
    case sscUint8: return loadAs<uint8_t>(element);
    case sscInt32: return loadAs<int32_t>(element);
    case sscUint32: return loadAs<uint32_t>(element);
    case sscInt64: return static_cast<double>(loadAs<int64_t>(element));
    case sscUint64: return static_cast<double>(loadAs<uint64_t>(element));
    case sscFloat32: return loadAs<float>(element);
    case sscFloat64: return loadAs<double>(element);
    default: break;
  }
  const MiniFloat* f = miniFloatOf(type);
  return f ? decodeMini(*f, loadMiniBits(type, element)) : std::numeric_limits<double>::quiet_NaN();
}

void encode(sscDataType_t type, double value, void* element) {
  switch (type) {
    case sscInt8: storeAs(element, saturate<int8_t>(value)); return;
    case sscUint8: storeAs(element, saturate<uint8_t>(value)); return;
    case sscInt32: storeAs(element, saturate<int32_t>(value)); return;
    case sscUint32: storeAs(element, saturate<uint32_t>(value)); return;
    case sscInt64: storeAs(element, saturate<int64_t>(value)); return;
    case sscUint64: storeAs(element, saturate<uint64_t>(value)); return;
    case sscFloat32: storeAs(element, static_cast<float>(value)); return;
    case sscFloat64: storeAs(element, value); return;
    default: break;
  }
  if (const MiniFloat* f = miniFloatOf(type)) storeMiniBits(type, element, encodeMini(*f, value));
}

bool isFinite(sscDataType_t type, const void* element) {
  // From the bits: this runs once per element when copy patterns are generated and compared.
  switch (type) {
    case sscFloat32: return std::isfinite(loadAs<float>(element));
    case sscFloat64: return std::isfinite(loadAs<double>(element));
    default: break;
  }
  const MiniFloat* f = miniFloatOf(type);
  if (f == nullptr) return true;  // integers
  const uint32_t bits = loadMiniBits(type, element);
  const bool topExponent = ((bits >> f->mantBits) & expMask(*f)) == expMask(*f);
  return !topExponent || (f->finiteOnly && (bits & mantMask(*f)) != mantMask(*f));
}

void makeFinite(sscDataType_t type, void* element) {
  if (isFinite(type, element)) return;
  // The most significant exponent bit sits just below the sign bit in every float format.
  const size_t bytes = typeSize(type);
  auto* top = static_cast<unsigned char*>(element) + bytes - 1;  // little-endian: last byte
  *top = static_cast<unsigned char>(*top & ~0x40u);
}

}  // namespace ssc::perf
