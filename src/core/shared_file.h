// SPDX-License-Identifier: MIT
// Memory shared between processes of one host without a name: an anonymous file (memfd) that
// other processes of the same user open as /proc/<pid>/fd/<fd>. Nothing appears in /dev/shm, so
// a process killed at any moment leaves nothing behind. Used by the host transport's segments,
// the host backend's sscMemAlloc memory and the node's shared call table.
#pragma once

#include <cstddef>
#include <string>

namespace ssc {

// Creates a zero-filled file of `bytes` and maps it shared here. On success *fd is open (its
// creator keeps it while peers may still open it) and *map is the mapping; on failure both are
// unset (-1, null), nothing is left open, and *why says what failed.
bool createSharedFile(const char* tag, size_t bytes, int* fd, void** map, std::string* why);

// Maps `bytes` of process pid's descriptor fd (from createSharedFile) shared here; null with
// *why on failure.
void* mapPeerFile(int pid, int fd, size_t bytes, std::string* why);

}  // namespace ssc
