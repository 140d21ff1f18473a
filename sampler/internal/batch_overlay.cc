#include "sampler/internal/batch_overlay.h"

#include <algorithm>

#include "sampler/sampling_kernel.h"

namespace latentd::internal {

BatchOverlay::BatchOverlay(TopicId num_topics, int64_t max_word_tokens)
    : num_topics_(num_topics),
      max_bigs_(static_cast<uint32_t>(std::max<size_t>(
          1, kMaxBigBytes / (size_t{num_topics} * (sizeof(int32_t) + 1))))),
      configured_max_word_tokens_(max_word_tokens),
      max_word_tokens_(max_word_tokens),
      delta_(num_topics, 0) {}

void BatchOverlay::Reset(size_t vocab_size, int64_t auto_max_word_tokens) {
  max_word_tokens_ = configured_max_word_tokens_ >= 0
                         ? configured_max_word_tokens_
                         : auto_max_word_tokens;
  Unfocus();
  has_focus_ = false;
  if (index_.size() < vocab_size) index_.resize(vocab_size);
  if (++stamp_ == 0) {  // wrapped: no stale stamp may match a new batch
    for (IndexSlot& slot : index_) slot.stamp = 0;
    stamp_ = 1;
  }
  lists_used_ = 0;
  for (uint32_t b = 0; b < bigs_used_; ++b) {
    int32_t* deltas = big_deltas_.data() + size_t{b} * num_topics_;
    uint8_t* listed = big_listed_.data() + size_t{b} * num_topics_;
    for (TopicId k : big_topics_[b]) deltas[k] = listed[k] = 0;
    big_topics_[b].clear();
  }
  bigs_used_ = 0;
}

void BatchOverlay::Unfocus() {
  if (scattered_ && list_ != nullptr) {
    for (const Entry& e : *list_) delta_[e.topic] = 0;
  }
  scattered_ = false;
  unfollowed_ = false;
  list_ = nullptr;
  big_ = nullptr;
  big_listed_at_ = nullptr;
  big_list_ = nullptr;
}

void BatchOverlay::Scatter() {
  scattered_ = true;
  if (list_ == nullptr) return;
  for (const Entry& e : *list_) delta_[e.topic] = e.delta;
}

void BatchOverlay::Focus(WordId word) {
  if (has_focus_ && focused_ == word) return;
  Unfocus();
  has_focus_ = true;
  focused_ = word;
  const IndexSlot& slot = index_[word];
  if (slot.stamp != stamp_) return;  // not moved in this batch
  if (slot.big != kNone) {
    big_ = big_deltas_.data() + size_t{slot.big} * num_topics_;
    big_listed_at_ = big_listed_.data() + size_t{slot.big} * num_topics_;
    big_list_ = &big_topics_[slot.big];
  } else if (slot.list != kNone) {
    list_ = &lists_[slot.list];
  } else {
    unfollowed_ = true;
  }
}

void BatchOverlay::AddSmall(TopicId k, int32_t d) {
  if (scattered_) delta_[k] += d;
  for (Entry& e : *list_) {
    if (e.topic == k) {
      e.delta += d;
      return;
    }
  }
  list_->push_back({k, d});
}

void BatchOverlay::AddBig(TopicId k, int32_t d) {
  if (!big_listed_at_[k]) {
    big_listed_at_[k] = 1;
    big_list_->push_back(k);
  }
  big_[k] += d;
}

void BatchOverlay::MakeBig() {
  IndexSlot& slot = index_[focused_];
  slot.big = bigs_used_++;
  if (big_deltas_.size() < size_t{bigs_used_} * num_topics_) {
    if (big_deltas_.empty()) {  // room for all of them, no doubling past it
      big_deltas_.reserve(size_t{max_bigs_} * num_topics_);
      big_listed_.reserve(size_t{max_bigs_} * num_topics_);
    }
    big_deltas_.resize(size_t{bigs_used_} * num_topics_, 0);
    big_listed_.resize(size_t{bigs_used_} * num_topics_, 0);
    big_topics_.resize(bigs_used_);
  }
  big_ = big_deltas_.data() + size_t{slot.big} * num_topics_;
  big_listed_at_ = big_listed_.data() + size_t{slot.big} * num_topics_;
  big_list_ = &big_topics_[slot.big];
  for (const Entry& e : *list_) {
    big_[e.topic] = e.delta;
    big_listed_at_[e.topic] = 1;
    big_list_->push_back(e.topic);
  }
  if (scattered_) {
    for (const Entry& e : *list_) delta_[e.topic] = 0;
    scattered_ = false;
  }
  list_ = nullptr;
}

void BatchOverlay::Move(TopicId from, TopicId to, int64_t word_tokens) {
  if (from == to || unfollowed_) return;
  if (big_ != nullptr) {
    if (from != kUncounted) AddBig(from, -1);
    AddBig(to, +1);
    return;
  }
  if (list_ == nullptr) {  // the word's first move in this batch
    IndexSlot& slot = index_[focused_];
    slot.stamp = stamp_;
    slot.big = kNone;
    if (max_word_tokens_ > 0 && word_tokens > max_word_tokens_) {
      slot.list = kNone;
      unfollowed_ = true;
      return;
    }
    slot.list = lists_used_++;
    if (lists_.size() < lists_used_) lists_.emplace_back();
    list_ = &lists_[slot.list];
    list_->clear();
  }
  if (from != kUncounted) AddSmall(from, -1);
  AddSmall(to, +1);
  if (list_->size() > kSmall && bigs_used_ < max_bigs_) MakeBig();
}

}  // namespace latentd::internal
