// SPDX-License-Identifier: MIT
// The one portability header of the GPU backend. Sources are written in HIP C++; on AMD this
// header includes the HIP runtime, on NVIDIA it maps the HIP names we use onto CUDA. Debian's
// HIP-on-NVIDIA headers do not build against CUDA 13, hence a small mapping of our own: only the
// calls this project uses are mapped, so a new call fails to compile on NVIDIA until it is added
// here (deliberately: every mapping is then reviewed once).
//
// Host code (g++) sees the runtime API only. Device code (nvcc -x cu / hipcc) additionally gets
// the memory-model helpers at the end: acquire/release on 64-bit flags at system scope (peers on
// other GPUs) or device scope (peers that are other processes on this GPU: MPS partitions), LL
// packet stores/loads, L2-only loads for data a peer wrote, and a timer for bounded waits.
//
// HIP: must build with Debian 12's hipcc (ROCm 5.2, clang 15) as well as ROCm >= 6, so anything
// newer than 5.2 is guarded by HIP_VERSION (tests/gpu/check_hip_compile.sh checks both targets).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(STARSCREAM_GPU_HIP) || defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__)
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <hip/hip_runtime.h>
#define SSC_GPU_IS_HIP 1
#else
#include <cuda.h>  // types of the driver calls reached through cudaGetDriverEntryPointByVersion
#include <cuda_runtime.h>
#define SSC_GPU_IS_CUDA 1

using hipError_t = cudaError_t;
using hipStream_t = cudaStream_t;
using hipEvent_t = cudaEvent_t;
using hipIpcMemHandle_t = cudaIpcMemHandle_t;
using hipDeviceProp_t = cudaDeviceProp;
using hipPointerAttribute_t = cudaPointerAttributes;

#define hipSuccess cudaSuccess
#define hipErrorNoDevice cudaErrorNoDevice
#define hipErrorInsufficientDriver cudaErrorInsufficientDriver
#define hipGetErrorString cudaGetErrorString
#define hipGetErrorName cudaGetErrorName
#define hipGetLastError cudaGetLastError
#define hipGetDeviceCount cudaGetDeviceCount
#define hipGetDevice cudaGetDevice
#define hipDriverGetVersion cudaDriverGetVersion
#define hipSetDevice cudaSetDevice
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipDeviceGetAttribute cudaDeviceGetAttribute
#define hipDeviceAttributeMultiprocessorCount cudaDevAttrMultiProcessorCount
#define hipDeviceAttributePageableMemoryAccess cudaDevAttrPageableMemoryAccess
#define hipPointerGetAttributes cudaPointerGetAttributes
#define hipMemoryTypeHost cudaMemoryTypeHost
#define hipMemoryTypeDevice cudaMemoryTypeDevice
#define hipMemoryTypeManaged cudaMemoryTypeManaged
#define hipDeviceGetPCIBusId cudaDeviceGetPCIBusId
#define hipDeviceCanAccessPeer cudaDeviceCanAccessPeer
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipMallocAsync cudaMallocAsync
#define hipFreeAsync cudaFreeAsync
#define hipMemset cudaMemset
#define hipMemsetAsync cudaMemsetAsync
#define hipMemcpy cudaMemcpy
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemcpy2DAsync cudaMemcpy2DAsync
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipMemcpyDefault cudaMemcpyDefault
#define hipHostMalloc(ptr, bytes, flags) cudaHostAlloc(ptr, bytes, flags)
#define hipHostMallocMapped cudaHostAllocMapped
#define hipHostMallocDefault cudaHostAllocDefault
#define hipHostFree cudaFreeHost
#define hipHostGetDevicePointer cudaHostGetDevicePointer
#define hipStreamCreateWithFlags cudaStreamCreateWithFlags
#define hipStreamNonBlocking cudaStreamNonBlocking
#define hipStreamSynchronize cudaStreamSynchronize
#define hipStreamDestroy cudaStreamDestroy
#define hipEventCreate cudaEventCreate
#define hipEventRecord cudaEventRecord
#define hipEventSynchronize cudaEventSynchronize
#define hipEventElapsedTime cudaEventElapsedTime
#define hipEventDestroy cudaEventDestroy
#define hipEventCreateWithFlags cudaEventCreateWithFlags
#define hipEventDisableTiming cudaEventDisableTiming
#define hipStreamWaitEvent cudaStreamWaitEvent
#define hipIpcGetMemHandle cudaIpcGetMemHandle
#define hipIpcOpenMemHandle cudaIpcOpenMemHandle
#define hipIpcCloseMemHandle cudaIpcCloseMemHandle
#define hipIpcMemLazyEnablePeerAccess cudaIpcMemLazyEnablePeerAccess
#define hipOccupancyMaxActiveBlocksPerMultiprocessor cudaOccupancyMaxActiveBlocksPerMultiprocessor
#define hipFuncSetAttribute cudaFuncSetAttribute
#define hipFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define hipLaunchKernel cudaLaunchKernel
#define hipErrorAlreadyMapped cudaErrorAlreadyMapped
#define hipEventQuery cudaEventQuery
#define hipErrorNotReady cudaErrorNotReady
#define hipErrorNotSupported cudaErrorNotSupported
#define hipStreamQuery cudaStreamQuery
#define hipStreamCaptureStatus cudaStreamCaptureStatus
#define hipStreamCaptureStatusNone cudaStreamCaptureStatusNone
#define hipStreamIsCapturing cudaStreamIsCapturing
#define hipStreamCaptureMode cudaStreamCaptureMode
#define hipStreamCaptureModeRelaxed cudaStreamCaptureModeRelaxed
#define hipThreadExchangeStreamCaptureMode cudaThreadExchangeStreamCaptureMode
#define hipStreamCaptureStatusActive cudaStreamCaptureStatusActive
#define hipGraph_t cudaGraph_t
#define hipGraphExec_t cudaGraphExec_t
#define hipStreamCaptureModeGlobal cudaStreamCaptureModeGlobal
#define hipStreamBeginCapture cudaStreamBeginCapture
#define hipStreamEndCapture cudaStreamEndCapture
#define hipGraphInstantiateWithFlags cudaGraphInstantiateWithFlags
#define hipGraphLaunch cudaGraphLaunch
#define hipGraphExecDestroy cudaGraphExecDestroy
#define hipGraphDestroy cudaGraphDestroy
#define hipUserObject_t cudaUserObject_t
#define hipUserObjectCreate cudaUserObjectCreate
#define hipUserObjectNoDestructorSync cudaUserObjectNoDestructorSync
#define hipGraphRetainUserObject cudaGraphRetainUserObject
#define hipGraphUserObjectMove cudaGraphUserObjectMove
// CUDA 13 folded the _v2 capture query into cudaStreamGetCaptureInfo (edge data added).
#if CUDART_VERSION >= 13000
#define hipStreamGetCaptureInfo_v2(s, status, id, graph, deps, ndeps) \
  cudaStreamGetCaptureInfo((s), (status), (id), (graph), (deps), nullptr, (ndeps))
#else
#define hipStreamGetCaptureInfo_v2 cudaStreamGetCaptureInfo_v2
#endif
#endif

// The vendor BLAS (src/ops/gemm): hipBLASLt on AMD, cuBLASLt on NVIDIA, used through the
// hipBLASLt names. Only where the build found the library (cmake/GpuBackend.cmake defines
// STARSCREAM_HAVE_BLASLT and links CUDA::cublasLt or roc::hipblaslt); without it the GEMM ops
// refuse at run time. HIP: ROCm >= 6 names (hipDataType, hipblasComputeType_t).
#if defined(STARSCREAM_HAVE_BLASLT)
#if defined(SSC_GPU_IS_HIP)
#include <hipblaslt/hipblaslt.h>
inline const char* sscBlasStatusString(hipblasStatus_t s) {
  switch (s) {
    case HIPBLAS_STATUS_SUCCESS: return "success";
    case HIPBLAS_STATUS_NOT_SUPPORTED: return "not supported";
    case HIPBLAS_STATUS_INVALID_VALUE: return "invalid value";
    case HIPBLAS_STATUS_ALLOC_FAILED: return "allocation failed";
    default: return "hipBLASLt error";
  }
}
#else
#include <cublasLt.h>
using hipblasStatus_t = cublasStatus_t;
using hipblasLtHandle_t = cublasLtHandle_t;
using hipblasLtMatmulDesc_t = cublasLtMatmulDesc_t;
using hipblasLtMatrixLayout_t = cublasLtMatrixLayout_t;
using hipblasLtMatmulPreference_t = cublasLtMatmulPreference_t;
using hipblasLtMatmulHeuristicResult_t = cublasLtMatmulHeuristicResult_t;
using hipblasLtMatmulAlgo_t = cublasLtMatmulAlgo_t;
using hipblasOperation_t = cublasOperation_t;
using hipDataType = cudaDataType_t;
#define HIPBLAS_STATUS_SUCCESS CUBLAS_STATUS_SUCCESS
#define HIPBLAS_OP_N CUBLAS_OP_N
#define HIPBLAS_OP_T CUBLAS_OP_T
#define HIPBLAS_COMPUTE_32F CUBLAS_COMPUTE_32F
#define HIP_R_16F CUDA_R_16F
#define HIP_R_16BF CUDA_R_16BF
#define HIP_R_32F CUDA_R_32F
#define HIPBLASLT_MATMUL_DESC_TRANSA CUBLASLT_MATMUL_DESC_TRANSA
#define HIPBLASLT_MATMUL_DESC_TRANSB CUBLASLT_MATMUL_DESC_TRANSB
#define HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT
#define HIPBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET
#define HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
#define hipblasLtCreate cublasLtCreate
#define hipblasLtDestroy cublasLtDestroy
#define hipblasLtMatmulDescCreate cublasLtMatmulDescCreate
#define hipblasLtMatmulDescDestroy cublasLtMatmulDescDestroy
#define hipblasLtMatmulDescSetAttribute cublasLtMatmulDescSetAttribute
#define hipblasLtMatrixLayoutCreate cublasLtMatrixLayoutCreate
#define hipblasLtMatrixLayoutDestroy cublasLtMatrixLayoutDestroy
#define hipblasLtMatrixLayoutSetAttribute cublasLtMatrixLayoutSetAttribute
#define hipblasLtMatmulPreferenceCreate cublasLtMatmulPreferenceCreate
#define hipblasLtMatmulPreferenceDestroy cublasLtMatmulPreferenceDestroy
#define hipblasLtMatmulPreferenceSetAttribute cublasLtMatmulPreferenceSetAttribute
#define hipblasLtMatmulAlgoGetHeuristic cublasLtMatmulAlgoGetHeuristic
#define hipblasLtMatmul cublasLtMatmul
inline const char* sscBlasStatusString(cublasStatus_t s) { return cublasLtGetStatusString(s); }
// Pointer-array batches (each batch entry's matrices anywhere, read from device arrays of
// pointers): cuBLASLt's CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, present in the CUDA 13 headers this
// was built and measured with. hipBLASLt's equivalent
// (HIPBLASLT_MATRIX_LAYOUT_BATCH_MODE, newer ROCm) is not wired: without SSC_BLAS_POINTER_ARRAY
// the per-rank all-gather runs one GEMM per peer, as before.
#if CUBLAS_VER_MAJOR >= 13
#define SSC_BLAS_POINTER_ARRAY 1
#define HIPBLASLT_MATRIX_LAYOUT_BATCH_MODE CUBLASLT_MATRIX_LAYOUT_BATCH_MODE
#define HIPBLASLT_BATCH_MODE_POINTER_ARRAY CUBLASLT_BATCH_MODE_POINTER_ARRAY
#endif
#endif
#endif  // STARSCREAM_HAVE_BLASLT

// The device's 16 UUID bytes (every MPS client of one GPU sees the same). ROCm 5.2's
// hipDeviceProp_t has no uuid field; hipDeviceGetUuid is in ROCm 5.2 and 6.
inline bool sscDeviceUuid(int device, unsigned char out[16]) {
#if defined(SSC_GPU_IS_HIP)
  hipUUID u;
  if (hipDeviceGetUuid(&u, device) != hipSuccess) return false;
  std::memcpy(out, u.bytes, 16);
#else
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) return false;
  std::memcpy(out, p.uuid.bytes, 16);
#endif
  return true;
}

// The device allocation behind a pointer, for exporting it to peers: its start, size and the
// runtime's buffer id (unique for the process's lifetime, so a freed and re-made allocation at
// the same address is told apart). False for memory that is not a legacy (hipMalloc/cudaMalloc)
// device allocation, which IPC handles cannot export (host memory, VMM/expandable segments).
// CUDA: the driver's cuPointerGetAttributes, found through the runtime's entry-point query so the
// library does not link libcuda (host-only programs load it on machines without a driver).
inline bool sscPointerRange(const void* p, uintptr_t* base, size_t* bytes, uint64_t* id) {
#if defined(SSC_GPU_IS_HIP)
  hipDeviceptr_t start = nullptr;
  size_t size = 0;
  unsigned long long buffer = 0;
  hipPointerAttribute_t attr;
#if HIP_VERSION_MAJOR >= 6
  const auto typeOf = [](const hipPointerAttribute_t& a) { return a.type; };
#else  // ROCm 5.2 names the field memoryType
  const auto typeOf = [](const hipPointerAttribute_t& a) { return a.memoryType; };
#endif
  if (hipPointerGetAttributes(&attr, p) != hipSuccess || typeOf(attr) != hipMemoryTypeDevice ||
      hipPointerGetAttribute(&start, HIP_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                             reinterpret_cast<hipDeviceptr_t>(const_cast<void*>(p))) !=
          hipSuccess ||
      hipPointerGetAttribute(&size, HIP_POINTER_ATTRIBUTE_RANGE_SIZE,
                             reinterpret_cast<hipDeviceptr_t>(const_cast<void*>(p))) !=
          hipSuccess ||
      hipPointerGetAttribute(&buffer, HIP_POINTER_ATTRIBUTE_BUFFER_ID,
                             reinterpret_cast<hipDeviceptr_t>(const_cast<void*>(p))) !=
          hipSuccess) {
    (void)hipGetLastError();
    return false;
  }
  *base = reinterpret_cast<uintptr_t>(start);
  *bytes = size;
  *id = buffer;
  return true;
#else
  using GetAttributes = CUresult (*)(unsigned, CUpointer_attribute*, void**, CUdeviceptr);
  static const GetAttributes get = []() -> GetAttributes {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuPointerGetAttributes", &fn, 12000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    return reinterpret_cast<GetAttributes>(fn);
  }();
  if (get == nullptr) return false;
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                 CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                 CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE};
  unsigned type = 0;
  CUdeviceptr start = 0;
  size_t size = 0;
  unsigned long long buffer = 0;
  int ipc = 0;
  void* data[] = {&type, &start, &size, &buffer, &ipc};
  if (get(5, attrs, data, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS ||
      type != CU_MEMORYTYPE_DEVICE || ipc == 0 || size == 0)
    return false;
  *base = static_cast<uintptr_t>(start);
  *bytes = size;
  *id = buffer;
  return true;
#endif
}

// Ties `destroy(ptr)` to the graph `stream` is being captured into: the runtime calls it (on one
// of its own threads, where no runtime call is allowed) once that graph and every executable
// graph made from it are destroyed and their launches are done, as NCCL ties its buffer
// registrations to a graph. False, with destroy never called, where `stream` is not capturing
// or the runtime cannot (ROCm before 5.3; a user object created but not retained is leaked).
inline bool sscRetainUntilGraphDestroyed(hipStream_t stream, void* ptr, void (*destroy)(void*)) {
#if defined(SSC_GPU_IS_HIP) && HIP_VERSION < 50300000
  (void)stream, (void)ptr, (void)destroy;
  return false;
#else
  hipStreamCaptureStatus status = hipStreamCaptureStatusNone;
  hipGraph_t graph = nullptr;
  hipUserObject_t object = nullptr;
  if (hipStreamGetCaptureInfo_v2(stream, &status, nullptr, &graph, nullptr, nullptr) !=
          hipSuccess ||
      status != hipStreamCaptureStatusActive || graph == nullptr ||
      hipUserObjectCreate(&object, ptr, destroy, 1, hipUserObjectNoDestructorSync) != hipSuccess ||
      hipGraphRetainUserObject(graph, object, 1, hipGraphUserObjectMove) != hipSuccess) {
    (void)hipGetLastError();
    return false;
  }
  return true;
#endif
}

// Ticks per second of the clock sscGpuTimer() reads in kernels: CUDA's %globaltimer counts
// nanoseconds; AMD's wall_clock64() runs at the device's (constant) wall-clock rate.
inline double sscGpuTimerTicksPerSecond(int device) {
#if defined(SSC_GPU_IS_HIP)
  int kHz = 0;
#if HIP_VERSION_MAJOR >= 6  // the attribute is missing from ROCm 5.2's headers
  if (hipDeviceGetAttribute(&kHz, hipDeviceAttributeWallClockRate, device) != hipSuccess) kHz = 0;
#else
  (void)device;
#endif
  if (kHz <= 0) kHz = 100000;  // gfx9 (MI200/MI300) runs s_memrealtime at 100 MHz
  return kHz * 1000.0;
#else
  (void)device;
  return 1e9;
#endif
}

// Stream memory operations: the stream itself, no kernel and no SM, waits until the 32-bit word
// at `addr` (device memory, a peer's mapped through IPC included) has reached `value`, or writes
// `value` there once the stream's earlier work is done. CUDA: cuStreamWaitValue32 (GEQ: the
// difference read as int32 is >= 0, so counters may wrap) and cuStreamWriteValue32, through the
// runtime's entry-point query (the library does not link libcuda); HIP: hipStreamWaitValue32
// (Gte, unsigned; the docs ask for the word in signal memory: hipExtMallocWithFlags with
// hipMallocSignalMemory) and hipStreamWriteValue32. hipErrorNotSupported (CUDA:
// cudaErrorNotSupported) where the driver lacks them.
#if defined(SSC_GPU_IS_HIP)
inline hipError_t sscStreamWaitValueGeq32(hipStream_t stream, uint32_t* addr, uint32_t value) {
  return hipStreamWaitValue32(stream, addr, value, hipStreamWaitValueGte, 0xFFFFFFFFu);
}
inline hipError_t sscStreamWriteValue32(hipStream_t stream, uint32_t* addr, uint32_t value) {
  return hipStreamWriteValue32(stream, addr, value, 0);
}
#else
namespace ssc_detail {
using StreamValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
inline StreamValue32 streamValueCall(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<StreamValue32>(fn);
}
inline hipError_t streamValueResult(CUresult r) {
  return r == CUDA_SUCCESS               ? cudaSuccess
         : r == CUDA_ERROR_NOT_SUPPORTED ? cudaErrorNotSupported
                                         : cudaErrorUnknown;
}
}  // namespace ssc_detail
inline hipError_t sscStreamWaitValueGeq32(hipStream_t stream, uint32_t* addr, uint32_t value) {
  static const ssc_detail::StreamValue32 wait = ssc_detail::streamValueCall("cuStreamWaitValue32");
  if (wait == nullptr) return cudaErrorNotSupported;
  return ssc_detail::streamValueResult(wait(reinterpret_cast<CUstream>(stream),
                                            reinterpret_cast<CUdeviceptr>(addr), value,
                                            CU_STREAM_WAIT_VALUE_GEQ));
}
inline hipError_t sscStreamWriteValue32(hipStream_t stream, uint32_t* addr, uint32_t value) {
  static const ssc_detail::StreamValue32 write =
      ssc_detail::streamValueCall("cuStreamWriteValue32");
  if (write == nullptr) return cudaErrorNotSupported;
  return ssc_detail::streamValueResult(write(reinterpret_cast<CUstream>(stream),
                                             reinterpret_cast<CUdeviceptr>(addr), value,
                                             CU_STREAM_WRITE_VALUE_DEFAULT));
}
#endif

// Several of the two operations above as one submission, in order: each wait (write false) as
// sscStreamWaitValueGeq32, each write as sscStreamWriteValue32. Why: under MPS at 8 clients of
// the H200 one stream memory operation costs 5-9 us of the stream's time (perf/sm_free.cu
// measures it), so a protocol of 2K of them per call pays for K of them submitted alone. CUDA:
// cuStreamBatchMemOp (at most kStreamValueBatch operations); HIP: one call per operation.
struct SscStreamValueOp {
  uint32_t* addr;
  uint32_t value;
  bool write;
};
constexpr int kStreamValueBatch = 256;
inline hipError_t sscStreamBatchValue32(hipStream_t stream, const SscStreamValueOp* ops,
                                        int count) {
  if (count <= 0) return hipSuccess;
#if defined(SSC_GPU_IS_HIP)
  for (int i = 0; i < count; ++i) {
    const hipError_t e = ops[i].write ? sscStreamWriteValue32(stream, ops[i].addr, ops[i].value)
                                      : sscStreamWaitValueGeq32(stream, ops[i].addr, ops[i].value);
    if (e != hipSuccess) return e;
  }
  return hipSuccess;
#else
  using Batch = CUresult (*)(CUstream, unsigned int, CUstreamBatchMemOpParams*, unsigned int);
  static const Batch batch = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuStreamBatchMemOp", &fn, 12000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return static_cast<Batch>(nullptr);
    }
    return reinterpret_cast<Batch>(fn);
  }();
  if (batch == nullptr || count > kStreamValueBatch) return cudaErrorNotSupported;
  CUstreamBatchMemOpParams params[kStreamValueBatch];
  std::memset(params, 0, sizeof(CUstreamBatchMemOpParams) * count);
  for (int i = 0; i < count; ++i) {
    if (ops[i].write) {
      params[i].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
      params[i].writeValue.address = reinterpret_cast<CUdeviceptr>(ops[i].addr);
      params[i].writeValue.value = ops[i].value;
      params[i].writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
    } else {
      params[i].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
      params[i].waitValue.address = reinterpret_cast<CUdeviceptr>(ops[i].addr);
      params[i].waitValue.value = ops[i].value;
      params[i].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
    }
  }
  return ssc_detail::streamValueResult(
      batch(reinterpret_cast<CUstream>(stream), static_cast<unsigned>(count), params, 0));
#endif
}

// Programmatic dependent launch (CUDA, sm_90+): the kernel is launched as soon as every block of
// the one before it in the stream has exited, without waiting for that kernel's completion to
// be signalled, and its blocks wait in sscGridDependencyWait() until that kernel's memory is
// visible. A chain of short kernels then pays less than a full launch between them (under MPS at
// 16 SMs a rank, 4 empty kernels: 31.7-32.8 us plain, 14.6-17.8 us dependent). A kernel launched
// this way must call sscGridDependencyWait() before it reads or writes anything an earlier launch
// in the stream touches. No kernel of ours triggers its dependents early (griddepcontrol.
// launch_dependents): measured on the sharded decode at batch 8-32, blocks of the next kernel
// resident early made the step up to 32 % slower than plain launches, where the exit-time launch
// is never slower. HIP, and GPUs before sm_90: a plain launch.
inline hipError_t sscLaunchDependent(const void* fn, dim3 grid, dim3 block, void** args,
                                     size_t smem, hipStream_t stream) {
#if defined(SSC_GPU_IS_CUDA)
  static const bool supported = [] {
    int device = 0, major = 0;
    return cudaGetDevice(&device) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) ==
               cudaSuccess &&
           major >= 9;
  }();
  // Inside a stream capture the launch stays plain: a graph's replays pay no launch per kernel
  // to hide, and captured programmatic edges have not been tested here.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (supported && cudaStreamIsCapturing(stream, &capture) == cudaSuccess &&
      capture == cudaStreamCaptureStatusNone) {
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    return cudaLaunchKernelExC(&cfg, fn, args);
  }
#endif
  return hipLaunchKernel(fn, grid, block, args, smem, stream);
}

#if defined(__CUDACC__) || defined(__HIPCC__)
// ---------------------------------------------------------------- device-side helpers

// Kernels take their (kilobyte-sized) argument struct by reference internally; on CUDA that
// forces a per-thread local copy of the whole parameter block unless the parameter is
// __grid_constant__ (sm_70+, CUDA 11.7+). HIP passes kernel arguments in memory anyway.
#if defined(SSC_GPU_IS_CUDA)
#define SSC_GRID_CONSTANT __grid_constant__
#else
#define SSC_GRID_CONSTANT
#endif

// The device side of sscLaunchDependent: wait until the kernels before this one in the stream
// have finished and their memory is visible (a no-op when it was launched plainly).
__device__ __forceinline__ void sscGridDependencyWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Flags are 64-bit counters written by one side and polled by the other, in another process
// and possibly on another GPU: acquire/release at system scope, so the data written before a
// release is visible to whoever acquires the new value.
__device__ __forceinline__ uint64_t sscLoadAcquireSys(const uint64_t* p) {
#if defined(SSC_GPU_IS_HIP)
  return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM);
#else
  uint64_t v;
  asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
#endif
}

__device__ __forceinline__ void sscStoreReleaseSys(uint64_t* p, uint64_t v) {
#if defined(SSC_GPU_IS_HIP)
  __hip_atomic_store(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_SYSTEM);
#else
  asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#endif
}

// The same at device scope: enough when every peer runs on this GPU (MPS partitions are other
// processes, but their threads execute on the same device and meet in its L2, which is what
// .gpu scope covers), and much cheaper than a system-scope fence, which waits for writes to
// become visible to the host and other GPUs.
__device__ __forceinline__ uint64_t sscLoadAcquireGpu(const uint64_t* p) {
#if defined(SSC_GPU_IS_HIP)
  return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT);
#else
  uint64_t v;
  asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
#endif
}

__device__ __forceinline__ void sscStoreReleaseGpu(uint64_t* p, uint64_t v) {
#if defined(SSC_GPU_IS_HIP)
  __hip_atomic_store(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT);
#else
  asm volatile("st.release.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#endif
}

// A relaxed load that is never served from a stale L1 line: polling loops and data a peer (or
// another block) wrote go through it.
__device__ __forceinline__ uint64_t sscLoadVolatile(const uint64_t* p) {
  return *reinterpret_cast<const volatile uint64_t*>(p);
}

// 16-byte load that bypasses L1 (the L1 is not coherent with peers' writes). AMD's vL1D is
// write-through and invalidated by acquire fences, so a plain load is right there.
template <class T>
__device__ __forceinline__ T sscLoadCg(const T* p) {
#if defined(SSC_GPU_IS_HIP)
  return *p;
#else
  return __ldcg(p);
#endif
}

// A pause of a few hundred nanoseconds between two polls of a flag that did not yet hold its
// value, so that waiting blocks do not take issue slots and L2 bandwidth from the blocks that
// are still computing (on this rank, or on another MPS partition sharing the SMs).
__device__ __forceinline__ void sscPollPause() {
#if defined(SSC_GPU_IS_HIP)
  __builtin_amdgcn_s_sleep(4);  // 4 x 64 clocks
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  __nanosleep(256);
#endif
}

__device__ __forceinline__ uint64_t sscGpuTimer() {
#if defined(SSC_GPU_IS_HIP)
#if defined(__GFX9__) || !defined(__HIP_DEVICE_COMPILE__)
  // gfx90a/gfx94x (and the host pass, which only parses this): wall_clock64() is not in ROCm 5.2.
  return __builtin_amdgcn_s_memrealtime();
#else
  return wall_clock64();
#endif
#else
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#endif
}
#endif  // device compilers
