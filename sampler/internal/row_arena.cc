#include "sampler/internal/row_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define LATENTD_ROW_ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LATENTD_ROW_ARENA_ASAN 1
#endif
#endif

namespace latentd::internal {
namespace {

constexpr size_t kMaxArenaBytes = size_t{256} << 10;
constexpr size_t kFirstChunk = size_t{64} << 10;
constexpr size_t kHugePage = size_t{2} << 20;

}  // namespace

int RowArena::ClassOf(size_t bytes) {
  if (bytes <= 64) return static_cast<int>((bytes + 15) / 16) - 1;
  // 2^k < bytes <= 2^(k+1); four classes a step of 2^(k-2) apart.
  const int k = 63 - __builtin_clzll(bytes - 1);
  const size_t step = size_t{1} << (k - 2);
  const size_t j = (bytes - (size_t{1} << k) + step - 1) / step;  // 1..4
  return 4 + (k - 6) * 4 + static_cast<int>(j) - 1;
}

size_t RowArena::ClassSize(int c) {
  if (c < 4) return 16 * static_cast<size_t>(c + 1);
  const int k = (c - 4) / 4 + 6;
  const size_t j = static_cast<size_t>((c - 4) % 4 + 1);
  return (size_t{1} << k) + j * (size_t{1} << (k - 2));
}

size_t RowArena::UsableSize(size_t bytes) {
  if (bytes > kMaxArenaBytes) return (bytes + 15) / 16 * 16;
  return ClassSize(ClassOf(std::max<size_t>(bytes, 1)));
}

RowArena::~RowArena() {
  for (void* chunk : chunks_) std::free(chunk);
}

void RowArena::NewChunk(size_t bytes) {
  size_t size =
      chunks_.empty() ? kFirstChunk : std::min(2 * chunk_bytes_, kHugePage);
  size = std::max(size, bytes);
  const size_t align = size >= kHugePage ? kHugePage : 64;
  size = (size + align - 1) / align * align;
  void* chunk = std::aligned_alloc(align, size);
  if (chunk == nullptr) throw std::bad_alloc();
  // Advice only: where THP is off (or "never") nothing changes.
  if (size >= kHugePage) madvise(chunk, size, MADV_HUGEPAGE);
  chunks_.push_back(chunk);
  chunk_bytes_ += size;
  next_ = static_cast<char*>(chunk);
  end_ = next_ + size;
}

void* RowArena::Allocate(size_t bytes, size_t* usable) {
#if defined(LATENTD_ROW_ARENA_ASAN)
  if (usable != nullptr) *usable = UsableSize(bytes);
  return ::operator new(UsableSize(bytes));
#else
  if (bytes > kMaxArenaBytes) {
    if (usable != nullptr) *usable = UsableSize(bytes);
    return ::operator new(UsableSize(bytes));
  }
  const int c = ClassOf(bytes);
  // Four classes make an octave.
  for (int d = c; d <= std::min(c + 4, kClasses - 1); ++d) {
    if (FreeBlock* block = free_[d]; block != nullptr) {
      free_[d] = block->next;
      if (usable != nullptr) *usable = ClassSize(d);
      return block;
    }
  }
  const size_t size = ClassSize(c);
  // Else the front of the smallest larger free block; its rest goes back
  // as a block of the largest class it holds (the bytes past that class's
  // size, under a fifth of the rest, stay unused).
  for (int d = c + 5; d < kClasses; ++d) {
    FreeBlock* block = free_[d];
    if (block == nullptr) continue;
    free_[d] = block->next;
    const size_t rest = ClassSize(d) - size;
    if (rest >= 16) {
      int f = ClassOf(rest);
      if (ClassSize(f) > rest) --f;
      char* tail = reinterpret_cast<char*>(block) + size;
      free_[f] = new (tail) FreeBlock{free_[f]};
    }
    if (usable != nullptr) *usable = size;
    return block;
  }
  if (static_cast<size_t>(end_ - next_) < size) NewChunk(size);
  void* block = next_;
  next_ += size;
  if (usable != nullptr) *usable = size;
  return block;
#endif
}

void RowArena::Free(void* p, size_t bytes) {
  if (p == nullptr) return;
#if defined(LATENTD_ROW_ARENA_ASAN)
  ::operator delete(p);
#else
  if (bytes > kMaxArenaBytes) {
    ::operator delete(p);
    return;
  }
  const int c = ClassOf(bytes);
  FreeBlock* block = new (p) FreeBlock{free_[c]};
  free_[c] = block;
#endif
}

}  // namespace latentd::internal
