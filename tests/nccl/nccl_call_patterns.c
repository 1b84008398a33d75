/* SPDX-License-Identifier: MIT */
/*
 * The call patterns of NCCL's own test suite (nccl-tests) and of PyTorch, replayed on the host
 * backend through the NCCL API, every result checked element by element on every rank. Built
 * and run like nccl_preload_check (against the real nccl.h; preloaded over the real libnccl and
 * linked to the shim) under mpirun with 3 and 4 ranks.
 *
 * What nccl-tests does (src/common.cu), and so what this replays:
 *  - buffers from ncclMemAlloc, sized for the largest size; every call of one size and
 *    placement is: fresh data, a first call, `iters` timed calls at shifting offsets inside the
 *    buffers (startColl's `shift`), fresh data, the checked call at offset 0;
 *  - warm-up calls at the largest size first, then the sizes in ascending order, out of place
 *    then in place (all-gather in place: sendbuff = recvbuff + rank*count; reduce-scatter:
 *    recvbuff = sendbuff + rank*count; alltoall too is called in place);
 *  - an outer ncclGroupStart/End around the per-GPU calls (the -g mode), with sendrecv's own
 *    group nested inside it, and "mulsum": an op from ncclRedOpCreatePreMulSum made per call
 *    with ncclScalarHostImmediate from a union of which only the datatype's member is set,
 *    scalar (rank%2 ? 2 : 1), destroyed right after the call, inside the outer group;
 *  - -r: every root; -R 1: ncclCommRegister, -R 2: ncclCommWindowRegister(NCCL_WIN_COLL_SYMMETRIC)
 *    of the whole buffers, both inside a group; -G: the same calls replayed (here 50 times,
 *    with no synchronisation in between).
 * PyTorch adds: PreMulSum with a device scalar (ncclScalarDevice), and all_to_all_single with
 * uneven splits as grouped ncclSend/ncclRecv to every peer including itself, zero counts
 * skipped.
 *
 * Output: one "FAIL <check>: rank <r>: <why>" line per failing check on rank 0, then
 * "<N> passed, <M> failed"; exit status non-zero on any failure.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>

#include "nccl_call_patterns.h"

enum { AR, AG, RS, BC, RD, A2A, SR, NCOLL };
static const char* kCollName[NCOLL] = {"allreduce", "allgather", "reducescatter", "broadcast",
                                       "reduce",    "alltoall",  "sendrecv"};
static void* g_devScalar; /* ncclMemAlloc'd: the "device" scalar of mulsum(device) */

typedef struct {
  int coll, dt, op, root, inplace, grouped;
  size_t count;
} Case;

static int reduces(int coll) { return coll == AR || coll == RS || coll == RD; }
static size_t sendElems(const Case* c) {
  return c->count * ((c->coll == RS || c->coll == A2A) ? g_n : 1);
}
static size_t recvElems(const Case* c) {
  return c->count * ((c->coll == AG || c->coll == A2A) ? g_n : 1);
}
static size_t totalBytes(const Case* c) {
  size_t s = sendElems(c), r = recvElems(c);
  return (s > r ? s : r) * kDt[c->dt].size;
}

static const char* describe(const char* section, const Case* c) {
  static char name[256];
  snprintf(name, sizeof(name), "%s: %s %s %s count %zu %s%s root %d", section, kCollName[c->coll],
           kDt[c->dt].name, kOpName[c->op], c->count, c->inplace ? "in-place" : "out-of-place",
           c->grouped ? " (outer group)" : "", c->root);
  return name;
}

/* The send and receive pointers of a call at `shift` bytes into the buffers (common.cu). */
static void pointers(const Case* c, char* sb, char* rb, size_t shift, char** s, char** r) {
  size_t cb = c->count * kDt[c->dt].size;
  *s = (c->inplace ? rb : sb) + shift;
  *r = rb + shift;
  if (c->inplace && c->coll == AG) *s += (size_t)g_rank * cb;
  if (c->inplace && c->coll == RS) *r += (size_t)g_rank * cb;
}

/* One startColl: the outer group, the per-call PreMulSum op, the call, the op destroyed. */
static int issue(const Case* c, char* sb, char* rb, size_t shift) {
  char *s, *r;
  pointers(c, sb, rb, shift, &s, &r);
  ncclDataType_t t = kDt[c->dt].type;
  ncclRedOp_t op = kNcclOp[c->op];
  int ok = 1, made = 0;
  if (c->grouped && !OK(ncclGroupStart())) return 0;
  if (c->op == PMH) {
    union {
      int8_t i8;
      uint8_t u8;
      int32_t i32;
      uint16_t f16;
      float f32;
      double f64;
      uint64_t u64;
    } u;
    memset(&u, 0xA5, sizeof(u)); /* only the datatype's member is set, as in common.cu */
    put(c->dt, &u, 0, scalarOf(g_rank));
    ok = made = OK(ncclRedOpCreatePreMulSum(&op, &u.u64, t, ncclScalarHostImmediate, g_comm));
    memset(&u, 0, sizeof(u)); /* a host-immediate scalar is read at creation */
  } else if (c->op == PMD) {
    put(c->dt, g_devScalar, 0, scalarOf(g_rank));
    ok = made = OK(ncclRedOpCreatePreMulSum(&op, g_devScalar, t, ncclScalarDevice, g_comm));
  }
  if (ok) switch (c->coll) {
      case AR: ok = OK(ncclAllReduce(s, r, c->count, t, op, g_comm, NULL)); break;
      case AG: ok = OK(ncclAllGather(s, r, c->count, t, g_comm, NULL)); break;
      case RS: ok = OK(ncclReduceScatter(s, r, c->count, t, op, g_comm, NULL)); break;
      case BC: ok = OK(ncclBroadcast(s, r, c->count, t, c->root, g_comm, NULL)); break;
      case RD: ok = OK(ncclReduce(s, r, c->count, t, op, c->root, g_comm, NULL)); break;
#ifdef HAVE_NCCL_228
      case A2A: ok = OK(ncclAlltoAll(s, r, c->count, t, g_comm, NULL)); break;
#endif
      case SR: { /* sendrecv.cu: the peers from the communicator, a group of its own */
        int n = 0, me = 0;
        ok = OK(ncclCommCount(g_comm, &n)) && OK(ncclCommUserRank(g_comm, &me));
        if (ok && OK(ncclGroupStart())) {
          ok = OK(ncclSend(s, c->count, t, (me + 1) % n, g_comm, NULL)) &&
               OK(ncclRecv(r, c->count, t, (me + n - 1) % n, g_comm, NULL));
          ok = OK(ncclGroupEnd()) && ok;
        } else {
          ok = 0;
        }
        break;
      }
      default: ok = 0, why("not built (NCCL < 2.28)");
    }
  if (made) ok = OK(ncclRedOpDestroy(op, g_comm)) && ok;
  if (c->grouped) ok = OK(ncclGroupEnd()) && ok;
  return ok;
}

/* Fresh data: a sentinel over the receive region, then this rank's input where the call reads. */
static void fill(const Case* c, char* sb, char* rb) {
  char *s, *r;
  pointers(c, sb, rb, 0, &s, &r);
  ++g_seed;
  memset(r, 0xff, recvElems(c) * kDt[c->dt].size);
  int op = reduces(c->coll) ? c->op : SUM;
  for (size_t k = 0; k < sendElems(c); ++k) put(c->dt, s, k, val(op, g_rank, k));
}

/* Checks the result of the call at offset 0; returns the number of wrong elements. */
static size_t verify(const Case* c, char* sb, char* rb) {
  char *s, *r;
  pointers(c, sb, rb, 0, &s, &r);
  if (c->coll == RD && g_rank != c->root) return 0;
  /* sendrecv in place sends and receives through one buffer: nccl-tests calls it and
   * checks nothing (reportErrors = 0), and neither does this. */
  if (c->coll == SR && c->inplace) return 0;
  size_t n = recvElems(c), cnt = c->count, wrong = 0;
  for (size_t k = 0; k < n; ++k) {
    double want;
    switch (c->coll) {
      case AR:
      case RD: want = reduced(c->op, k); break;
      case RS: want = reduced(c->op, (size_t)g_rank * cnt + k); break;
      case BC: want = val(SUM, c->root, k); break;
      case AG: want = val(SUM, (int)(k / cnt), k % cnt); break;
      case A2A: want = val(SUM, (int)(k / cnt), (size_t)g_rank * cnt + k % cnt); break;
      default: want = val(SUM, (g_rank + g_n - 1) % g_n, k); break;
    }
    double got = get(c->dt, r, k);
    if (!same(c->dt, c->op, got, want) && wrong++ == 0)
      why("element %zu of %zu is %g, want %g", k, n, got, want);
  }
  if (wrong > 1) {
    size_t len = strlen(g_why);
    snprintf(g_why + len, sizeof(g_why) - len, " (%zu elements wrong)", wrong);
  }
  return wrong;
}

/* One size and placement as BenchTime runs it; `bytes` is the usable size of sb and rb. */
static void runCase(const char* section, const Case* c, char* sb, char* rb, size_t bytes,
                    int iters) {
  size_t total = totalBytes(c), steps = total ? bytes / total : 1;
  fill(c, sb, rb);
  int ok = issue(c, sb, rb, 0);
  for (int it = 0; ok && it < iters; ++it) ok = issue(c, sb, rb, total * (it % steps));
  fill(c, sb, rb);
  ok = ok && issue(c, sb, rb, 0);
  ok = ok && verify(c, sb, rb) == 0;
  check(describe(section, c), ok);
}

static int alloc2(char** sb, char** rb, size_t bytes) {
  *sb = *rb = NULL;
  return OK(ncclMemAlloc((void**)sb, bytes)) && OK(ncclMemAlloc((void**)rb, bytes));
}

/* ---------------------------------------------------------------- (a) nccl-tests' size sweep */

static const size_t kSweep[] = {0, 1, 7, 1000, 4099, 65539, 262147, 1u << 20};
#define NSWEEP (sizeof(kSweep) / sizeof(kSweep[0]))
enum { kSweepBytes = 4 << 20 }; /* the largest total size: -e 4M */

/* Warm-up at the largest size, then every size ascending, out of place then in place. */
static void sweep(const char* section, int coll, int dt, int op, char* sb, char* rb, size_t bytes,
                  const size_t* sizes, size_t nsizes, int iters) {
  Case c = {coll, dt, op, 0, 0, 1, 0};
  size_t largest = 0;
  for (size_t i = 0; i < nsizes; ++i) {
    c.count = sizes[i];
    if (totalBytes(&c) <= bytes) largest = sizes[i];
  }
  c.count = largest;
  int ok = 1;
  for (int w = 0; ok && w < 2; ++w) ok = issue(&c, sb, rb, 0);
  char name[200];
  snprintf(name, sizeof(name), "%s: %s warm-up at count %zu", section, kCollName[coll], largest);
  check(name, ok);
  for (size_t i = 0; i < nsizes; ++i) {
    c.count = sizes[i];
    if (totalBytes(&c) > bytes) continue;
    for (c.inplace = 0; c.inplace < 2; ++c.inplace) runCase(section, &c, sb, rb, bytes, iters);
  }
}

static void sizeSweep(void) {
  char *sb, *rb;
  int ok = alloc2(&sb, &rb, kSweepBytes);
  check("sweep: ncclMemAlloc", ok);
  if (ok)
    for (int coll = 0; coll < NCOLL; ++coll)
      sweep("sweep", coll, F32, SUM, sb, rb, kSweepBytes, kSweep, NSWEEP, 2);
  ncclMemFree(sb), ncclMemFree(rb);
}

/* ---------------------------------------------------------------- (a) types x ops */

static void typesAndOps(void) {
  static const size_t counts[] = {1, 7, 1000, 4099};
  static const size_t premulBytes[] = {8, 256, 8192, 262144, 1u << 20};
  const size_t bytes = (size_t)g_n << 20;
  char *sb, *rb;
  int ok = alloc2(&sb, &rb, bytes);
  check("types: ncclMemAlloc", ok);
  for (int coll = 0; ok && coll < NCOLL; ++coll)
    for (int dt = 0; dt < NDT; ++dt)
      for (int op = 0; op < NOPS; ++op) {
        if (!reduces(coll) && (op != SUM || dt == F32 || dt == U8)) continue;
        if (op == AVG && dt != F32 && dt != F64) continue;
        int premul = op == PMH || op == PMD;
        size_t n = premul ? 5 : 4;
        for (size_t i = 0; i < n; ++i) {
          Case c = {coll, dt, op, 0, 0, 0, premul ? premulBytes[i] / kDt[dt].size : counts[i]};
          c.root = (int)(i % g_n);
          if (c.count == 0) c.count = 1;
          for (c.inplace = 0; c.inplace < 2; ++c.inplace) {
            c.grouped = (int)((i + c.inplace) % 2); /* -g mode and plain calls alike */
            runCase("types", &c, sb, rb, bytes, 1);
          }
        }
      }
  ncclMemFree(sb), ncclMemFree(rb);
}

/* ---------------------------------------------------------------- (b) every root */

static void everyRoot(void) {
  static const size_t counts[] = {1, 4099, 65539};
  static const int combos[][3] = {{BC, F32, SUM}, {BC, I8, SUM},  {RD, F32, SUM},
                                  {RD, I32, MAX}, {RD, F64, PMH}, {RD, F16, PMD}};
  const size_t bytes = 65539 * 8;
  char *sb, *rb;
  int ok = alloc2(&sb, &rb, bytes);
  check("roots: ncclMemAlloc", ok);
  for (size_t k = 0; ok && k < sizeof(combos) / sizeof(combos[0]); ++k)
    for (int root = 0; root < g_n; ++root)
      for (size_t i = 0; i < 3; ++i) {
        Case c = {combos[k][0], combos[k][1], combos[k][2], root, 0, (int)i % 2, counts[i]};
        for (c.inplace = 0; c.inplace < 2; ++c.inplace) runCase("roots", &c, sb, rb, bytes, 1);
      }
  ncclMemFree(sb), ncclMemFree(rb);
}

/* ---------------------------------------------------------------- (c) registered buffers */

/* Calls on sub-ranges of the registered buffers (the timed iterations' shifts). */
static void onRegistered(const char* section, char* sb, char* rb, size_t bytes) {
  static const size_t counts[] = {1, 4099, 65539};
  for (int coll = 0; coll < NCOLL; ++coll)
    sweep(section, coll, F32, SUM, sb, rb, bytes, counts, 3, 3);
  for (int op = PMH; op <= PMD; ++op) {
    sweep(section, AR, F32, op, sb, rb, bytes, counts, 3, 3);
    sweep(section, RS, I32, op, sb, rb, bytes, counts, 3, 3);
  }
}

static void registered(void) {
  const size_t bytes = 1u << 20;
  char *sb, *rb;
  void *hs = NULL, *hr = NULL;
  int ok = alloc2(&sb, &rb, bytes) && OK(ncclGroupStart());
  if (ok) {
    ok = OK(ncclCommRegister(g_comm, sb, bytes, &hs)) &&
         OK(ncclCommRegister(g_comm, rb, bytes, &hr));
    ok = OK(ncclGroupEnd()) && ok;
  }
  check("register (-R 1): ncclCommRegister of both buffers in a group", ok);
  if (ok) onRegistered("register", sb, rb, bytes);
  ok = (!hs || OK(ncclCommDeregister(g_comm, hs))) && (!hr || OK(ncclCommDeregister(g_comm, hr)));
  check("register (-R 1): ncclCommDeregister", ok);
  ncclMemFree(sb), ncclMemFree(rb);
}

static void windows(void) {
#ifdef HAVE_NCCL_228
  const size_t bytes = 1u << 20;
  char *sb, *rb;
  ncclWindow_t ws = NULL, wr = NULL;
  int ok = alloc2(&sb, &rb, bytes) && OK(ncclGroupStart());
  if (ok) {
    ok = OK(ncclCommWindowRegister(g_comm, sb, bytes, &ws, NCCL_WIN_COLL_SYMMETRIC)) &&
         OK(ncclCommWindowRegister(g_comm, rb, bytes, &wr, NCCL_WIN_COLL_SYMMETRIC));
    ok = OK(ncclGroupEnd()) && ok;
  }
  check("window (-R 2): ncclCommWindowRegister(NCCL_WIN_COLL_SYMMETRIC) of both buffers in a group",
        ok);
  if (ok) onRegistered("window", sb, rb, bytes);
  if (ws || wr) {
    ok = (!ws || OK(ncclCommWindowDeregister(g_comm, ws))) &&
         (!wr || OK(ncclCommWindowDeregister(g_comm, wr)));
    check("window (-R 2): ncclCommWindowDeregister", ok);
  }
  ncclMemFree(sb), ncclMemFree(rb);
#endif
}

/* ---------------------------------------------------------------- (e) graph-like replay */

/* A chain of calls on fixed buffers replayed 50 times with no synchronisation in between (what
 * a captured CUDA graph does), checked once at the end. Every step gives the same result on
 * every replay: in-place steps are idempotent (broadcast of equal data, max). */
static void replay(void) {
  const size_t c = 65539, es = sizeof(float);
  const int root = 1 % g_n, prev = (g_rank + g_n - 1) % g_n, next = (g_rank + 1) % g_n;
  float *x, *a, *b, *d, *e, *f;
  int ok = OK(ncclMemAlloc((void**)&x, c * es)) && OK(ncclMemAlloc((void**)&a, c * es)) &&
           OK(ncclMemAlloc((void**)&b, g_n * c * es)) && OK(ncclMemAlloc((void**)&d, c * es)) &&
           OK(ncclMemAlloc((void**)&e, c * es)) && OK(ncclMemAlloc((void**)&f, c * es));
  check("replay: ncclMemAlloc", ok);
  if (!ok) return;
  ++g_seed;
  for (size_t k = 0; k < c; ++k) x[k] = (float)val(SUM, g_rank, k);
  for (int it = 0; ok && it < 50; ++it) {
    ncclRedOp_t op;
    *(float*)g_devScalar = (float)scalarOf(g_rank);
    ok = OK(ncclAllReduce(x, a, c, ncclFloat32, ncclSum, g_comm, NULL)) &&
         OK(ncclAllGather(a, b, c, ncclFloat32, g_comm, NULL)) &&
         OK(ncclReduceScatter(b, d, c, ncclFloat32, ncclSum, g_comm, NULL)) &&
         OK(ncclBroadcast(d, d, c, ncclFloat32, root, g_comm, NULL)) && OK(ncclGroupStart());
    if (ok) {
      ok = OK(ncclSend(d, c, ncclFloat32, next, g_comm, NULL)) &&
           OK(ncclRecv(e, c, ncclFloat32, prev, g_comm, NULL));
      ok = OK(ncclGroupEnd()) && ok;
    }
    ok = ok && OK(ncclAllReduce(e, e, c, ncclFloat32, ncclMax, g_comm, NULL)) &&
         OK(ncclRedOpCreatePreMulSum(&op, g_devScalar, ncclFloat32, ncclScalarDevice, g_comm)) &&
         OK(ncclAllReduce(x, f, c, ncclFloat32, op, g_comm, NULL)) &&
         OK(ncclRedOpDestroy(op, g_comm));
  }
  for (size_t k = 0; ok && k < c; ++k) {
    double s = reduced(SUM, k), want[] = {s, s, g_n * s, g_n * s, reduced(PMD, k)};
    double got[] = {a[k], b[(k % (size_t)g_n) * c + k], d[k], e[k], f[k]};
    static const char* names[] = {"allreduce", "allgather", "reducescatter+broadcast",
                                  "sendrecv+max", "mulsum"};
    for (int i = 0; ok && i < 5; ++i)
      if (got[i] != want[i]) ok = 0, why("%s [%zu] = %g, want %g", names[i], k, got[i], want[i]);
  }
  check("replay (-G): allreduce, allgather, reducescatter, broadcast, sendrecv, max, mulsum x 50",
        ok);
  ncclMemFree(x), ncclMemFree(a), ncclMemFree(b), ncclMemFree(d), ncclMemFree(e), ncclMemFree(f);
}

/* ---------------------------------------------------------------- (f) sends to self */

/* PyTorch's all_to_all_single with uneven splits: one group of ncclSend/ncclRecv to every peer,
 * itself included, zero counts skipped; then nccl-tests' ring with a self send added, nested in
 * an outer group. Rank r sends cnt(r, p) int32 elements to p, valued r*1e6 + p*1e4 + i. */
static size_t cnt(int r, int p, size_t scale) {
  return ((size_t)(r * 3 + p * 5) % 4) * 1001 * scale + (r == p ? 7 : 0);
}
static int32_t a2aVal(int r, int p, size_t i) {
  return r * 1000000 + p * 10000 + (int32_t)(i % 9973);
}

static void selfSends(void) {
  for (size_t scale = 1; scale <= 64; scale *= 64) {
    size_t so = 0, ro = 0, sTot = 0, rTot = 0;
    for (int p = 0; p < g_n; ++p) sTot += cnt(g_rank, p, scale), rTot += cnt(p, g_rank, scale);
    int32_t* s = malloc(sTot * 4 + 4);
    int32_t* r = malloc(rTot * 4 + 4);
    for (int p = 0; p < g_n; ++p)
      for (size_t i = 0; i < cnt(g_rank, p, scale); ++i) s[so++] = a2aVal(g_rank, p, i);
    memset(r, 0xff, rTot * 4);
    int ok = OK(ncclGroupStart());
    so = 0;
    for (int p = 0; ok && p < g_n; ++p) {
      size_t sc = cnt(g_rank, p, scale), rc = cnt(p, g_rank, scale);
      if (sc) ok = OK(ncclSend(s + so, sc, ncclInt32, p, g_comm, NULL));
      if (ok && rc) ok = OK(ncclRecv(r + ro, rc, ncclInt32, p, g_comm, NULL));
      so += sc, ro += rc;
    }
    ok = OK(ncclGroupEnd()) && ok;
    ro = 0;
    for (int p = 0; ok && p < g_n; ++p)
      for (size_t i = 0; ok && i < cnt(p, g_rank, scale); ++i, ++ro)
        if (r[ro] != a2aVal(p, g_rank, i)) ok = 0, why("from %d [%zu] = %d", p, i, r[ro]);
    char name[160];
    snprintf(name, sizeof(name),
             "self: all_to_all_single as grouped send/recv with self, uneven splits x%zu", scale);
    check(name, ok);
    free(s), free(r);
  }
  /* The ring plus a send to self, inside an outer group, at small and large counts. */
  for (size_t c = 1; c <= 300000; c *= 547) {
    int next = (g_rank + 1) % g_n, prev = (g_rank + g_n - 1) % g_n;
    int32_t *s = malloc(c * 4), *r = malloc(c * 4), *self = malloc(c * 4);
    for (size_t i = 0; i < c; ++i) s[i] = a2aVal(g_rank, next, i), r[i] = self[i] = -1;
    int ok = OK(ncclGroupStart());
    if (ok && OK(ncclGroupStart())) {
      ok = OK(ncclSend(s, c, ncclInt32, next, g_comm, NULL)) &&
           OK(ncclRecv(r, c, ncclInt32, prev, g_comm, NULL)) &&
           OK(ncclSend(s, c, ncclInt32, g_rank, g_comm, NULL)) &&
           OK(ncclRecv(self, c, ncclInt32, g_rank, g_comm, NULL));
      ok = OK(ncclGroupEnd()) && ok;
    } else {
      ok = 0;
    }
    ok = OK(ncclGroupEnd()) && ok;
    for (size_t i = 0; ok && i < c; ++i)
      if (r[i] != a2aVal(prev, g_rank, i) || self[i] != s[i])
        ok = 0, why("[%zu]: from prev %d, from self %d", i, r[i], self[i]);
    char name[160];
    snprintf(name, sizeof(name),
             "self: sendrecv ring plus a send to self, nested groups, count %zu", c);
    check(name, ok);
    free(s), free(r), free(self);
  }
}

/* ---------------------------------------------------------------- main */

/* The library that serves nccl* in this process must be the shim, never the real NCCL. */
static void checkLibrary(void) {
  Dl_info info;
  char path[PATH_MAX] = "";
  void* sym = dlsym(RTLD_DEFAULT, "ncclAllReduce");
  int ok = sym != NULL && dladdr(sym, &info) != 0 && realpath(info.dli_fname, path) != NULL &&
           strstr(path, "starscream-nccl") != NULL;
  if (!ok) why("ncclAllReduce comes from %s", path[0] ? path : "?");
  check("served by libstarscream-nccl", ok);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_n);
  double t0 = MPI_Wtime();
  checkLibrary();
  ncclUniqueId id;
  int ok = 1;
  if (g_rank == 0) ok = OK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ok = ok && OK(ncclCommInitRank(&g_comm, g_n, id, g_rank)) && OK(ncclMemAlloc(&g_devScalar, 8));
  check("init", ok);
  if (g_failed == 0) {
    static const struct {
      const char* name;
      void (*run)(void);
    } parts[] = {{"sweep", sizeSweep},     {"types", typesAndOps}, {"roots", everyRoot},
                 {"register", registered}, {"window", windows},    {"replay", replay},
                 {"self", selfSends}};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); ++i) {
      int before = g_failed;
      double t = MPI_Wtime();
      parts[i].run();
      if (g_rank == 0)
        printf("-- %s: %d failed (%.1f s)\n", parts[i].name, g_failed - before, MPI_Wtime() - t);
      fflush(stdout);
    }
    ncclMemFree(g_devScalar);
    check("destroy", OK(ncclCommDestroy(g_comm)));
  }
  if (g_rank == 0) printf("%d passed, %d failed (%.1f s)\n", g_passed, g_failed, MPI_Wtime() - t0);
  MPI_Finalize();
  return g_failed ? 1 : 0;
}
