/* SPDX-License-Identifier: MIT */
/*
 * An unmodified NCCL program: built against the real nccl.h and linked to the real libnccl, it
 * checks the result of every collective on every rank. ctest runs it under mpirun on the host
 * backend with LD_PRELOAD=libstarscream-nccl.so (and with build/lib/nccl-compat first on
 * LD_LIBRARY_PATH, and linked to the shim directly), so every nccl* call it makes is served by
 * Starscream. It prints one line per check ("PASS name" / "FAIL name") on rank 0, the failing
 * ranks' details on stderr, and exits non-zero if any check failed anywhere.
 *
 * Buffers are host memory: on the host backend the "device" buffers NCCL expects are host
 * buffers, and the stream arguments are ignored (every call completes before it returns).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <nccl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_check.h"

static int g_rank, g_n, g_failures;
static ncclComm_t g_comm;

/* Ends a check: it passes only if every rank's part passed. */
static void check(const char* name, int ok) {
  int all = 0;
  if (!ok && g_why[0] == '\0') why("failed");
  if (!ok) fprintf(stderr, "rank %d: %s: %s\n", g_rank, name, g_why);
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (g_rank == 0) printf("%s %s\n", all ? "PASS" : "FAIL", name);
  fflush(stdout);
  if (!all) ++g_failures;
  g_why[0] = '\0';
}

/* Expects `r` to be `want` with a last-error message containing `needle`. */
static int expect(const char* what, ncclResult_t r, ncclResult_t want, const char* needle) {
  const char* msg = ncclGetLastError(NULL);
  if (r == want && strstr(msg, needle) != NULL) return 1;
  why("%s -> %d (%s), want %d with \"%s\"", what, (int)r, msg, (int)want, needle);
  return 0;
}

/* Element i of rank r's input: small integers, so sums and products are exact in doubles. */
static double input(int r, size_t i) { return (double)((r + 1) + (int)(i % 5)); }

static int near(double got, double want, double tol) {
  return fabs(got - want) <= tol * (fabs(want) > 1 ? fabs(want) : 1);
}

static int checkVec(const char* what, const double* got, size_t count, double (*want)(size_t),
                    double tol) {
  for (size_t i = 0; i < count; ++i)
    if (!near(got[i], want(i), tol)) {
      why("%s: [%zu] = %g, want %g", what, i, got[i], want(i));
      return 0;
    }
  return 1;
}

static double reduceRef(size_t i, ncclRedOp_t op) {
  double acc = input(0, i);
  for (int r = 1; r < g_n; ++r) {
    double x = input(r, i);
    if (op == ncclSum || op == ncclAvg)
      acc += x;
    else if (op == ncclProd)
      acc *= x;
    else if (op == ncclMax)
      acc = x > acc ? x : acc;
    else if (op == ncclMin)
      acc = x < acc ? x : acc;
  }
  return op == ncclAvg ? acc / g_n : acc;
}
static ncclRedOp_t g_op;
static double g_scale = 1;
static size_t g_offset; /* global index of local element 0 (reduce-scatter) */
static double wantReduced(size_t i) { return g_scale * reduceRef(g_offset + i, g_op); }

static void fill(double* buf, int r, size_t count, size_t offset) {
  for (size_t i = 0; i < count; ++i) buf[i] = input(r, offset + i);
}

static void checkAllReduce(const char* name, ncclRedOp_t op, size_t count) {
  double* in = malloc(count * sizeof(double));
  double* out = malloc(count * sizeof(double));
  fill(in, g_rank, count, 0);
  g_op = op, g_scale = 1, g_offset = 0;
  int ok = OK(ncclAllReduce(in, out, count, ncclDouble, op, g_comm, NULL)) &&
           checkVec("out", out, count, wantReduced, 1e-12);
  /* in place, float, same op */
  float* f = malloc(count * sizeof(float));
  for (size_t i = 0; i < count; ++i) f[i] = (float)input(g_rank, i);
  ok = ok && OK(ncclAllReduce(f, f, count, ncclFloat, op, g_comm, NULL));
  for (size_t i = 0; ok && i < count; ++i)
    if (!near(f[i], reduceRef(i, op), 1e-5)) ok = 0, why("in-place float [%zu] = %g", i, f[i]);
  check(name, ok);
  free(in), free(out), free(f);
}

static void checkPreMulSum(void) {
  const size_t count = 1003;
  double in[1003], out[1003];
  fill(in, g_rank, count, 0);
  double two = 2;
  ncclRedOp_t op;
  int ok = OK(ncclRedOpCreatePreMulSum(&op, &two, ncclDouble, ncclScalarHostImmediate, g_comm));
  two = 100; /* host scalars are read at creation: this must not matter */
  g_op = ncclSum, g_scale = 2, g_offset = 0;
  ok = ok && OK(ncclAllReduce(in, out, count, ncclDouble, op, g_comm, NULL)) &&
       checkVec("host scalar", out, count, wantReduced, 1e-12);
  ok = ok && OK(ncclRedOpDestroy(op, g_comm));
  check("allreduce premulsum host scalar", ok);

  double* scalar = NULL;
  ok = OK(ncclMemAlloc((void**)&scalar, sizeof(double)));
  if (ok) *scalar = 3;
  ok = ok && OK(ncclRedOpCreatePreMulSum(&op, scalar, ncclDouble, ncclScalarDevice, g_comm));
  if (ok) *scalar = 0.5; /* device scalars are read when the operation runs */
  g_scale = 0.5;
  ok = ok && OK(ncclAllReduce(in, out, count, ncclDouble, op, g_comm, NULL)) &&
       checkVec("device scalar", out, count, wantReduced, 1e-12);
  ok = ok && OK(ncclRedOpDestroy(op, g_comm)) && OK(ncclMemFree(scalar));
  check("allreduce premulsum device scalar", ok);
}

static size_t g_count;
static int g_root;
static double wantRoot(size_t i) { return input(g_root, i); }
static double wantGathered(size_t i) { return input((int)(i / g_count), i % g_count); }

static void checkRooted(void) {
  const size_t count = 777;
  double* in = malloc(count * sizeof(double));
  double* out = malloc(count * sizeof(double));
  int ok;
  g_root = g_n - 1;
  fill(in, g_rank, count, 0);
  ok = OK(ncclBroadcast(in, out, count, ncclDouble, g_root, g_comm, NULL)) &&
       checkVec("out", out, count, wantRoot, 0);
  check("broadcast", ok);
  g_root = 0;
  fill(out, g_rank, count, 0);
  ok = OK(ncclBroadcast(out, out, count, ncclDouble, g_root, g_comm, NULL)) &&
       checkVec("out", out, count, wantRoot, 0);
  check("broadcast in place", ok);
  g_root = 1 % g_n;
  fill(out, g_rank, count, 0);
  ok = OK(ncclBcast(out, count, ncclDouble, g_root, g_comm, NULL)) &&
       checkVec("buff", out, count, wantRoot, 0);
  check("bcast", ok);

  g_op = ncclSum, g_scale = 1, g_offset = 0;
  fill(in, g_rank, count, 0);
  memset(out, 0, count * sizeof(double));
  ok = OK(ncclReduce(in, g_rank == 0 ? out : NULL, count, ncclDouble, ncclSum, 0, g_comm, NULL));
  if (g_rank == 0) ok = ok && checkVec("root", out, count, wantReduced, 1e-12);
  check("reduce", ok);
  g_op = ncclMax;
  fill(in, g_rank, count, 0);
  ok = OK(ncclReduce(in, in, count, ncclDouble, ncclMax, g_n - 1, g_comm, NULL));
  if (g_rank == g_n - 1) ok = ok && checkVec("root", in, count, wantReduced, 0);
  check("reduce in place", ok);
  free(in), free(out);
}

static void checkGathers(void) {
  const size_t count = 513;
  double* mine = malloc(count * sizeof(double));
  double* all = malloc(g_n * count * sizeof(double));
  double* red = malloc(count * sizeof(double));
  g_count = count;
  fill(mine, g_rank, count, 0);
  int ok = OK(ncclAllGather(mine, all, count, ncclDouble, g_comm, NULL)) &&
           checkVec("all", all, g_n * count, wantGathered, 0);
  check("allgather", ok);
  fill(all + g_rank * count, g_rank, count, 0);
  ok = OK(ncclAllGather(all + g_rank * count, all, count, ncclDouble, g_comm, NULL)) &&
       checkVec("all", all, g_n * count, wantGathered, 0);
  check("allgather in place", ok);

  g_op = ncclSum, g_scale = 1, g_offset = g_rank * count;
  fill(all, g_rank, g_n * count, 0);
  ok = OK(ncclReduceScatter(all, red, count, ncclDouble, ncclSum, g_comm, NULL)) &&
       checkVec("mine", red, count, wantReduced, 1e-12);
  check("reducescatter", ok);
  fill(all, g_rank, g_n * count, 0);
  ok = OK(ncclReduceScatter(all, all + g_rank * count, count, ncclDouble, ncclSum, g_comm, NULL)) &&
       checkVec("mine", all + g_rank * count, count, wantReduced, 1e-12);
  check("reducescatter in place", ok);
  free(mine), free(all), free(red);
}

/* All-to-all, gather and scatter: block p of rank r's input holds value r*1000 + p*10 + i%7. */
static double block(int r, int p, size_t i) { return r * 1000.0 + p * 10.0 + (double)(i % 7); }

static void checkPersonalised(void) {
  const size_t count = 301;
  double* in = malloc(g_n * count * sizeof(double));
  double* out = malloc(g_n * count * sizeof(double));
  int ok;
#if defined(HAVE_NCCL_228) || defined(RCCL_ALLTOALLV)
  for (int p = 0; p < g_n; ++p)
    for (size_t i = 0; i < count; ++i) in[p * count + i] = block(g_rank, p, i);
#ifdef HAVE_NCCL_228
  ok = OK(ncclAlltoAll(in, out, count, ncclDouble, g_comm, NULL));
#else
  ok = OK(ncclAllToAll(in, out, count, ncclDouble, g_comm, NULL));
#endif
  for (int p = 0; ok && p < g_n; ++p)
    for (size_t i = 0; ok && i < count; ++i)
      if (out[p * count + i] != block(p, g_rank, i))
        ok = 0, why("out[%d][%zu] = %g", p, i, out[p * count + i]);
  check("alltoall", ok);
#endif
#if defined(HAVE_NCCL_228) || defined(RCCL_GATHER_SCATTER)
  for (int pass = 0; pass < 2; ++pass) { /* out of place to root 0, in place to root n-1 */
    int root = pass == 0 ? 0 : g_n - 1;
    double* send = pass == 0 ? in : (g_rank == root ? out + root * count : in);
    for (size_t i = 0; i < count; ++i) send[i] = block(g_rank, 0, i);
    ok = OK(ncclGather(send, g_rank == root ? out : NULL, count, ncclDouble, root, g_comm, NULL));
    for (int p = 0; ok && g_rank == root && p < g_n; ++p)
      for (size_t i = 0; ok && i < count; ++i)
        if (out[p * count + i] != block(p, 0, i)) ok = 0, why("gather [%d][%zu]", p, i);
    check(pass == 0 ? "gather" : "gather in place", ok);
  }
  for (int pass = 0; pass < 2; ++pass) { /* out of place from root 1, in place from root 0 */
    int root = pass == 0 ? 1 % g_n : 0;
    for (int p = 0; p < g_n; ++p)
      for (size_t i = 0; i < count; ++i) in[p * count + i] = block(g_rank, p, i);
    double* recv = (pass == 1 && g_rank == root) ? in + root * count : out;
    ok = OK(ncclScatter(g_rank == root ? in : NULL, recv, count, ncclDouble, root, g_comm, NULL));
    for (size_t i = 0; ok && i < count; ++i)
      if (recv[i] != block(root, g_rank, i)) ok = 0, why("scatter [%zu] = %g", i, recv[i]);
    check(pass == 0 ? "scatter" : "scatter in place", ok);
  }
#endif
  (void)block;
  free(in), free(out);
}

static void checkGroups(void) {
  const size_t count = 4099;
  double* a = malloc(count * sizeof(double));
  double* b = malloc(count * sizeof(double));
  int next = (g_rank + 1) % g_n, prev = (g_rank + g_n - 1) % g_n;
  fill(a, g_rank, count, 0);
  int ok = OK(ncclGroupStart()) && OK(ncclSend(a, count, ncclDouble, next, g_comm, NULL)) &&
           OK(ncclRecv(b, count, ncclDouble, prev, g_comm, NULL)) && OK(ncclGroupEnd());
  for (size_t i = 0; ok && i < count; ++i)
    if (b[i] != input(prev, i)) ok = 0, why("b[%zu] = %g", i, b[i]);
  check("send/recv ring in a group", ok);

  /* Two collectives aggregated in one group. */
  double* c = malloc(g_n * 8 * sizeof(double));
  fill(a, g_rank, count, 0);
  fill(c + g_rank * 8, g_rank, 8, 0);
  g_op = ncclSum, g_scale = 1, g_offset = 0, g_count = 8;
  ok = OK(ncclGroupStart()) && OK(ncclAllReduce(a, a, count, ncclDouble, ncclSum, g_comm, NULL)) &&
       OK(ncclAllGather(c + g_rank * 8, c, 8, ncclDouble, g_comm, NULL)) && OK(ncclGroupEnd()) &&
       checkVec("allreduce", a, count, wantReduced, 1e-12) &&
       checkVec("allgather", c, g_n * 8, wantGathered, 0);
  check("aggregated group (allreduce + allgather)", ok);

  /* A simulated group launches nothing, and leaves nothing behind for the next group. */
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  fill(a, g_rank, count, 0);
  for (size_t i = 0; i < count; ++i) b[i] = -1;
  ok = OK(ncclGroupStart()) && OK(ncclAllReduce(a, b, count, ncclDouble, ncclSum, g_comm, NULL)) &&
       OK(ncclGroupSimulateEnd(&sim));
  for (size_t i = 0; ok && i < count; ++i)
    if (b[i] != -1) ok = 0, why("the simulated all-reduce wrote b[%zu] = %g", i, b[i]);
  ok = ok && OK(ncclGroupStart()) &&
       OK(ncclAllReduce(a, a, count, ncclDouble, ncclSum, g_comm, NULL)) && OK(ncclGroupEnd()) &&
       checkVec("next group", a, count, wantReduced, 1e-12);
  check("group simulate end", ok);
  free(a), free(b), free(c);
}

/* Sum over the communicator of each member's world rank, through `comm`. */
static int sumOfWorldRanks(ncclComm_t comm, double* out) {
  double x = g_rank;
  return OK(ncclAllReduce(&x, out, 1, ncclDouble, ncclSum, comm, NULL));
}

static void checkSplits(void) {
  /* Even ranks form a communicator ordered by descending world rank; odd ranks opt out. */
  ncclComm_t sub = NULL;
  int color = g_rank % 2 == 0 ? 0 : NCCL_SPLIT_NOCOLOR;
  int ok = OK(ncclCommSplit(g_comm, color, -g_rank, &sub, NULL));
  if (ok && color == NCCL_SPLIT_NOCOLOR && sub != NULL) ok = 0, why("NOCOLOR gave a communicator");
  if (ok && color == 0) {
    int n = 0, r = -1;
    double sum = 0, want = 0;
    for (int w = 0; w < g_n; w += 2) want += w;
    ok = OK(ncclCommCount(sub, &n)) && OK(ncclCommUserRank(sub, &r)) && sumOfWorldRanks(sub, &sum);
    if (ok && (n != (g_n + 1) / 2 || r != (n - 1) - g_rank / 2 || sum != want))
      ok = 0, why("count %d rank %d sum %g", n, r, sum);
/* ncclCommRevoke and NCCL_REVOKE_DEFAULT are newer than some 2.28 headers (2.28.3 has neither). */
#if defined(HAVE_NCCL_228) && defined(NCCL_REVOKE_DEFAULT)
    /* Revoked: no more work, but still destroyable. */
    double x = 1;
    ok = ok && OK(ncclCommRevoke(sub, NCCL_REVOKE_DEFAULT)) &&
         expect("allreduce after revoke", ncclAllReduce(&x, &x, 1, ncclDouble, ncclSum, sub, NULL),
                ncclInvalidUsage, "revoked");
#endif
    ok = ok && OK(ncclCommDestroy(sub));
  }
  check("split with NCCL_SPLIT_NOCOLOR (and revoke)", ok);

#ifdef HAVE_NCCL_228
  if (g_n > 1) { /* the last rank leaves; it does not call ncclCommShrink */
    int gone = g_n - 1;
    ok = 1;
    if (g_rank != gone) {
      ncclComm_t small = NULL;
      double sum = 0;
      int n = 0;
      ok = OK(ncclCommShrink(g_comm, &gone, 1, &small, NULL, NCCL_SHRINK_DEFAULT)) &&
           OK(ncclCommCount(small, &n)) && sumOfWorldRanks(small, &sum);
      if (ok && (n != g_n - 1 || sum != (double)(g_n - 1) * (g_n - 2) / 2))
        ok = 0, why("count %d sum %g", n, sum);
      ok = ok && OK(ncclCommDestroy(small));
    }
    check("shrink (last rank excluded)", ok);
  }
#endif
}

static void checkNonBlockingInit(void) {
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.commName = "nonblocking";
  int ok = 1;
  if (g_rank == 0) ok = OK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclResult_t r = ncclCommInitRankConfig(&comm, g_n, id, g_rank, &config);
  if (r != ncclInProgress && r != ncclSuccess)
    ok = 0, why("init -> %d: %s", r, ncclGetLastError(NULL));
  ncclResult_t state = ncclInProgress;
  for (int i = 0; ok && state == ncclInProgress && i < 60000; ++i) {
    ok = OK(ncclCommGetAsyncError(comm, &state));
    if (state == ncclInProgress) usleep(1000);
  }
  if (ok && state != ncclSuccess) ok = 0, why("async state %d", state);
  double sum = 0;
  ok = ok && sumOfWorldRanks(comm, &sum);
  if (ok && sum != (double)g_n * (g_n - 1) / 2) ok = 0, why("sum %g", sum);
  ok = ok && OK(ncclCommFinalize(comm)) && OK(ncclCommDestroy(comm));
  check("non-blocking init", ok);
}

static void checkErrors(void) {
  double a[4] = {0}, b[4];
  int ok = expect("bad dtype", ncclAllReduce(a, b, 4, (ncclDataType_t)99, ncclSum, g_comm, NULL),
                  ncclInvalidArgument, "datatype");
  ok &= expect("bad op", ncclAllReduce(a, b, 4, ncclDouble, (ncclRedOp_t)77, g_comm, NULL),
               ncclInvalidArgument, "reduction op");
  ok &= expect("NULL comm", ncclAllReduce(a, b, 4, ncclDouble, ncclSum, NULL, NULL),
               ncclInvalidArgument, "comm is NULL");
  ok &= expect("bad root", ncclBroadcast(a, b, 4, ncclDouble, g_n, g_comm, NULL),
               ncclInvalidArgument, "root");
  ok &= expect("stray group end", ncclGroupEnd(), ncclInvalidUsage, "ncclGroupStart");
  ok &= OK(ncclGroupStart()) &&
        ncclSend(a, 4, ncclDouble, -1, g_comm, NULL) == ncclInvalidArgument &&
        expect("failed group", ncclGroupEnd(), ncclInvalidArgument, "nothing in the group");
#ifdef HAVE_NCCL_228
  /* Windows work (nccl_call_patterns.c uses them); a flag NCCL does not define is refused. */
  ncclWindow_t win = NULL;
  ok &= expect("window flags", ncclCommWindowRegister(g_comm, a, sizeof(a), &win, 0x40),
               ncclInvalidArgument, "winFlags");
#endif
  ok &= strlen(ncclGetErrorString(ncclInvalidUsage)) > 0;
  check("error paths (bad dtype -> ncclInvalidArgument, ...)", ok);
}

/* Under STARSCREAM_CHECK=1 (ctest's nccl.linked.np2.checked): the last rank all-reduces int32
 * where the others pass float (same size). Every rank must get ncclInvalidUsage naming the
 * datatype at that call, nothing written, and the next matching call must work. */
static void checkCheckedMode(void) {
  const char* mode = getenv("STARSCREAM_CHECK");
  if (mode == NULL || strcmp(mode, "1") != 0 || g_n < 2) return;
  float a[64], b[64];
  for (int i = 0; i < 64; ++i) a[i] = (float)(g_rank + 1), b[i] = -1.0f;
  ncclDataType_t mine = g_rank == g_n - 1 ? ncclInt32 : ncclFloat32;
  int ok =
      expect("dtype differs across ranks", ncclAllReduce(a, b, 64, mine, ncclSum, g_comm, NULL),
             ncclInvalidUsage, "datatype");
  if (ok && b[0] != -1.0f) ok = 0, why("the refused call wrote %g", b[0]);
  ok = ok && OK(ncclAllReduce(a, b, 64, ncclFloat32, ncclSum, g_comm, NULL));
  if (ok && b[63] != (float)(g_n * (g_n + 1) / 2))
    ok = 0, why("sum %g after the refused call", b[63]);
  check("checked mode (STARSCREAM_CHECK=1): a datatype mismatch fails on every rank", ok);
}

static void checkMemory(void) {
  void* p = NULL;
  void* h = NULL;
  int n = 0, r = -1, dev = 0;
  int ok = OK(ncclMemAlloc(&p, 1 << 20)) && OK(ncclCommRegister(g_comm, p, 1 << 20, &h)) &&
           OK(ncclCommDeregister(g_comm, h)) && OK(ncclMemFree(p)) &&
           OK(ncclCommCount(g_comm, &n)) && OK(ncclCommUserRank(g_comm, &r)) &&
           OK(ncclCommCuDevice(g_comm, &dev));
  if (ok && (n != g_n || r != g_rank || dev != -1))
    ok = 0, why("count %d rank %d device %d (host backend: -1)", n, r, dev);
  check("memory, registration and queries", ok);
}

/* The library that serves nccl* in this process must be the shim, never the real NCCL. */
static void checkLibrary(void) {
  Dl_info info;
  char path[PATH_MAX] = "";
  void* sym = dlsym(RTLD_DEFAULT, "ncclAllReduce");
  int version = 0;
  int ok = sym != NULL && dladdr(sym, &info) != 0 && realpath(info.dli_fname, path) != NULL &&
           strstr(path, "starscream-nccl") != NULL;
  if (!ok) why("ncclAllReduce comes from %s", path[0] ? path : "?");
  ok = ok && OK(ncclGetVersion(&version));
  if (ok && version != NCCL_VERSION_CODE) ok = 0, why("version %d", version);
  if (g_rank == 0) printf("nccl* served by %s, version %d\n", path, version);
  check("served by libstarscream-nccl", ok);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_n);
  checkLibrary();
  ncclUniqueId id;
  int ok = 1;
  if (g_rank == 0) ok = OK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ok = ok && OK(ncclCommInitRank(&g_comm, g_n, id, g_rank));
  check("init", ok);
  if (g_failures == 0) {
    checkAllReduce("allreduce sum", ncclSum, 1003);
    checkAllReduce("allreduce sum (large)", ncclSum, (1 << 18) + 5);
    checkAllReduce("allreduce prod", ncclProd, 1003);
    checkAllReduce("allreduce max", ncclMax, 1003);
    checkAllReduce("allreduce min", ncclMin, 1003);
    checkAllReduce("allreduce avg", ncclAvg, 1003);
    checkPreMulSum();
    checkRooted();
    checkGathers();
    checkPersonalised();
    checkGroups();
    checkSplits();
    checkNonBlockingInit();
    checkErrors();
    checkCheckedMode();
    checkMemory();
    check("destroy", OK(ncclCommDestroy(g_comm)));
  }
  if (g_rank == 0) printf("%s: %d check(s) failed\n", g_failures ? "FAILED" : "OK", g_failures);
  MPI_Finalize();
  return g_failures ? 1 : 0;
}
