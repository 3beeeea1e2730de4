// support/large_buffers.h: a large vector comes back zeroed and whole whether or not the kernel takes
// the huge-page advice, a small one is a plain vector, and the advice is harmless on any range
// (unaligned, empty, a small heap block).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "support/large_buffers.h"

namespace agentcompile {
namespace {

TEST(LargeBuffers, ALargeVectorIsZeroedAndWhole) {
  const size_t n = support::kLargeBufferBytes / sizeof(float) + 12345;  // past the threshold, not page-sized
  std::vector<float> v = support::zeroed_vector<float>(n);
  ASSERT_EQ(v.size(), n);
  EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](float x) { return x == 0.0f; }));
  v.back() = 1.0f;  // every element is writable
  EXPECT_EQ(v.back(), 1.0f);
}

TEST(LargeBuffers, ASmallVectorIsAPlainOne) {
  std::vector<uint8_t> v = support::zeroed_vector<uint8_t>(1000);
  ASSERT_EQ(v.size(), 1000u);
  EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](uint8_t x) { return x == 0; }));
  EXPECT_TRUE(support::zeroed_vector<int32_t>(0).empty());
}

TEST(LargeBuffers, TheAdviceIsHarmlessOnAnyRange) {
  std::vector<char> small(100, 'x');
  support::advise_huge_pages(small.data() + 3, 50);  // inside one page: no whole page, nothing asked
  support::advise_huge_pages(nullptr, 1 << 20);
  support::advise_huge_pages(small.data(), 0);
  EXPECT_TRUE(std::all_of(small.begin(), small.end(), [](char c) { return c == 'x'; }));
}

}  // namespace
}  // namespace agentcompile
