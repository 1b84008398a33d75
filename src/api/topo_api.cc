// SPDX-License-Identifier: MIT
// Topology queries: the graph the algorithms use, as the application may want to see it (to
// place work per physical GPU, say).
#include <cstring>

#include "src/api/api.h"

using namespace ssc;

SSC_API sscResult_t sscCommGetRankTopology(sscComm_t comm, int rank, sscRankTopology_t* info) {
  return guarded("sscCommGetRankTopology", [&]() -> sscResult_t {
    const char* fn = "sscCommGetRankTopology";
    CommUse use(comm);
    SSC_CHECK(checkComm(fn, comm, true));
    if (info == nullptr) return fail(sscInvalidArgument, "{}: info is NULL", fn);
    SSC_CHECK(checkRank(fn, "rank", rank, comm->nranks));
    const RankPlacement& p = comm->topo.ranks[rank];
    info->node = p.node;
    info->gpu = p.gpu;
    info->partition = p.partition;
    info->partitionsOnGpu = static_cast<int>(comm->topo.gpus[p.gpu].ranks.size());
    info->gpus = static_cast<int>(comm->topo.gpus.size());
    info->nodes = comm->topo.nnodes;
    return sscSuccess;
  });
}

SSC_API sscResult_t sscCommGetTopologyJson(sscComm_t comm, char* buffer, size_t* size) {
  return guarded("sscCommGetTopologyJson", [&]() -> sscResult_t {
    const char* fn = "sscCommGetTopologyJson";
    CommUse use(comm);
    SSC_CHECK(checkComm(fn, comm, true));
    if (size == nullptr) return fail(sscInvalidArgument, "{}: size is NULL", fn);
    std::string json = topologyToJson(comm->topo);
    const size_t need = json.size() + 1;
    if (buffer == nullptr) {
      *size = need;
      return sscSuccess;
    }
    if (*size < need) {
      size_t given = *size;
      *size = need;
      return fail(sscInvalidArgument, "{}: buffer of {} bytes is too small ({} needed)", fn, given,
                  need);
    }
    std::memcpy(buffer, json.c_str(), need);
    *size = need;
    return sscSuccess;
  });
}
