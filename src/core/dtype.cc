#include "src/core/dtype.h"

namespace ssc {

size_t dtypeSize(sscDataType_t type) {
  switch (type) {
    case sscInt8: case sscUint8: case sscFloat8e4m3: case sscFloat8e5m2: return 1;
    case sscFloat16: case sscBfloat16: return 2;
    case sscInt32: case sscUint32: case sscFloat32: return 4;
    case sscInt64: case sscUint64: case sscFloat64: return 8;
    default: return 0;
  }
}

bool dtypeValid(sscDataType_t type) { return dtypeSize(type) != 0; }

bool dtypeIsFloat(sscDataType_t type) {
  switch (type) {
    case sscFloat16: case sscBfloat16: case sscFloat32: case sscFloat64: case sscFloat8e4m3:
    case sscFloat8e5m2: return true;
    default: return false;
  }
}

const char* dtypeName(sscDataType_t type) {
  switch (type) {
    case sscInt8: return "int8";
    case sscUint8: return "uint8";
    case sscInt32: return "int32";
    case sscUint32: return "uint32";
    case sscInt64: return "int64";
    case sscUint64: return "uint64";
    case sscFloat16: return "half";
    case sscFloat32: return "float";
    case sscFloat64: return "double";
    case sscBfloat16: return "bfloat16";
    case sscFloat8e4m3: return "f8e4m3";
    case sscFloat8e5m2: return "f8e5m2";
    default: return "unknown";  // never NULL: callers format it into messages
  }
}

const char* dtypeApiName(int type) {
  switch (type) {
    case sscInt8: return "int8";
    case sscUint8: return "uint8";
    case sscInt32: return "int32";
    case sscUint32: return "uint32";
    case sscInt64: return "int64";
    case sscUint64: return "uint64";
    case sscFloat16: return "float16";
    case sscFloat32: return "float32";
    case sscFloat64: return "float64";
    case sscBfloat16: return "bfloat16";
    case sscFloat8e4m3: return "float8e4m3";
    case sscFloat8e5m2: return "float8e5m2";
    default: return "an invalid datatype";
  }
}

}  // namespace ssc
