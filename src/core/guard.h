// SPDX-License-Identifier: MIT
// The exception barrier of a C entry point: runs the body and hands any C++ exception to the
// caller's handler, which records it and makes the result, so nothing unwinds across the C ABI.
// One skeleton for libstarscream's entry points (guarded in src/api/api.h) and the NCCL shim's
// (src/nccl/shim.h): they differ only in their result type and how they record a failure.
// Header only, so the shim uses it without holding any of this layer's objects.
#pragma once

#include <exception>
#include <new>

namespace ssc {

enum class Caught {
  kOutOfMemory,  // std::bad_alloc
  kException,    // another std::exception; its what() is passed along
  kUnknown,      // anything else
};

// `onCaught(kind, what)` returns the entry point's result; `what` is NULL but for kException.
// It runs inside the catch handler of a noexcept function, so it must not throw.
template <typename Body, typename OnCaught>
auto catchAll(Body&& body, OnCaught&& onCaught) noexcept -> decltype(body()) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return onCaught(Caught::kOutOfMemory, nullptr);
  } catch (const std::exception& e) {
    return onCaught(Caught::kException, e.what());
  } catch (...) {
    return onCaught(Caught::kUnknown, nullptr);
  }
}

}  // namespace ssc
