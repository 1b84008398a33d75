// SPDX-License-Identifier: MIT
#include "src/nccl/fallback.h"

#include <dlfcn.h>

#include <string>

#include "src/nccl/core_link.h"

namespace ssc::nccl {
namespace {

struct Vendor {
  bool active = false;     // forward everything
  void* handle = nullptr;  // NULL when active but the library could not be used
  std::string path;
  std::string error;  // why `handle` is NULL
};

// A symbol of this library, to recognise it: a fallback path that leads back to the shim
// (e.g. the nccl-compat/libnccl.so.2 link) would forward every call to itself forever.
void shimAnchor() {}

// Which backend Starscream runs on in this process, asked through the public API: the device
// of a one-rank communicator (-1 on the host backend).
bool starscreamRunsOnHost() {
  sscComm_t probe = nullptr;
  if (sscCommInitAll(&probe, 1, nullptr) != sscSuccess) {
    NCCL_SHIM_LOG(kWarn,
                  "NCCL shim: cannot probe the Starscream backend ({}); assuming the host "
                  "backend",
                  sscGetLastError(nullptr));
    return true;
  }
  int device = -1;
  sscResult_t r = sscCommDevice(probe, &device);
  sscCommDestroy(probe);
  return r != sscSuccess || device < 0;
}

Vendor load() {
  Vendor v;
  v.path = envString("STARSCREAM_NCCL_FALLBACK");
  if (v.path.empty()) return v;
  if (!starscreamRunsOnHost()) {
    NCCL_SHIM_LOG(kInfo,
                  "NCCL shim: STARSCREAM_NCCL_FALLBACK is set but Starscream runs on a GPU "
                  "backend here, so Starscream serves every call");
    return v;
  }
  v.active = true;
  // RTLD_LOCAL: the vendor's symbols must never satisfy anyone else's lookups (the
  // application's nccl* references belong to the shim). No RTLD_DEEPBIND: it gives the vendor
  // library its own view of malloc & co. (breaking allocator and sanitizer interposition), and
  // it is not needed: should the vendor call one of its own exported functions through the
  // PLT, that call reaches the shim, which in vendor mode forwards it straight back.
  (void)dlerror();
  v.handle = dlopen(v.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (v.handle == nullptr) {
    const char* why = dlerror();
    v.error = fmt::format("cannot load STARSCREAM_NCCL_FALLBACK={}: {}", v.path, why ? why : "?");
    return v;
  }
  void* version = dlsym(v.handle, "ncclGetVersion");
  Dl_info theirs{}, ours{};
  if (version == nullptr) {
    v.error = fmt::format(
        "STARSCREAM_NCCL_FALLBACK={} does not export ncclGetVersion: not an "
        "NCCL or RCCL library",
        v.path);
  } else if (dladdr(version, &theirs) != 0 &&
             dladdr(reinterpret_cast<void*>(&shimAnchor), &ours) != 0 &&
             theirs.dli_fbase == ours.dli_fbase) {
    v.error = fmt::format(
        "STARSCREAM_NCCL_FALLBACK={} is the Starscream shim itself; point it "
        "at the vendor's libnccl.so.2 or librccl.so.1",
        v.path);
  }
  if (!v.error.empty()) {
    dlclose(v.handle);
    v.handle = nullptr;
    return v;
  }
  NCCL_SHIM_LOG(kInfo,
                "NCCL shim: Starscream runs on its host backend here; forwarding every nccl* "
                "call to {}",
                v.path);
  return v;
}

const Vendor& vendor() {
  static const Vendor v = load();
  return v;
}

}  // namespace

bool vendorMode() { return vendor().active; }

void* vendorSymbol(const char* name) {
  const Vendor& v = vendor();
  return v.handle != nullptr ? dlsym(v.handle, name) : nullptr;
}

ncclResult_t vendorMissing(const char* fn) {
  const Vendor& v = vendor();
  if (v.handle == nullptr) return fail(ncclSystemError, "{}: {}", fn, v.error);
  return fail(ncclInvalidUsage, "{}: the fallback library {} does not provide {}", fn, v.path, fn);
}

}  // namespace ssc::nccl
