// SPDX-License-Identifier: MIT
// The installed headers from C++: the declarations keep C linkage (the headers' extern "C"
// block) with the export macro, so a C++ program links against the C symbols.
#include <starscream/starscream.h>
#include <starscream/starscream_ops.h>

#include <cstdint>
#include <cstdio>

int main() {
  int version = 0;
  if (sscGetVersion(&version) != sscSuccess || version != SSC_VERSION_CODE) {
    std::fprintf(stderr, "version mismatch: %d vs %d\n", version, SSC_VERSION_CODE);
    return 1;
  }
  int64_t first = -1, rows = -1;
  if (sscGemmRowShard(10, 4, 1, &first, &rows) != sscSuccess || rows <= 0) {
    std::fprintf(stderr, "sscGemmRowShard failed: %s\n", sscGetLastError(nullptr));
    return 1;
  }
  std::printf("consumer ok (C++): version %s\n", SSC_VERSION_STRING);
  return 0;
}
