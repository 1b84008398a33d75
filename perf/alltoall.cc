// SPDX-License-Identifier: MIT
// alltoall_perf: sscAllToAll; the size is the whole buffer (count = size / type / nranks to each
// peer); busbw = algbw * (n-1)/n. No in-place run: the API forbids overlapping buffers. Flags
// and output: docs/perf.md.
#include "perf/common/collective.h"

namespace {

sscResult_t run(const void* sendbuff, void* recvbuff, size_t count, sscDataType_t type,
                sscRedOp_t /*op*/, int /*root*/, sscComm_t comm, sscStream_t stream) {
  return sscAllToAll(sendbuff, recvbuff, count, type, comm, stream);
}

}  // namespace

int main(int argc, char** argv) {
  return ssc::perf::perfMain(argc, argv, {ssc::perf::CollKind::kAllToAll, run});
}
