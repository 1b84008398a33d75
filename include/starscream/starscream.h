/* SPDX-License-Identifier: MIT */
/*
 * Starscream: a partition-aware collective communication library for chiplet GPUs.
 *
 * The C API mirrors NCCL's so that code written for NCCL or RCCL ports by renaming the prefix
 * (ncclX -> sscX). Every call returns an sscResult_t; none throws, aborts or exits. When a call
 * fails, sscGetLastError() returns a message saying why.
 *
 * Streams: on the GPU backends an sscStream_t is a hipStream_t (AMD) or cudaStream_t (NVIDIA).
 * On the host backend (no GPU; used for tests and emulation) it is a handle from sscStreamCreate,
 * an ordered asynchronous queue served by a progress thread. Collectives only enqueue work:
 * results are ready after sscStreamSynchronize (or the runtime's own stream synchronize).
 * A NULL stream is valid everywhere: the runtime's default stream on a GPU backend, the
 * communicator's own queue on the host backend (sscStreamSynchronize(NULL) waits for it).
 */
#ifndef STARSCREAM_STARSCREAM_H_
#define STARSCREAM_STARSCREAM_H_

#include <stddef.h>
#include <stdint.h>

/* SSC_MAJOR, SSC_MINOR, SSC_PATCH, SSC_VERSION_STRING and SSC_VERSION_CODE (MAJOR*10000 +
   MINOR*100 + PATCH, as sscGetVersion returns it): generated from the build's project version
   (include/starscream/version.h.in), installed next to this header. */
#include "starscream/version.h"

/*
 * SSC_EXPORT marks the functions of the public API: the library is built with hidden
 * visibility, so only what is declared with it is exported from libstarscream.so. C linkage
 * comes from the extern "C" block below, so the macro is the same for C and C++ callers.
 */
#ifndef SSC_EXPORT
#if defined(__GNUC__) || defined(__clang__)
#define SSC_EXPORT __attribute__((visibility("default")))
#else
#define SSC_EXPORT
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Result codes. 0-7 have NCCL's values and meanings; sscTimeout is Starscream's own. */
typedef enum {
  sscSuccess = 0,              /* the call succeeded */
  sscUnhandledDeviceError = 1, /* a HIP/CUDA runtime call failed */
  sscSystemError = 2,          /* a system call failed (socket, shared memory, thread, ...) */
  sscInternalError = 3,        /* a bug in Starscream */
  sscInvalidArgument = 4,      /* a bad argument: null pointer, bad count, dtype, op, rank, ... */
  sscInvalidUsage = 5, /* a bad sequence of calls (group mismatch, use after destroy, ...) */
  sscRemoteError = 6,  /* a peer failed or sent something unexpected */
  sscInProgress = 7,   /* a non-blocking operation is still running */
  sscTimeout = 8,      /* a wait passed STARSCREAM_TIMEOUT: a peer is missing or hung */
  sscNumResults = 9
} sscResult_t;

/** Element types. fp8 types follow the OCP FP8 spec (e4m3fn: no infinities; e5m2: IEEE-like). */
typedef enum {
  sscInt8 = 0,
  sscChar = 0,
  sscUint8 = 1,
  sscInt32 = 2,
  sscInt = 2,
  sscUint32 = 3,
  sscInt64 = 4,
  sscUint64 = 5,
  sscFloat16 = 6,
  sscHalf = 6,
  sscFloat32 = 7,
  sscFloat = 7,
  sscFloat64 = 8,
  sscDouble = 8,
  sscBfloat16 = 9,
  sscFloat8e4m3 = 10,
  sscFloat8e5m2 = 11,
  sscNumTypes = 12
} sscDataType_t;

/** Reduction operations. Values >= sscNumOps are created by sscRedOpCreatePreMulSum. */
typedef enum {
  sscSum = 0,
  sscProd = 1,
  sscMax = 2,
  sscMin = 3,
  sscAvg = 4, /* sum divided by the rank count (integers: truncating division of the sum) */
  sscNumOps = 5,
  sscMaxRedOp = 0x7fffffff
} sscRedOp_t;

/** Where the scalar of a pre-multiplied sum lives. */
typedef enum {
  sscScalarDevice = 0,       /* device memory, read when the operation runs */
  sscScalarHostImmediate = 1 /* host memory, read when sscRedOpCreatePreMulSum is called */
} sscScalarResidence_t;

#define SSC_UNIQUE_ID_BYTES 128
/** Opaque bootstrap token: the root's address and a random cookie. Pass it to every rank. */
typedef struct {
  char internal[SSC_UNIQUE_ID_BYTES];
} sscUniqueId;

typedef struct sscComm* sscComm_t;
typedef void* sscStream_t;

#define SSC_SPLIT_NOCOLOR -1
#define SSC_CONFIG_UNDEF_INT (-2147483647 - 1)

/**
 * Communicator configuration. Initialise with SSC_CONFIG_INITIALIZER and set only the fields you
 * need; size/magic/version let later releases add fields without breaking old callers.
 */
typedef struct sscConfig_v1 {
  size_t size;          /* sizeof(sscConfig_t), set by the initializer */
  unsigned int magic;   /* SSC_CONFIG_MAGIC, set by the initializer */
  unsigned int version; /* SSC_VERSION_CODE, set by the initializer */
  int blocking;         /* 1 (default): init blocks; 0: returns sscInProgress, poll with
                           sscCommGetAsyncError until it reports sscSuccess */
} sscConfig_t;

#define SSC_CONFIG_MAGIC 0x5353434bu
#define SSC_CONFIG_INITIALIZER \
  { sizeof(sscConfig_t), SSC_CONFIG_MAGIC, SSC_VERSION_CODE, SSC_CONFIG_UNDEF_INT }

/* ---------------------------------------------------------------- version and errors */

/** Writes SSC_VERSION_CODE of the loaded library to *version. */
SSC_EXPORT sscResult_t sscGetVersion(int* version);

/** Returns a static string naming a result code; never NULL. */
SSC_EXPORT const char* sscGetErrorString(sscResult_t result);

/**
 * Returns the message of the last failed call made by this thread (or, with comm, the last
 * asynchronous failure recorded on comm when the thread has none). Never NULL; "" if none.
 */
SSC_EXPORT const char* sscGetLastError(sscComm_t comm);

/* ---------------------------------------------------------------- communicators */

/**
 * Creates the bootstrap token on the root rank. It starts a listener (loopback unless
 * STARSCREAM_SOCKET_IFNAME names an interface) that serves the ranks' sscCommInitRank calls.
 * Call once per communicator, on one process, and broadcast the token to every rank.
 */
SSC_EXPORT sscResult_t sscGetUniqueId(sscUniqueId* uniqueId);

/**
 * Creates a communicator of nranks ranks; this process is rank `rank`. Collective over all
 * ranks: blocks until every rank has joined (or STARSCREAM_TIMEOUT passes). A peer with another
 * token cookie or another nranks is rejected with sscInvalidUsage/sscRemoteError and a message.
 */
SSC_EXPORT sscResult_t sscCommInitRank(sscComm_t* comm, int nranks, sscUniqueId commId, int rank);

/** As sscCommInitRank with a configuration (NULL means defaults). See sscConfig_t.blocking. */
SSC_EXPORT sscResult_t sscCommInitRankConfig(sscComm_t* comm, int nranks, sscUniqueId commId,
                                             int rank, sscConfig_t* config);

/**
 * Creates ndev communicators in this process, one per rank (rank i uses device devlist[i], or
 * device i when devlist is NULL). Each gets its own progress on the host backend.
 */
SSC_EXPORT sscResult_t sscCommInitAll(sscComm_t* comms, int ndev, const int* devlist);

/**
 * Splits comm: ranks passing the same color form a new communicator, ordered by key (ties by
 * parent rank). color SSC_SPLIT_NOCOLOR gives *newcomm = NULL. Collective over comm.
 */
SSC_EXPORT sscResult_t sscCommSplit(sscComm_t comm, int color, int key, sscComm_t* newcomm,
                                    sscConfig_t* config);

/**
 * Waits for all work queued on comm to finish and flushes it; comm stays valid to destroy.
 * Where every rank is its own process, finalize is collective: it also meets every peer, so the
 * destroy after it frees nothing a peer's last operation still writes to.
 */
SSC_EXPORT sscResult_t sscCommFinalize(sscComm_t comm);

/** Frees comm's resources. Local: after sscCommFinalize it does not wait for peers. */
SSC_EXPORT sscResult_t sscCommDestroy(sscComm_t comm);

/**
 * Stops comm now: pending and future operations fail, waiters (in this or another thread) are
 * woken with an error, and the resources are freed. Safe to call from another thread.
 */
SSC_EXPORT sscResult_t sscCommAbort(sscComm_t comm);

/**
 * Writes comm's asynchronous state to *asyncError: sscSuccess, sscInProgress (non-blocking init
 * not finished), or the error that stopped an operation (e.g. sscTimeout, sscRemoteError).
 */
SSC_EXPORT sscResult_t sscCommGetAsyncError(sscComm_t comm, sscResult_t* asyncError);

/** Writes the number of ranks in comm to *count. */
SSC_EXPORT sscResult_t sscCommCount(sscComm_t comm, int* count);

/** Writes the caller's rank in comm to *rank. */
SSC_EXPORT sscResult_t sscCommUserRank(sscComm_t comm, int* rank);

/** Writes the device index comm uses to *device (-1 on the host backend). */
SSC_EXPORT sscResult_t sscCommDevice(sscComm_t comm, int* device);

/* ---------------------------------------------------------------- topology */

/** Where one rank sits in the communicator's two-tier topology (node > GPU > partition). */
typedef struct {
  int node;            /* node index, 0..nodes-1 */
  int gpu;             /* physical GPU index in the communicator, 0..gpus-1 */
  int partition;       /* the rank's partition on its GPU, in XCD ring order */
  int partitionsOnGpu; /* ranks of this communicator on the same physical GPU */
  int gpus;            /* physical GPUs in the communicator */
  int nodes;           /* nodes in the communicator */
} sscRankTopology_t;

/** Fills *info for `rank` of comm, from the graph every rank built identically at init. */
SSC_EXPORT sscResult_t sscCommGetRankTopology(sscComm_t comm, int rank, sscRankTopology_t* info);

/**
 * Writes the whole graph as JSON (the emulation file format, so it can be replayed with
 * STARSCREAM_TOPO_FILE). With buffer NULL, or *size too small, sets *size to the bytes needed
 * (including the terminating NUL): NULL succeeds, too small returns sscInvalidArgument.
 */
SSC_EXPORT sscResult_t sscCommGetTopologyJson(sscComm_t comm, char* buffer, size_t* size);

/* ---------------------------------------------------------------- reduction ops */

/**
 * Creates a reduction op computing sum(scalar * x_r) over ranks. scalar has type datatype and
 * lives on the host (read now) or device (read when each operation runs). Destroy with
 * sscRedOpDestroy before the communicator.
 */
SSC_EXPORT sscResult_t sscRedOpCreatePreMulSum(sscRedOp_t* op, void* scalar, sscDataType_t datatype,
                                               sscScalarResidence_t residence, sscComm_t comm);

/** Destroys an op made by sscRedOpCreatePreMulSum on comm. */
SSC_EXPORT sscResult_t sscRedOpDestroy(sscRedOp_t op, sscComm_t comm);

/* ---------------------------------------------------------------- collectives */

/** recvbuff[i] = op over ranks of sendbuff[i], i < count, on every rank. In place if equal. */
SSC_EXPORT sscResult_t sscAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                    sscDataType_t datatype, sscRedOp_t op, sscComm_t comm,
                                    sscStream_t stream);

/**
 * Rank r gets recvbuff[i] = op over ranks of sendbuff[r * recvcount + i], i < recvcount.
 * sendbuff holds nranks * recvcount elements. In place if recvbuff == sendbuff + r * recvcount.
 */
SSC_EXPORT sscResult_t sscReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                        sscDataType_t datatype, sscRedOp_t op, sscComm_t comm,
                                        sscStream_t stream);

/**
 * recvbuff[r * sendcount + i] = sendbuff of rank r [i] on every rank. In place if
 * sendbuff == recvbuff + rank * sendcount.
 */
SSC_EXPORT sscResult_t sscAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                    sscDataType_t datatype, sscComm_t comm, sscStream_t stream);

/** Copies root's sendbuff to every rank's recvbuff (count elements). */
SSC_EXPORT sscResult_t sscBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                    sscDataType_t datatype, int root, sscComm_t comm,
                                    sscStream_t stream);

/** Root's recvbuff[i] = op over ranks of sendbuff[i]. recvbuff is ignored on other ranks. */
SSC_EXPORT sscResult_t sscReduce(const void* sendbuff, void* recvbuff, size_t count,
                                 sscDataType_t datatype, sscRedOp_t op, int root, sscComm_t comm,
                                 sscStream_t stream);

/**
 * Each rank sends count elements to every rank: recvbuff[p * count + i] of rank r =
 * sendbuff[r * count + i] of rank p. Buffers hold nranks * count elements and must not overlap.
 */
SSC_EXPORT sscResult_t sscAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                                   sscDataType_t datatype, sscComm_t comm, sscStream_t stream);

/** Sends count elements to peer, which must post a matching sscRecv. Pair them in a group. */
SSC_EXPORT sscResult_t sscSend(const void* sendbuff, size_t count, sscDataType_t datatype, int peer,
                               sscComm_t comm, sscStream_t stream);

/** Receives count elements from peer's matching sscSend. */
SSC_EXPORT sscResult_t sscRecv(void* recvbuff, size_t count, sscDataType_t datatype, int peer,
                               sscComm_t comm, sscStream_t stream);

/**
 * Starts a group: calls until the matching sscGroupEnd are only recorded, then launched together
 * (so matching send/recv pairs cannot deadlock). Groups nest; the outermost end launches.
 */
SSC_EXPORT sscResult_t sscGroupStart(void);

/** Ends a group; the outermost end validates and launches everything recorded since start. */
SSC_EXPORT sscResult_t sscGroupEnd(void);

/* ---------------------------------------------------------------- memory */

/**
 * Allocates size bytes of device memory suitable for zero-copy collectives (host memory on the
 * host backend). size 0 gives *ptr = NULL.
 */
SSC_EXPORT sscResult_t sscMemAlloc(void** ptr, size_t size);

/** Frees memory from sscMemAlloc. NULL is a no-op. */
SSC_EXPORT sscResult_t sscMemFree(void* ptr);

/**
 * Registers [buff, buff+size) with comm. Collective: every rank registers its own buffer, in
 * the same order, so the i-th registration names the same logical buffer on every rank
 * (symmetric memory, like ncclCommWindowRegister). Buffers from sscMemAlloc are then mapped
 * into every peer, and collectives whose buffers lie in registrations at the same offsets on
 * every rank run zero-copy (ranks read and write each other's buffers directly). Other buffers
 * are accepted and recorded. *handle is passed to sscCommDeregister. Results never depend on
 * registration; ranks that use different offsets get sscInvalidUsage instead of wrong data.
 */
SSC_EXPORT sscResult_t sscCommRegister(sscComm_t comm, void* buff, size_t size, void** handle);

/** Releases a registration made by sscCommRegister (local; waits for queued work using it). */
SSC_EXPORT sscResult_t sscCommDeregister(sscComm_t comm, void* handle);

/* ---------------------------------------------------------------- streams */

/**
 * Creates a stream for the process's default backend (STARSCREAM_BACKEND; a GPU stream when a
 * GPU backend is active, else a host-backend queue).
 */
SSC_EXPORT sscResult_t sscStreamCreate(sscStream_t* stream);

/**
 * Blocks until all work queued on stream is done; returns the first error it hit (reported
 * once: the next call returns only newer errors), with its message in sscGetLastError(NULL).
 * On the host backend, stream NULL waits for the work of every stream and returns the first
 * error any of them hit; it consumes only the errors of work queued on NULL, so a stream from
 * sscStreamCreate still reports its own error to its own sscStreamSynchronize.
 */
SSC_EXPORT sscResult_t sscStreamSynchronize(sscStream_t stream);

/** Waits for stream's work, then destroys it. */
SSC_EXPORT sscResult_t sscStreamDestroy(sscStream_t stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* STARSCREAM_STARSCREAM_H_ */
