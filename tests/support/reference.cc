// SPDX-License-Identifier: MIT
#include "tests/support/reference.h"

#include <cmath>

namespace ssc::test {

namespace {
bool isUnsigned(sscDataType_t t) { return t == sscUint8 || t == sscUint32 || t == sscUint64; }
bool isFloat(sscDataType_t t) {
  return t == sscFloat16 || t == sscFloat32 || t == sscFloat64 || t == sscBfloat16 ||
         t == sscFloat8e4m3 || t == sscFloat8e5m2;
}
double epsilon(sscDataType_t t) {
  switch (t) {
    case sscFloat16: return std::ldexp(1.0, -10);
    case sscBfloat16: return std::ldexp(1.0, -7);
    case sscFloat32: return std::ldexp(1.0, -23);
    case sscFloat64: return std::ldexp(1.0, -52);
    case sscFloat8e4m3: return std::ldexp(1.0, -3);
    case sscFloat8e5m2: return std::ldexp(1.0, -2);
    default: return 0.0;
  }
}
}  // namespace

int64_t inputValue(int r, uint64_t i, sscDataType_t type, sscRedOp_t op) {
  if (op == sscProd) return ((static_cast<uint64_t>(r) + i) % 4 == 0) ? 2 : 1;
  int64_t v = static_cast<int64_t>((static_cast<uint64_t>(r) * 3 + i * 7) % 5);
  return isUnsigned(type) ? v : v - 2;
}

int64_t preMulScalar(int r) { return 1 + r % 2; }

double reduceReference(int n, uint64_t i, sscDataType_t type, sscRedOp_t op) {
  if (op == sscNumOps) {
    int64_t acc = 0;
    for (int r = 0; r < n; ++r) acc += preMulScalar(r) * inputValue(r, i, type, op);
    return static_cast<double>(acc);
  }
  int64_t acc = inputValue(0, i, type, op);
  for (int r = 1; r < n; ++r) {
    int64_t v = inputValue(r, i, type, op);
    switch (op) {
      case sscProd: acc *= v; break;
      case sscMax: acc = std::max(acc, v); break;
      case sscMin: acc = std::min(acc, v); break;
      default: acc += v; break;
    }
  }
  if (op == sscAvg)
    return isFloat(type) ? static_cast<double>(acc) / n : static_cast<double>(acc / n);
  return static_cast<double>(acc);
}

bool closeEnough(double got, double want, sscDataType_t type, sscRedOp_t op, int n) {
  if (!isFloat(type) || op == sscMax || op == sscMin || op == sscProd) return got == want;
  // Each of the n-1 additions (and the 1/n or scalar pre-multiplication) may round by half an
  // ulp of a partial sum bounded by the sum of magnitudes (at most 2 per rank, times 2).
  double bound = 4.0 * n;
  return std::fabs(got - want) <= epsilon(type) * bound * n + 1e-12;
}

const char* opName(sscRedOp_t op) {
  switch (op) {
    case sscSum: return "sum";
    case sscProd: return "prod";
    case sscMax: return "max";
    case sscMin: return "min";
    case sscAvg: return "avg";
    default: return "premulsum";
  }
}

}  // namespace ssc::test
