// RowArena: the memory of the word-topic table's row blocks
// (sampler/topic_table.h), in chunks the kernel is asked to back with
// transparent huge pages (madvise MADV_HUGEPAGE), so that the samplers'
// reads of rows all over a large table miss the TLB far less often than
// they did with each block from operator new (docs/benchmarks.md, "Large
// corpora from disk": the same effect as GLIBC_TUNABLES=
// glibc.malloc.hugetlb=1, without the setting).
//
// Blocks come in size classes, four per octave (at most a quarter more
// than asked), each with a free list: the table frees and allocates every
// row at each Quiesce, and a freed block is taken again by the next row of
// its class (or of a class up to an octave smaller, or split for a row
// smaller still), so memory stays at about the table's size. Freed blocks
// are not merged. Chunks grow from
// 64 KiB to 2 MiB (small tables stay small), each its own mapping; only
// 2 MiB chunks are marked for huge pages. Blocks above 256 KiB, and every
// block in an AddressSanitizer build (so that it still checks each block's
// bounds), come from operator new. Memory goes back to the system when the
// arena is destroyed, or a chunk at a time while its blocks are moved to
// another arena (TopicTable's compaction: Chunks, FreeChunk).
//
// Thread-safety: none; one thread at a time (the table's writer).
#ifndef LATENTD_SAMPLER_INTERNAL_ROW_ARENA_H_
#define LATENTD_SAMPLER_INTERNAL_ROW_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace latentd::internal {

class RowArena {
 public:
  RowArena() = default;
  ~RowArena();
  RowArena(const RowArena&) = delete;
  RowArena& operator=(const RowArena&) = delete;

  // The bytes a block asked for `bytes` gets (its class's size, >= bytes;
  // a multiple of 16). Allocate(bytes) may be given back as Free(p,
  // UsableSize(bytes)) or Free(p, bytes).
  static size_t UsableSize(size_t bytes);
  // A block of at least UsableSize(bytes) bytes, 16-byte aligned: of its
  // own class, or, where that class has none free, a free block of up to
  // one octave more, or else the front of the smallest larger free block
  // (its rest freed as a block of the largest class it holds), before a
  // new block from the chunk: memory freed by rows that shrank serves the
  // smaller rows, where classes kept apart never gave it back. *usable, if
  // given, gets the block's size.
  // REQUIRES: bytes > 0.
  void* Allocate(size_t bytes, size_t* usable = nullptr);
  // Gives back a block from Allocate(n, &usable) with UsableSize(n) ==
  // UsableSize(bytes), or with usable == bytes. p may be null (nothing).
  void Free(void* p, size_t bytes);

  // Bytes of chunks held (blocks from operator new not counted).
  size_t chunk_bytes() const { return chunk_bytes_; }
  // The most chunk_bytes() has been.
  size_t peak_chunk_bytes() const { return peak_chunk_bytes_; }

  // ---- Moving every block to another arena ----
  // Whether a block from Allocate(bytes) lies in a chunk (else it came
  // from operator new, and Free(p, bytes) in any arena gives it back).
  static bool InChunk(size_t bytes);
  struct Chunk {
    char* begin;
    size_t bytes;
  };
  // The chunks held, lowest address first.
  std::vector<Chunk> Chunks() const;
  // Gives the chunk that starts at `begin` back to the system. Its blocks
  // must all have moved: the free lists may still point into it, so after
  // a FreeChunk the arena may only be destroyed.
  void FreeChunk(char* begin);

 private:
  static constexpr int kClasses = 64;
  // The class of a block of `bytes` (<= kMaxArenaBytes), and its size.
  static int ClassOf(size_t bytes);
  static size_t ClassSize(int c);
  // A new chunk with room for at least `bytes`.
  void NewChunk(size_t bytes);

  struct FreeBlock {
    FreeBlock* next;
  };
  FreeBlock* free_[kClasses] = {};
  std::vector<Chunk> chunks_;
  char* next_ = nullptr;  // the current chunk's unused part
  char* end_ = nullptr;
  size_t chunk_bytes_ = 0;
  size_t peak_chunk_bytes_ = 0;
};

}  // namespace latentd::internal

#endif  // LATENTD_SAMPLER_INTERNAL_ROW_ARENA_H_
