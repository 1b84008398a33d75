// SPDX-License-Identifier: MIT
#include "src/core/dtype.h"

#include <iterator>

namespace ssc {

namespace {

// One row per sscDataType_t value, in enum order: what every question about a type reads.
struct TypeInfo {
  sscDataType_t type;
  size_t bytes;
  bool isFloat;
  const char* name;     // short, as nccl-tests and the perf tools print it
  const char* apiName;  // as the API spells it (sscFloat16 -> "float16")
};

constexpr TypeInfo kTypes[] = {
    {sscInt8, 1, false, "int8", "int8"},
    {sscUint8, 1, false, "uint8", "uint8"},
    {sscInt32, 4, false, "int32", "int32"},
    {sscUint32, 4, false, "uint32", "uint32"},
    {sscInt64, 8, false, "int64", "int64"},
    {sscUint64, 8, false, "uint64", "uint64"},
    {sscFloat16, 2, true, "half", "float16"},
    {sscFloat32, 4, true, "float", "float32"},
    {sscFloat64, 8, true, "double", "float64"},
    {sscBfloat16, 2, true, "bfloat16", "bfloat16"},
    {sscFloat8e4m3, 1, true, "f8e4m3", "float8e4m3"},
    {sscFloat8e5m2, 1, true, "f8e5m2", "float8e5m2"},
};

constexpr bool rowsInEnumOrder() {
  for (size_t i = 0; i < std::size(kTypes); ++i)
    if (static_cast<size_t>(kTypes[i].type) != i) return false;
  return std::size(kTypes) == static_cast<size_t>(sscNumTypes);
}
static_assert(rowsInEnumOrder(), "kTypes must list every sscDataType_t in enum order");

const TypeInfo* info(int type) {
  return type >= 0 && type < static_cast<int>(std::size(kTypes)) ? &kTypes[type] : nullptr;
}

}  // namespace

size_t dtypeSize(sscDataType_t type) {
  const TypeInfo* t = info(static_cast<int>(type));
  return t != nullptr ? t->bytes : 0;
}

bool dtypeValid(sscDataType_t type) { return dtypeSize(type) != 0; }

bool dtypeIsFloat(sscDataType_t type) {
  const TypeInfo* t = info(static_cast<int>(type));
  return t != nullptr && t->isFloat;
}

const char* dtypeName(sscDataType_t type) {
  const TypeInfo* t = info(static_cast<int>(type));
  return t != nullptr ? t->name : "unknown";  // never NULL: callers format it into messages
}

const char* dtypeApiName(int type) {
  const TypeInfo* t = info(type);
  return t != nullptr ? t->apiName : "an invalid datatype";
}

}  // namespace ssc
