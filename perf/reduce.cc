// SPDX-License-Identifier: MIT
// reduce_perf: sscReduce to -r (every rank in turn with -r -1); busbw = algbw. Flags and output:
// docs/perf.md.
#include "perf/common/collective.h"

namespace {

sscResult_t run(const void* sendbuff, void* recvbuff, size_t count, sscDataType_t type,
                sscRedOp_t op, int root, sscComm_t comm, sscStream_t stream) {
  return sscReduce(sendbuff, recvbuff, count, type, op, root, comm, stream);
}

}  // namespace

int main(int argc, char** argv) {
  return ssc::perf::perfMain(argc, argv, {ssc::perf::CollKind::kReduce, run});
}
