// The wire form of a sequence of sparse vectors (SparseBlock in
// sync.proto): the vectors' sizes, then all their topics and counts in
// order. Writers append with AppendToBlock; readers validate the whole
// block once and then read it without further checks.
//
// Thread-safety: AppendToBlock is a function of its arguments; a
// BlockReader is thread-compatible and must not outlive its block.
#ifndef LATENTD_SYNC_SPARSE_BLOCK_H_
#define LATENTD_SYNC_SPARSE_BLOCK_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "sync/abelian_table.h"
#include "sync/sync.pb.h"

namespace latentd::sync {

// Appends `v` to `block` as its next vector.
void AppendToBlock(const SparseVector& v, SparseBlock* block);

// Reads the vectors of a block in order. Validate() first checks the whole
// block: kInvalidArgument if the sizes do not add up, a topic is >=
// dimension or out of order, or a count is zero; Next() then cannot fail.
class BlockReader {
 public:
  BlockReader(const SparseBlock& block, uint32_t dimension)
      : block_(block), dimension_(dimension) {}
  // OK if the block holds exactly `vectors` valid vectors.
  absl::Status Validate(size_t vectors) const;
  // The next vector into *out. REQUIRES: Validate() was OK, and fewer than
  // `vectors` were read.
  void Next(SparseVector* out);

 private:
  const SparseBlock& block_;
  const uint32_t dimension_;
  int vector_ = 0;
  int pos_ = 0;
};

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_SPARSE_BLOCK_H_
