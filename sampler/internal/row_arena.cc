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
  for (const Chunk& chunk : chunks_) munmap(chunk.begin, chunk.bytes);
}

void RowArena::NewChunk(size_t bytes) {
  size_t size =
      chunks_.empty() ? kFirstChunk : std::min(2 * chunk_bytes_, kHugePage);
  size = std::max(size, bytes);
  const size_t align = size >= kHugePage ? kHugePage : 4096;
  size = (size + align - 1) / align * align;
  // A mapping of its own, so that FreeChunk gives the memory back at once
  // (a freed block of malloc's heap stays resident). Mapped with `align`
  // to spare, the ends past an aligned start unmapped again.
  const size_t spare = align > 4096 ? align : 0;
  void* mapped = mmap(nullptr, size + spare, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  char* start = static_cast<char*>(mapped);
  char* chunk = reinterpret_cast<char*>(
      (reinterpret_cast<uintptr_t>(start) + align - 1) / align * align);
  if (chunk > start) munmap(start, chunk - start);
  if (char* tail = chunk + size; tail < start + size + spare) {
    munmap(tail, start + size + spare - tail);
  }
  // Advice only: where THP is off (or "never") nothing changes.
  if (size >= kHugePage) madvise(chunk, size, MADV_HUGEPAGE);
  chunks_.push_back({chunk, size});
  chunk_bytes_ += size;
  peak_chunk_bytes_ = std::max(peak_chunk_bytes_, chunk_bytes_);
  next_ = chunk;
  end_ = next_ + size;
}

bool RowArena::InChunk(size_t bytes) {
#if defined(LATENTD_ROW_ARENA_ASAN)
  (void)bytes;
  return false;
#else
  return bytes <= kMaxArenaBytes;
#endif
}

std::vector<RowArena::Chunk> RowArena::Chunks() const {
  std::vector<Chunk> chunks = chunks_;
  std::sort(chunks.begin(), chunks.end(),
            [](const Chunk& a, const Chunk& b) { return a.begin < b.begin; });
  return chunks;
}

void RowArena::FreeChunk(char* begin) {
  auto it = std::find_if(chunks_.begin(), chunks_.end(),
                         [begin](const Chunk& c) { return c.begin == begin; });
  if (it == chunks_.end()) return;
  munmap(it->begin, it->bytes);
  chunk_bytes_ -= it->bytes;
  if (next_ >= it->begin && next_ <= it->begin + it->bytes) {
    next_ = end_ = nullptr;
  }
  chunks_.erase(it);
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
