// SPDX-License-Identifier: MIT
// What one perf program contributes: which collective it measures and how to call it. Everything
// else (flags, sizes, timing, checking, output) is the shared driver's.
#pragma once

#include <cstddef>

#include "perf/common/coll_math.h"
#include "starscream/starscream.h"

namespace ssc::perf {

// Issues one call. `count` is CollCounts::paramCount; `op` is unused by collectives that do not
// reduce and `root` by those without a root.
using RunFn = sscResult_t (*)(const void* sendbuff, void* recvbuff, size_t count,
                              sscDataType_t type, sscRedOp_t op, int root, sscComm_t comm,
                              sscStream_t stream);

struct Collective {
  CollKind kind;
  RunFn run;
};

// The whole program (driver.cc): parses argv, runs every requested type, op, root and size,
// prints the nccl-tests table and returns the exit code (launch.h's kExit*).
int perfMain(int argc, char** argv, const Collective& collective);

}  // namespace ssc::perf
