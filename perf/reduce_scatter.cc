// SPDX-License-Identifier: MIT
// reduce_scatter_perf: sscReduceScatter; the size is the whole input (count = size / type / nranks
// per rank); busbw = algbw * (n-1)/n. Flags and output: docs/perf.md.
#include "perf/common/collective.h"

namespace {

sscResult_t run(const void* sendbuff, void* recvbuff, size_t count, sscDataType_t type,
                sscRedOp_t op, int /*root*/, sscComm_t comm, sscStream_t stream) {
  return sscReduceScatter(sendbuff, recvbuff, count, type, op, comm, stream);
}

}  // namespace

int main(int argc, char** argv) {
  return ssc::perf::perfMain(argc, argv, {ssc::perf::CollKind::kReduceScatter, run});
}
