// SPDX-License-Identifier: MIT
#include "src/core/shared_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace ssc {

bool createSharedFile(const char* tag, size_t bytes, int* fd, void** map, std::string* why) {
  *fd = -1;
  *map = nullptr;
  const int f = memfd_create(tag, MFD_CLOEXEC);
  if (f < 0) {
    *why = fmt::format("memfd_create failed: {}", strerror(errno));
    return false;
  }
  if (ftruncate(f, static_cast<off_t>(bytes)) != 0) {
    *why = fmt::format("cannot size a {}-byte shared file: {}", bytes, strerror(errno));
    close(f);
    return false;
  }
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
  if (m == MAP_FAILED) {
    *why = fmt::format("cannot map a {}-byte shared file: {}", bytes, strerror(errno));
    close(f);
    return false;
  }
  *fd = f;
  *map = m;
  return true;
}

void* mapPeerFile(int pid, int fd, size_t bytes, std::string* why) {
  const std::string path = fmt::format("/proc/{}/fd/{}", pid, fd);
  const int f = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (f < 0) {
    *why = fmt::format("open({}) failed: {}", path, strerror(errno));
    return nullptr;
  }
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
  close(f);  // the mapping keeps the file alive
  if (m == MAP_FAILED) {
    *why = fmt::format("mapping {} bytes of {} failed: {}", bytes, path, strerror(errno));
    return nullptr;
  }
  return m;
}

}  // namespace ssc
