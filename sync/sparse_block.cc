#include "sync/sparse_block.h"

#include "absl/strings/str_cat.h"

namespace latentd::sync {

void AppendToBlock(const SparseVector& v, SparseBlock* block) {
  block->add_sizes(static_cast<uint32_t>(v.size()));
  auto* topics = block->mutable_topics();
  auto* counts = block->mutable_counts();
  const int n = static_cast<int>(v.size());
  topics->Reserve(topics->size() + n);  // grows geometrically
  counts->Reserve(counts->size() + n);
  for (const SparseEntry& e : v) {
    topics->AddAlreadyReserved(e.topic);
    counts->AddAlreadyReserved(e.count);
  }
}

absl::Status BlockReader::Validate(size_t vectors) const {
  if (static_cast<size_t>(block_.sizes_size()) != vectors) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sparse block holds ", block_.sizes_size(), " vectors, not ", vectors));
  }
  if (block_.topics_size() != block_.counts_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sparse block: ", block_.topics_size(), " topics but ",
                     block_.counts_size(), " counts"));
  }
  int64_t pos = 0;
  for (int v = 0; v < block_.sizes_size(); ++v) {
    const int64_t end = pos + block_.sizes(v);
    if (end > block_.topics_size()) {
      return absl::InvalidArgumentError("sparse block: sizes overrun");
    }
    for (int64_t i = pos; i < end; ++i) {
      const uint32_t k = block_.topics(static_cast<int>(i));
      if (k >= dimension_) {
        return absl::InvalidArgumentError(absl::StrCat(
            "sparse block: topic ", k, " >= dimension ", dimension_));
      }
      if (i > pos && k <= block_.topics(static_cast<int>(i - 1))) {
        return absl::InvalidArgumentError(
            "sparse block: topics not strictly ascending");
      }
      if (block_.counts(static_cast<int>(i)) == 0) {
        return absl::InvalidArgumentError("sparse block: zero count listed");
      }
    }
    pos = end;
  }
  if (pos != block_.topics_size()) {
    return absl::InvalidArgumentError("sparse block: trailing entries");
  }
  return absl::OkStatus();
}

void BlockReader::Next(SparseVector* out) {
  out->clear();
  const int n = static_cast<int>(block_.sizes(vector_++));
  for (int i = 0; i < n; ++i, ++pos_) {
    out->push_back({block_.topics(pos_), block_.counts(pos_)});
  }
}

}  // namespace latentd::sync
