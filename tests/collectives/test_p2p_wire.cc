// SPDX-License-Identifier: MIT
// The one-copy handshake's wire format (src/collectives/p2p_wire.h): the host executor and the
// plan kernel both use these helpers, so CI checks here what the GPU posts and reads.
#include "src/collectives/p2p_wire.h"

#include <gtest/gtest.h>

#include <cstring>

namespace ssc {
namespace {

TEST(P2pWire, TagsAreDistinctAndNeverAStepTag) {
  EXPECT_NE(kP2pOfferTag, kP2pDoneTag);
  EXPECT_NE(kP2pOfferTag, 0u);  // 0 is the tag of collective steps
  EXPECT_NE(kP2pDoneTag, 0u);
}

TEST(P2pWire, SlotWordCarriesTagAboveBytes) {
  const uint64_t w = fifoSlotWord(kP2pOfferTag, 32);
  EXPECT_EQ(w, (uint64_t{kP2pOfferTag} << 32) | 32u);
  EXPECT_EQ(fifoSlotTag(w), kP2pOfferTag);
  EXPECT_EQ(fifoSlotBytes(w), 32u);
  EXPECT_EQ(fifoSlotWord(0, 0xffffffffu), 0xffffffffu);
  EXPECT_EQ(fifoSlotTag(fifoSlotWord(0xdeadbeefu, 7)), 0xdeadbeefu);
}

TEST(P2pWire, OfferLayout) {
  EXPECT_EQ(sizeof(P2pOfferHeader), 8u);
  EXPECT_EQ(sizeof(P2pOfferEntry), 24u);
  EXPECT_EQ(sizeof(P2pDone), 24u);
  EXPECT_EQ(p2pOfferEntryOffset(0), 8u);
  EXPECT_EQ(p2pOfferEntryOffset(3), 8u + 3 * 24u);
  EXPECT_EQ(p2pOfferBytes(0), 8u);
  EXPECT_EQ(p2pOfferBytes(2), 56u);
  EXPECT_EQ(kP2pEntryAddress, 0u);
  EXPECT_EQ(kP2pEntryBytes, 8u);
  EXPECT_EQ(kP2pEntrySwap, 16u);
}

TEST(P2pWire, CapacityFitsTheSlot) {
  for (uint64_t slot : {8u, 31u, 32u, 56u, 4096u, 65536u}) {
    const uint64_t c = p2pOfferCapacity(slot);
    EXPECT_LE(p2pOfferBytes(c), slot) << slot;
    EXPECT_GT(p2pOfferBytes(c + 1), slot) << slot;
  }
  EXPECT_EQ(p2pOfferCapacity(8), 0u);
  EXPECT_EQ(p2pOfferCapacity(4096), (4096u - 8) / 24);
}

TEST(P2pWire, OfferSizeCheck) {
  EXPECT_TRUE(p2pOfferSizeOk(8, 0));
  EXPECT_TRUE(p2pOfferSizeOk(56, 2));
  EXPECT_FALSE(p2pOfferSizeOk(55, 2));
  EXPECT_FALSE(p2pOfferSizeOk(80, 2));
  EXPECT_FALSE(p2pOfferSizeOk(0, 0));
  EXPECT_FALSE(p2pOfferSizeOk(4, 0));
}

// The GPU writes and reads the header and the answer's first word as one 64-bit word; the host
// copies the structs. Both must give the same bytes.
TEST(P2pWire, WordsAreTheStructsBytes) {
  const P2pOfferHeader h{5, 3};
  uint64_t w = 0;
  std::memcpy(&w, &h, sizeof(h));
  EXPECT_EQ(w, p2pOfferHeaderWord(5, 3));
  const P2pOfferHeader back = p2pOfferHeaderOf(w);
  EXPECT_EQ(back.count, 5u);
  EXPECT_EQ(back.listed, 3u);

  const P2pDone d{kP2pDoneSizes, 7, 100, 200};
  uint64_t dw[3] = {};
  std::memcpy(dw, &d, sizeof(d));
  EXPECT_EQ(dw[0], p2pDoneWord(kP2pDoneSizes, 7));
  EXPECT_EQ(dw[1], 100u);
  EXPECT_EQ(dw[2], 200u);

  const P2pOfferEntry e{0x1000, 64, 1};
  uint64_t ew[3] = {};
  std::memcpy(ew, &e, sizeof(e));
  EXPECT_EQ(ew[kP2pEntryAddress / 8], 0x1000u);
  EXPECT_EQ(ew[kP2pEntryBytes / 8], 64u);
  EXPECT_EQ(ew[kP2pEntrySwap / 8], 1u);
}

TEST(P2pWire, MatchingRules) {
  P2pDone d = p2pCheckCounts(3, 3);
  EXPECT_EQ(d.status, kP2pDoneOk);
  d = p2pCheckCounts(2, 3);
  EXPECT_EQ(d.status, kP2pDoneCounts);
  EXPECT_EQ(d.index, 0u);
  EXPECT_EQ(d.sent, 2u);
  EXPECT_EQ(d.expected, 3u);
  d = p2pCheckSize(4, 128, 128);
  EXPECT_EQ(d.status, kP2pDoneOk);
  d = p2pCheckSize(4, 128, 256);
  EXPECT_EQ(d.status, kP2pDoneSizes);
  EXPECT_EQ(d.index, 4u);
  EXPECT_EQ(d.sent, 128u);
  EXPECT_EQ(d.expected, 256u);
}

TEST(P2pWire, Decisions) {
  // A receive goes one-copy plainly when listed, offered, and not offered for a swap.
  EXPECT_TRUE(p2pPlainOffer(0x1000, false, 0, 1));
  EXPECT_FALSE(p2pPlainOffer(0x1000, false, 1, 1));  // past the slot's capacity
  EXPECT_FALSE(p2pPlainOffer(0, false, 0, 1));       // through the FIFOs
  EXPECT_FALSE(p2pPlainOffer(0x1000, true, 0, 1));   // the sender decides swaps
  // An exchange needs this rank's matching receive, listed and offered for the swap.
  EXPECT_TRUE(p2pExchangeRuns(true, 0, 1, true));
  EXPECT_FALSE(p2pExchangeRuns(false, 0, 1, true));
  EXPECT_FALSE(p2pExchangeRuns(true, 1, 1, true));
  EXPECT_FALSE(p2pExchangeRuns(true, 0, 1, false));
}

TEST(P2pWire, SwapHalvesCoverTheBufferOnce) {
  for (uint64_t bytes : {0u, 1u, 15u, 16u, 31u, 32u, 100u, 4096u, 4097u}) {
    const uint64_t mid = p2pSwapMid(bytes);
    EXPECT_EQ(mid % 16, 0u);
    EXPECT_LE(mid, bytes);
    uint64_t lo0 = 0, hi0 = 0, lo1 = 0, hi1 = 0;
    p2pSwapRange(0, 1, bytes, &lo0, &hi0);
    p2pSwapRange(1, 0, bytes, &lo1, &hi1);
    EXPECT_EQ(lo0, 0u);
    EXPECT_EQ(hi0, mid);
    EXPECT_EQ(lo1, mid);
    EXPECT_EQ(hi1, bytes);
  }
}

}  // namespace
}  // namespace ssc
