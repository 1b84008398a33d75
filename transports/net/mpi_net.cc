// SPDX-License-Identifier: MIT
// libstarscream-net-mpi.so: the network plugin over MPI (transports/net/net_plugin.h).
//
// Host-staged: the core hands it host memory (the host backend's FIFOs, or the pinned staging
// FIFOs GPU kernels fill). MPI is used as the application launched it: when the application
// initialised MPI it must have asked for MPI_THREAD_MULTIPLE, because the core's proxy thread
// calls MPI while the application's threads may too; when nobody did, the plugin initialises MPI
// itself and finalises it at exit (Open MPI treats a process that exits without MPI_Finalize as
// failed).
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

#include "transports/net/net_plugin.h"

namespace {

struct Request {
  MPI_Request handle = MPI_REQUEST_NULL;
  bool isRecv = false;
};

int failWith(sscNetError_t* err, const char* what, int code) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  if (code != MPI_SUCCESS) MPI_Error_string(code, text, &len);
  std::snprintf(err->text, sizeof(err->text), "%s%s%s", what, code != MPI_SUCCESS ? ": " : "",
                text);
  return 1;
}

std::once_flag g_initOnce;
int g_initCode = 0;
sscNetError_t g_initError;

void finalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void initOnce() {
  int initialized = 0, finalized = 0, provided = MPI_THREAD_SINGLE;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) {
    g_initCode = failWith(&g_initError,
                          "MPI was already finalized: create communicators that span "
                          "nodes before MPI_Finalize",
                          MPI_SUCCESS);
    return;
  }
  if (!initialized) {
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) {
      g_initCode = failWith(&g_initError, "MPI_Init_thread failed", rc);
      return;
    }
    std::atexit(finalizeAtExit);
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    g_initCode = failWith(&g_initError,
                          initialized ? "the application initialised MPI without "
                                        "MPI_THREAD_MULTIPLE; Starscream's network proxy calls MPI "
                                        "from its own thread: use MPI_Init_thread(..., "
                                        "MPI_THREAD_MULTIPLE, ...)"
                                      : "this MPI does not provide MPI_THREAD_MULTIPLE",
                          MPI_SUCCESS);
    return;
  }
  // Errors come back as codes (turned into sscSystemError with a message), never abort the job.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

int init(int64_t* jobRank, int64_t* jobSize, sscNetError_t* err) {
  std::call_once(g_initOnce, initOnce);
  if (g_initCode != 0) {
    *err = g_initError;
    return g_initCode;
  }
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  *jobRank = rank;
  *jobSize = size;
  return 0;
}

int commCreate(const int64_t* jobRanks, int n, int tag, void** comm, sscNetError_t* err) {
  std::vector<int> ranks(jobRanks, jobRanks + n);
  MPI_Group world = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
  int rc = MPI_Comm_group(MPI_COMM_WORLD, &world);
  if (rc == MPI_SUCCESS) rc = MPI_Group_incl(world, n, ranks.data(), &group);
  MPI_Comm out = MPI_COMM_NULL;
  // Collective over the group only (MPI-3), so sub-communicators need no help from other ranks.
  if (rc == MPI_SUCCESS) rc = MPI_Comm_create_group(MPI_COMM_WORLD, group, tag, &out);
  if (group != MPI_GROUP_NULL) MPI_Group_free(&group);
  if (world != MPI_GROUP_NULL) MPI_Group_free(&world);
  if (rc != MPI_SUCCESS) return failWith(err, "MPI_Comm_create_group failed", rc);
  MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN);
  *comm = new MPI_Comm(out);
  return 0;
}

int post(bool recv, void* comm, int peer, int tag, void* data, size_t bytes, void** request,
         sscNetError_t* err) {
  if (bytes > 0x7fffffffu) return failWith(err, "a network message over 2 GiB", MPI_SUCCESS);
  auto* r = new (std::nothrow) Request;
  if (r == nullptr) return failWith(err, "out of memory for an MPI request", MPI_SUCCESS);
  r->isRecv = recv;
  const MPI_Comm c = *static_cast<MPI_Comm*>(comm);
  const int count = static_cast<int>(bytes);
  const int rc = recv ? MPI_Irecv(data, count, MPI_BYTE, peer, tag, c, &r->handle)
                      : MPI_Isend(data, count, MPI_BYTE, peer, tag, c, &r->handle);
  if (rc != MPI_SUCCESS) {
    delete r;
    return failWith(err, recv ? "MPI_Irecv failed" : "MPI_Isend failed", rc);
  }
  *request = r;
  return 0;
}

int isend(void* comm, int peer, int tag, const void* data, size_t bytes, void** request,
          sscNetError_t* err) {
  return post(false, comm, peer, tag, const_cast<void*>(data), bytes, request, err);
}

int irecv(void* comm, int peer, int tag, void* data, size_t bytes, void** request,
          sscNetError_t* err) {
  return post(true, comm, peer, tag, data, bytes, request, err);
}

int test(void* request, int* done, size_t* bytes, sscNetError_t* err) {
  auto* r = static_cast<Request*>(request);
  MPI_Status status;
  int flag = 0;
  const int rc = MPI_Test(&r->handle, &flag, &status);
  if (rc != MPI_SUCCESS) return failWith(err, "MPI_Test failed", rc);
  *done = flag;
  if (!flag) return 0;
  int count = 0;
  if (r->isRecv) MPI_Get_count(&status, MPI_BYTE, &count);
  *bytes = static_cast<size_t>(count);
  delete r;
  return 0;
}

int cancel(void* request, sscNetError_t* err) {
  auto* r = static_cast<Request*>(request);
  int rc = MPI_SUCCESS;
  if (r->isRecv) {
    rc = MPI_Cancel(&r->handle);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&r->handle, MPI_STATUS_IGNORE);
  } else {
    rc = MPI_Request_free(&r->handle);
  }
  delete r;
  return rc == MPI_SUCCESS ? 0 : failWith(err, "abandoning an MPI request failed", rc);
}

int commDestroy(void* comm, sscNetError_t* err) {
  auto* c = static_cast<MPI_Comm*>(comm);
  const int rc = MPI_Comm_free(c);
  delete c;
  return rc == MPI_SUCCESS ? 0 : failWith(err, "MPI_Comm_free failed", rc);
}

const sscNetV1 kPlugin = {"mpi", init, commCreate, isend, irecv, test, cancel, commDestroy};

}  // namespace

extern "C" __attribute__((visibility("default"))) const sscNetV1* sscNetPluginV1(void) {
  return &kPlugin;
}
