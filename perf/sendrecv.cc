// SPDX-License-Identifier: MIT
// sendrecv_perf: every rank sends to rank+1 and receives from rank-1, both in one group so that
// the ring of blocking pairs cannot deadlock; busbw = algbw. Flags and output: docs/perf.md.
#include "perf/common/collective.h"

namespace {

sscResult_t run(const void* sendbuff, void* recvbuff, size_t count, sscDataType_t type,
                sscRedOp_t /*op*/, int /*root*/, sscComm_t comm, sscStream_t stream) {
  int nranks = 0;
  int rank = 0;
  sscResult_t result = sscCommCount(comm, &nranks);
  if (result == sscSuccess) result = sscCommUserRank(comm, &rank);
  if (result != sscSuccess) return result;
  result = sscGroupStart();
  if (result != sscSuccess) return result;
  // Record both halves even if the first fails: the group must still be closed.
  const sscResult_t sent = sscSend(sendbuff, count, type, (rank + 1) % nranks, comm, stream);
  const sscResult_t received =
      sscRecv(recvbuff, count, type, (rank - 1 + nranks) % nranks, comm, stream);
  const sscResult_t ended = sscGroupEnd();
  if (sent != sscSuccess) return sent;
  if (received != sscSuccess) return received;
  return ended;
}

}  // namespace

int main(int argc, char** argv) {
  return ssc::perf::perfMain(argc, argv, {ssc::perf::CollKind::kSendRecv, run});
}
