// SPDX-License-Identifier: MIT
// The launches of the symmetric executor's kernels for one data type. Device code, included by
// sym_kernel.cu (the dispatch on the call's type) and sym_kernel_dtype.cu (one data type's
// kernels per translation unit).
#pragma once

#include <cstdint>

// The portability header first: under HIP it defines what the device headers use
// (__forceinline__ and the runtime types).
#include "src/platform/gpu_runtime.h"
#include "src/kernels/gpu/elementwise.h"
#include "src/kernels/gpu/ll_kernel.cuh"
#include "src/kernels/gpu/sym_bulk.cuh"
#include "src/kernels/gpu/sym_kernel.h"
#include "src/kernels/gpu/sym_unaligned.cuh"

namespace ssc::gpu {

// Launches the bulk kernel (ll = false) or the LL one-shot (ll = true) for sscDataType_t value
// kDtype; returns the runtime's error code (0 = success). Defined in sym_kernel_dtype.cu.
template <int kDtype>
int symLaunchForDtype(const SymArgs& args, int blocks, void* stream, bool ll);

// The element traits of each sscDataType_t value.
template <int kDtype>
struct TraitsOf;
template <>
struct TraitsOf<0> {
  using T = NativeTraits<int8_t>;
};
template <>
struct TraitsOf<1> {
  using T = NativeTraits<uint8_t>;
};
template <>
struct TraitsOf<2> {
  using T = NativeTraits<int32_t>;
};
template <>
struct TraitsOf<3> {
  using T = NativeTraits<uint32_t>;
};
template <>
struct TraitsOf<4> {
  using T = NativeTraits<int64_t>;
};
template <>
struct TraitsOf<5> {
  using T = NativeTraits<uint64_t>;
};
template <>
struct TraitsOf<6> {
  using T = HalfTraits;
};
template <>
struct TraitsOf<7> {
  using T = NativeTraits<float>;
};
template <>
struct TraitsOf<8> {
  using T = NativeTraits<double>;
};
template <>
struct TraitsOf<9> {
  using T = Bf16Traits;
};
template <>
struct TraitsOf<10> {
  using T = Fp8Traits<conv::Fp8E4M3>;
};
template <>
struct TraitsOf<11> {
  using T = Fp8Traits<conv::Fp8E5M2>;
};

namespace {

template <class Tr, int kKind>
struct BulkLauncher {
  static void launch(dim3 g, dim3 b, hipStream_t st, const SymArgs& a) {
    if (!symVectorAligned(a)) {  // the grid the replaced kernel was sized for, its block size
      symUnalignedKernel<Tr, kKind>
          <<<g, symUsesPushKernel(a) ? dim3(kSymPushThreads) : b, 0, st>>>(a);
      return;
    }
    if (symUsesPushKernel(a)) {  // the host sized the grid for it (gpu_symmetric.cc)
      // A traced call runs the push kernel's timed instantiation (sym_bulk.cuh).
      if (a.timing.slot != nullptr)
        symPushKernel<Tr, true><<<g, dim3(kSymPushThreads), 0, st>>>(a);
      else
        symPushKernel<Tr, false><<<g, dim3(kSymPushThreads), 0, st>>>(a);
      return;
    }
    switch (symReductionOp(a)) {
      case kOpPeerReduce: reduceLaunch<kOpPeerReduce>(g, b, st, a); break;
      case kOpPeerReduceBcast: reduceLaunch<kOpPeerReduceBcast>(g, b, st, a); break;
      default: symKernel<Tr, kKind, 0, kAnyDataOp><<<g, b, 0, st>>>(a); break;
    }
  }
  // Separate instantiations for few ranks, so their wider loops do not raise the register
  // pressure (and spill) of the one that serves more.
  template <int kOp>
  static void reduceLaunch(dim3 g, dim3 b, hipStream_t st, const SymArgs& a) {
    if (a.nranks <= 2)
      symKernel<Tr, kKind, 2, kOp><<<g, b, 0, st>>>(a);
    else if (a.nranks <= 4)  // structural limit
      symKernel<Tr, kKind, 4, kOp><<<g, b, 0, st>>>(a);
    else
      symKernel<Tr, kKind, 0, kOp><<<g, b, 0, st>>>(a);
  }
};

template <class Tr, int kKind>
struct LLLauncher {
  static void launch(dim3 g, dim3 b, hipStream_t st, const SymArgs& a) {
    llAllReduceKernel<Tr, kKind><<<g, b, 0, st>>>(a);
  }
};

template <template <class, int> class K, int kThreads, class Tr>
int launchFor(const SymArgs& args, int blocks, hipStream_t stream) {
  const dim3 grid(blocks), block(kThreads);
  switch (args.reduce.kind) {
    case 0: K<Tr, 0>::launch(grid, block, stream, args); break;
    case 1: K<Tr, 1>::launch(grid, block, stream, args); break;
    case 2: K<Tr, 2>::launch(grid, block, stream, args); break;
    default: K<Tr, 3>::launch(grid, block, stream, args); break;
  }
  return static_cast<int>(hipGetLastError());
}

}  // namespace
}  // namespace ssc::gpu
