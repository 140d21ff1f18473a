#include "sampler/internal/row_arena.h"

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "base/random.h"
#include "gtest/gtest.h"

namespace latentd::internal {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif
#else
constexpr bool kAsan = false;
#endif

TEST(RowArenaTest, UsableSizeIsAClassAtMostAQuarterAbove) {
  for (size_t bytes = 1; bytes <= (size_t{300} << 10); ++bytes) {
    const size_t usable = RowArena::UsableSize(bytes);
    ASSERT_GE(usable, bytes);
    ASSERT_EQ(usable % 16, 0u) << bytes;
    ASSERT_LE(usable, bytes < 64 ? 64 : bytes + bytes / 4 + 16) << bytes;
    ASSERT_EQ(RowArena::UsableSize(usable), usable) << bytes;
  }
  // A dense row of K=100: 16 + 800 bytes.
  EXPECT_EQ(RowArena::UsableSize(816), 896u);
}

TEST(RowArenaTest, BlocksHoldTheirBytesWithoutOverlap) {
  RowArena arena;
  Rng rng(7);
  std::vector<std::pair<unsigned char*, size_t>> blocks;
  for (int i = 0; i < 5000; ++i) {
    const size_t bytes = 1 + rng.UniformInt(i % 100 == 0 ? 400'000 : 4000);
    auto* p = static_cast<unsigned char*>(arena.Allocate(bytes));
    ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u);
    const size_t usable = RowArena::UsableSize(bytes);
    std::memset(p, i & 0xff, usable);
    blocks.push_back({p, bytes});
    // Now and then give one back, so that later blocks reuse it.
    if (rng.UniformInt(3) == 0) {
      const size_t j = rng.UniformInt(blocks.size());
      arena.Free(blocks[j].first, blocks[j].second);
      blocks[j] = blocks.back();
      blocks.pop_back();
    }
  }
  // Every block still holds the byte written into all of it.
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto [p, bytes] = blocks[i];
    const size_t usable = RowArena::UsableSize(bytes);
    for (size_t b = 1; b < usable; ++b) ASSERT_EQ(p[b], p[0]) << i;
  }
  for (const auto& [p, bytes] : blocks) arena.Free(p, bytes);
}

TEST(RowArenaTest, FreedBlocksAreReusedSoMemoryStaysFlat) {
  if (kAsan) GTEST_SKIP() << "AddressSanitizer build: blocks from operator new";
  RowArena arena;
  // A table's rows, freed and allocated again row by row as Quiesce does.
  Rng rng(3);
  std::vector<size_t> sizes(20'000);
  for (size_t& s : sizes) s = 16 + 8 * (1 + rng.UniformInt(100));
  std::vector<void*> rows(sizes.size());
  for (size_t w = 0; w < rows.size(); ++w) rows[w] = arena.Allocate(sizes[w]);
  const size_t after_first = arena.chunk_bytes();
  EXPECT_GT(after_first, 0u);
  for (int pass = 0; pass < 10; ++pass) {
    for (size_t w = 0; w < rows.size(); ++w) {
      void* fresh = arena.Allocate(sizes[w]);
      arena.Free(rows[w], sizes[w]);
      rows[w] = fresh;
    }
  }
  // At most one more block of each class than the rows hold.
  EXPECT_LE(arena.chunk_bytes(), after_first + (size_t{2} << 20));
  // A block given back is the next one of its class handed out.
  arena.Free(rows[0], sizes[0]);
  EXPECT_EQ(arena.Allocate(sizes[0]), rows[0]);
  for (size_t w = 0; w < rows.size(); ++w) arena.Free(rows[w], sizes[w]);
}

// A class with no free block takes a free one of up to an octave more
// (rows that shrank give their memory to smaller rows), says how large it
// is, and goes back to the class of that size; past an octave, the front
// of a larger free block, whose rest is freed; with none free, a new block
// comes from the chunk.
TEST(RowArenaTest, ASmallerRowTakesALargerFreeBlockOrItsFront) {
  if (kAsan) GTEST_SKIP() << "AddressSanitizer build: blocks from operator new";
  RowArena arena;
  size_t usable = 0;
  void* big = arena.Allocate(448, &usable);
  EXPECT_EQ(usable, 448u);
  arena.Free(big, usable);
  // 230 bytes: class 256, whose octave (four classes) reaches 448.
  void* taken = arena.Allocate(230, &usable);
  EXPECT_EQ(taken, big);
  EXPECT_EQ(usable, 448u);
  arena.Free(taken, usable);
  // 200 bytes: class 224, whose octave ends at 448 — taken too.
  EXPECT_EQ(arena.Allocate(200, &usable), big);
  arena.Free(big, usable);
  // 100 bytes: class 112, more than an octave below: the front of the
  // 448-byte block, whose other 336 bytes go back as a block of 320 (the
  // largest class they hold).
  const size_t chunks = arena.chunk_bytes();
  void* small = arena.Allocate(100, &usable);
  EXPECT_EQ(small, big);
  EXPECT_EQ(usable, 112u);
  void* rest = arena.Allocate(300, &usable);
  EXPECT_EQ(rest, static_cast<char*>(big) + 112);
  EXPECT_EQ(usable, 320u);
  EXPECT_EQ(arena.chunk_bytes(), chunks);
  // No free block of 448 bytes is left: a new one.
  void* fresh = arena.Allocate(448, &usable);
  EXPECT_NE(fresh, big);
  EXPECT_NE(fresh, rest);
  arena.Free(fresh, 448);
  arena.Free(rest, 320);
  arena.Free(small, 112);
}

}  // namespace
}  // namespace latentd::internal
