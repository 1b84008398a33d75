// Feasibility: cuBLASLt pointer-array batch (8 entries, X rows in 8 allocations, W shared) vs one
// GEMM and vs 8 GEMMs, under the MPS cap, all partitions at once. D[rows][n] = X[rows][k] W^T.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cstring>
#define CK(x) do { auto e_ = (x); if ((int)e_ != 0) { printf("FAIL %s = %d line %d\n", #x, (int)e_, __LINE__); exit(1);} } while (0)
cublasLtHandle_t lt; void* ws; const size_t wsB = 32u << 20;
struct G { cublasLtMatmulDesc_t d; cublasLtMatrixLayout_t a, b, c; cublasLtMatmulAlgo_t algo; bool ok; };
G make(int64_t n, int64_t rows, int64_t k, int batch, bool ptr) {
  G g{}; cublasOperation_t tA = CUBLAS_OP_T, tB = CUBLAS_OP_N;
  CK(cublasLtMatmulDescCreate(&g.d, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CK(cublasLtMatmulDescSetAttribute(g.d, CUBLASLT_MATMUL_DESC_TRANSA, &tA, sizeof tA));
  CK(cublasLtMatmulDescSetAttribute(g.d, CUBLASLT_MATMUL_DESC_TRANSB, &tB, sizeof tB));
  CK(cublasLtMatrixLayoutCreate(&g.a, CUDA_R_16BF, k, n, k));
  CK(cublasLtMatrixLayoutCreate(&g.b, CUDA_R_16BF, k, rows, k));
  CK(cublasLtMatrixLayoutCreate(&g.c, CUDA_R_16BF, n, rows, n));
  if (batch > 1) {
    int32_t bc = batch; uint32_t mode = ptr ? CUBLASLT_BATCH_MODE_POINTER_ARRAY : CUBLASLT_BATCH_MODE_STRIDED;
    for (auto l : {g.a, g.b, g.c}) {
      CK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
      CK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, &mode, sizeof mode));
    }
  }
  cublasLtMatmulPreference_t p; CK(cublasLtMatmulPreferenceCreate(&p));
  uint64_t w = wsB; CK(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &w, sizeof w));
  cublasLtMatmulHeuristicResult_t r[1]; int found = 0;
  auto st = cublasLtMatmulAlgoGetHeuristic(lt, g.d, g.a, g.b, g.c, g.c, p, 1, r, &found);
  g.ok = st == 0 && found > 0; if (g.ok) g.algo = r[0].algo; else printf("  heuristic st=%d found=%d (n %ld rows %ld k %ld batch %d ptr %d)\n", (int)st, found, (long)n, (long)rows, (long)k, batch, ptr);
  return g;
}
int main(int argc, char** argv) {
  int rank = atoi(getenv("OMPI_COMM_WORLD_RANK") ? getenv("OMPI_COMM_WORLD_RANK") : "0");
  CK(cudaSetDevice(0)); CK(cublasLtCreate(&lt)); CK(cudaMalloc(&ws, wsB));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  struct L { const char* name; int64_t n, k; } layers[] = {{"70b.qkv", 160, 8192}, {"70b.o", 1024, 1024}, {"405b.down", 2048, 6656}, {"405b.qkv", 288, 16384}, {"70b.gate_up", 896, 8192}};
  const int P = 8;
  for (auto& Ly : layers) for (int64_t M : {64, 256, 1024, 4096}) {
    const int64_t n = Ly.n, k = Ly.k, blk = M / P;
    void *X, *W, *D1, *D2; std::vector<void*> xs(P);
    CK(cudaMalloc(&X, M * k * 2)); CK(cudaMalloc(&W, n * k * 2)); CK(cudaMalloc(&D1, M * n * 2)); CK(cudaMalloc(&D2, M * n * 2));
    // pseudo-random bf16 in [-1,1): fill via host
    std::vector<uint16_t> hx(M * k), hw(n * k);
    uint32_t st = 12345 + rank;
    auto rnd = [&] { st = st * 1664525u + 1013904223u; float f = ((st >> 8) & 0xFFFF) / 32768.0f - 1.0f; uint32_t u; memcpy(&u, &f, 4); return (uint16_t)(u >> 16); };
    for (auto& v : hx) v = rnd(); for (auto& v : hw) v = rnd();
    CK(cudaMemcpy(X, hx.data(), M * k * 2, cudaMemcpyHostToDevice)); CK(cudaMemcpy(W, hw.data(), n * k * 2, cudaMemcpyHostToDevice));
    for (int i = 0; i < P; ++i) { CK(cudaMalloc(&xs[i], blk * k * 2 + 4096)); CK(cudaMemcpy(xs[i], (char*)X + i * blk * k * 2, blk * k * 2, cudaMemcpyDeviceToDevice)); }
    void** arr; CK(cudaMalloc(&arr, 3 * P * sizeof(void*)));
    std::vector<void*> h(3 * P);
    for (int i = 0; i < P; ++i) { h[i] = W; h[P + i] = xs[i]; h[2 * P + i] = (char*)D2 + i * blk * n * 2; }
    CK(cudaMemcpy(arr, h.data(), 3 * P * sizeof(void*), cudaMemcpyHostToDevice));
    G one = make(n, M, k, 1, false), pa = make(n, blk, k, P, true), sm = make(n, blk, k, 1, false);
    float a1 = 1, b0 = 0;
    auto runOne = [&] { CK(cublasLtMatmul(lt, one.d, &a1, W, one.a, X, one.b, &b0, D1, one.c, D1, one.c, &one.algo, ws, wsB, s)); };
    auto runPtr = [&] { CK(cublasLtMatmul(lt, pa.d, &a1, arr, pa.a, arr + P, pa.b, &b0, arr + 2 * P, pa.c, arr + 2 * P, pa.c, &pa.algo, ws, wsB, s)); };
    auto runSep = [&] { for (int i = 0; i < P; ++i) { void* d = (char*)D2 + i * blk * n * 2; CK(cublasLtMatmul(lt, sm.d, &a1, W, sm.a, xs[i], sm.b, &b0, d, sm.c, d, sm.c, &sm.algo, ws, wsB, s)); } };
    auto time = [&](auto f) { for (int i = 0; i < 3; ++i) f(); cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1); cudaEventRecord(e0, s); for (int i = 0; i < 20; ++i) f(); cudaEventRecord(e1, s); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); return 1000 * ms / 20; };
    double tOne = one.ok ? time(runOne) : -1, tPtr = -1, tSep = sm.ok ? time(runSep) : -1;
    double err = -1;
    if (pa.ok) {
      CK(cudaMemset(D2, 0xFF, M * n * 2)); runPtr(); CK(cudaStreamSynchronize(s));
      std::vector<uint16_t> d1(M * n), d2(M * n);
      runOne(); CK(cudaStreamSynchronize(s));
      CK(cudaMemcpy(d1.data(), D1, M * n * 2, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(d2.data(), D2, M * n * 2, cudaMemcpyDeviceToHost));
      err = 0; for (size_t i = 0; i < d1.size(); ++i) { uint32_t u1 = (uint32_t)d1[i] << 16, u2 = (uint32_t)d2[i] << 16; float f1, f2; memcpy(&f1, &u1, 4); memcpy(&f2, &u2, 4); double e = fabs(f1 - f2) / (fabs(f1) + 1); if (!(e <= 1e30)) e = 1e30; if (e > err) err = e; }
      tPtr = time(runPtr);
    }
    if (rank == 0) printf("%-12s M=%5ld one %8.1f  ptr8 %8.1f  sep8 %8.1f us   ptr maxrelerr %.3g\n", Ly.name, (long)M, tOne, tPtr, tSep, err);
    fflush(stdout);
    for (auto p : xs) cudaFree(p); cudaFree(X); cudaFree(W); cudaFree(D1); cudaFree(D2); cudaFree(arr);
  }
  return 0;
}
