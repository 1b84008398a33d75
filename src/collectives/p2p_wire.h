// SPDX-License-Identifier: MIT
// The wire format of the one-copy point-to-point handshake (plan.h: kP2pOffer, kP2pPush,
// kP2pWait), written once: the host executor (src/device/host/host_executor.cc) and the plan
// kernel (src/kernels/gpu/p2p_handshake.cuh) both post and read these slots, and a change to
// one without the other would only show as a hang or a misread offer on a GPU. Plain data and
// pure functions, no runtime headers: g++, nvcc and hipcc all compile it, and the layout is
// pinned by the static_asserts below (tests/collectives/test_p2p_wire.cc walks the helpers).
//
// A handshake slot is an ordinary FIFO slot whose size word (fifoSlotWord) carries kP2pOfferTag
// or kP2pDoneTag in its upper half instead of a step's tag:
//   offer: P2pOfferHeader, then `listed` P2pOfferEntry, one per receive in posting order;
//   answer: one P2pDone.
// The GPU reads and writes these words one 64-bit load or store at a time (its slots live in a
// peer's memory, read with volatile loads); the *Word helpers give those words, which are the
// structs' bytes on the little-endian machines both backends run on.
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/collectives/host_device.h"

namespace ssc {

// The FIFO slot tags of the handshake's two slots. The executors check them, so plans that do
// not match (one rank's group has a handshake with a peer whose group has none) fail at that
// slot instead of reading data as an offer or an offer as data.
constexpr uint32_t kP2pOfferTag = 0x9e0ff3e5u;
constexpr uint32_t kP2pDoneTag = 0x9ed0e5a1u;

// The size word of a FIFO slot: the step's tag (Step::tag, or a handshake tag) above the byte
// count, so the receiver checks both. Slots never reach 4 GiB (the transports bound them).
SSC_HOST_DEVICE uint64_t fifoSlotWord(uint32_t tag, uint64_t bytes) {
  return (static_cast<uint64_t>(tag) << 32) | bytes;
}
SSC_HOST_DEVICE uint32_t fifoSlotTag(uint64_t word) { return static_cast<uint32_t>(word >> 32); }
SSC_HOST_DEVICE uint64_t fifoSlotBytes(uint64_t word) { return word & 0xffffffffu; }

// The offer slot's header.
struct P2pOfferHeader {
  uint32_t count;   // this rank's receives from the peer in the group
  uint32_t listed;  // entries that follow (the first ones; the rest take the FIFOs)
};
// One listed receive.
struct P2pOfferEntry {
  uint64_t address;  // the buffer as the peer has it mapped; 0: through the FIFOs
  uint64_t bytes;
  uint64_t swap;  // 1: offered for an exchange (the same buffer is the send to the peer)
};

// The answer a sender posts for each offer it took.
enum : uint32_t { kP2pDoneOk = 0, kP2pDoneCounts = 1, kP2pDoneSizes = 2 };
struct P2pDone {
  uint32_t status;    // kP2pDoneOk, kP2pDoneCounts or kP2pDoneSizes
  uint32_t index;     // kP2pDoneSizes: which message of the pair (0-based)
  uint64_t sent;      // the sender's sends (kP2pDoneCounts) or bytes (kP2pDoneSizes)
  uint64_t expected;  // the receiver's receives or bytes
};

static_assert(sizeof(P2pOfferHeader) == 8 && offsetof(P2pOfferHeader, count) == 0 &&
                  offsetof(P2pOfferHeader, listed) == 4,
              "the offer header is one 64-bit word: count, then listed");
static_assert(sizeof(P2pOfferEntry) == 24 && offsetof(P2pOfferEntry, address) == 0 &&
                  offsetof(P2pOfferEntry, bytes) == 8 && offsetof(P2pOfferEntry, swap) == 16,
              "an offer entry is three 64-bit words: address, bytes, swap");
static_assert(sizeof(P2pDone) == 24 && offsetof(P2pDone, status) == 0 &&
                  offsetof(P2pDone, index) == 4 && offsetof(P2pDone, sent) == 8 &&
                  offsetof(P2pDone, expected) == 16,
              "an answer is three 64-bit words: status | index << 32, sent, expected");

// Byte offsets of the entry fields, for readers that load one word at a time.
constexpr uint64_t kP2pEntryAddress = offsetof(P2pOfferEntry, address);
constexpr uint64_t kP2pEntryBytes = offsetof(P2pOfferEntry, bytes);
constexpr uint64_t kP2pEntrySwap = offsetof(P2pOfferEntry, swap);

// Where entry k starts in an offer slot.
SSC_HOST_DEVICE uint64_t p2pOfferEntryOffset(uint64_t k) {
  return sizeof(P2pOfferHeader) + k * sizeof(P2pOfferEntry);
}
// The size of an offer with `listed` entries (its slot's byte count).
SSC_HOST_DEVICE uint64_t p2pOfferBytes(uint64_t listed) { return p2pOfferEntryOffset(listed); }
// Entries an offer of `slotBytes` holds (both ranks of a pair use the same slot size, so they
// agree on which receives are listed). slotBytes >= sizeof(P2pOfferHeader).
SSC_HOST_DEVICE uint64_t p2pOfferCapacity(uint64_t slotBytes) {
  return (slotBytes - sizeof(P2pOfferHeader)) / sizeof(P2pOfferEntry);
}
// An offer slot of `got` bytes whose header says `listed` is well formed.
SSC_HOST_DEVICE bool p2pOfferSizeOk(uint64_t got, uint32_t listed) {
  return got >= sizeof(P2pOfferHeader) && got == p2pOfferBytes(listed);
}

// The header and the answer's first word as one 64-bit word (the structs' bytes).
SSC_HOST_DEVICE uint64_t p2pOfferHeaderWord(uint32_t count, uint32_t listed) {
  return static_cast<uint64_t>(count) | static_cast<uint64_t>(listed) << 32;
}
SSC_HOST_DEVICE P2pOfferHeader p2pOfferHeaderOf(uint64_t word) {
  return P2pOfferHeader{static_cast<uint32_t>(word), static_cast<uint32_t>(word >> 32)};
}
SSC_HOST_DEVICE uint64_t p2pDoneWord(uint32_t status, uint32_t index) {
  return static_cast<uint64_t>(status) | static_cast<uint64_t>(index) << 32;
}

// The matching rules the sender applies to an offer. The pair's counts must agree first; then
// each listed receive's size must equal the sender's send of the same index (the first one that
// does not is reported). Both ranks report the same answer, so they fail alike.
SSC_HOST_DEVICE P2pDone p2pCheckCounts(uint64_t sends, uint32_t offered) {
  return sends == offered ? P2pDone{kP2pDoneOk, 0, 0, 0}
                          : P2pDone{kP2pDoneCounts, 0, sends, offered};
}
SSC_HOST_DEVICE P2pDone p2pCheckSize(uint32_t index, uint64_t sentBytes, uint64_t offeredBytes) {
  return sentBytes == offeredBytes ? P2pDone{kP2pDoneOk, 0, 0, 0}
                                   : P2pDone{kP2pDoneSizes, index, sentBytes, offeredBytes};
}

// The receiver's decision for its k-th receive from a peer: offered plainly (the sender stores
// it straight into `address`), so its FIFO steps are skipped. Receives past the slot's capacity
// are not listed and take the FIFOs; swaps are decided by the sender (p2pExchangeRuns).
SSC_HOST_DEVICE bool p2pPlainOffer(uint64_t address, bool swap, uint64_t k, uint64_t capacity) {
  return k < capacity && address != 0 && !swap;
}
// The sender's decision for an entry offered for an exchange: it runs only when this rank
// offered its side too (its k-th receive from the peer exists, was listed, and was offered for
// the swap); otherwise both ranks take the FIFOs.
SSC_HOST_DEVICE bool p2pExchangeRuns(bool haveReceive, uint64_t k, uint64_t capacity,
                                     bool receiveSwapOffered) {
  return haveReceive && k < capacity && receiveSwapOffered;
}

// Where an exchange's buffer splits between its two ranks (the lower rank swaps [0, mid), the
// higher [mid, bytes)): a multiple of 16 bytes, so both halves keep the buffers' vector
// alignment.
SSC_HOST_DEVICE uint64_t p2pSwapMid(uint64_t bytes) { return (bytes / 2) & ~uint64_t{15}; }
// The bytes [*lo, *hi) of an exchange of `bytes` that `rank` swaps with `peer`.
SSC_HOST_DEVICE void p2pSwapRange(int rank, int peer, uint64_t bytes, uint64_t* lo, uint64_t* hi) {
  const uint64_t mid = p2pSwapMid(bytes);
  *lo = rank < peer ? 0 : mid;
  *hi = rank < peer ? mid : bytes;
}

}  // namespace ssc
