// BatchOverlay: a sampling kernel's record of its own batch's moves on the
// word rows, so that the later tokens of a batch see them before the count
// updater applies the batch to the shared table (issue 15). Without it a
// token sees word rows as they were when its batch began; on corpora of
// short documents, where n_wk carries most of a token's conditional, that
// lag cost quality per sweep (0.6% of log-likelihood on one thread).
//
// For word w and topic k the kernel's n_wk is table(w, k) + Delta(k) with
// w focused: the table counts every token of the batch at its topic when
// the batch began, and the overlay holds the net count of the batch's moves
// of w so far. Each token is sampled once per batch, so table + overlay
// counts it at its current topic (the kernel excludes it as before) and is
// never negative. The topic totals need no overlay: the kernels already
// follow their own moves in n_k.
//
// Layout: a word-indexed array, stamped per batch so that Reset costs
// O(what the batch moved), not O(V), points to each moved word's record:
//  - small: a list of at most kSmall (topic, net delta) pairs; the first
//    Delta or ScatteredDeltas after a focus scatters them over a dense
//    K-array (undone when the focus moves on);
//  - big, once a word has moved from or to more than kSmall topics: a
//    K-array of its deltas and the list of its topics, so the frequent
//    words cost O(1) per move and per focus, not O(topics moved). Big
//    records take at most kMaxBigBytes per overlay; past that a word's
//    list grows instead (at K=10,000 a batch of news20 made about 600
//    words big: 30 MiB per sampler thread).
// Focusing a word is O(1); a token that moves nothing pays no more.
//
// Frequent words are not followed (max_word_tokens): a batch holds about
// its share of the corpus of a frequent word's tokens (under 1% with the
// corpus builder's 128+ batches), so its own moves change that word's
// n_wk by that share, as the other batches in flight do anyway; the cost of
// following them is not (the frequent words are most of the tokens and
// have the widest records). A rare word's tokens can all sit in one batch,
// where its own moves are most of its row: those are followed. The choice
// is made at a word's first move in a batch, from its tokens in the table,
// and holds for the rest of the batch. docs/benchmarks.md, "Kernels".
//
// Thread-safety: none; each kernel object (one thread) owns one.
#ifndef LATENTD_SAMPLER_INTERNAL_BATCH_OVERLAY_H_
#define LATENTD_SAMPLER_INTERNAL_BATCH_OVERLAY_H_

#include <cstdint>
#include <vector>

#include "corpora/types.h"

namespace latentd::internal {

class BatchOverlay {
 public:
  struct Entry {
    TopicId topic;
    int32_t delta;  // net moves into the topic; may be 0 (moved back)
  };
  static constexpr uint32_t kSmall = 8;
  // What the big records of one overlay may take (K * 5 bytes each).
  static constexpr size_t kMaxBigBytes = size_t{4} << 20;

  // max_word_tokens: a word with more tokens than this (its row's total at
  // its first move in the batch) is not followed; 0: every word is;
  // negative (kOverlayMaxWordTokensAuto): each batch's Reset says.
  explicit BatchOverlay(TopicId num_topics, int64_t max_word_tokens = 0);

  // Forgets every move (call at the start of each batch) and makes room
  // for words < vocab_size. auto_max_word_tokens: the batch's cap if the
  // constructor left it to Reset.
  void Reset(size_t vocab_size, int64_t auto_max_word_tokens = 0);
  // Hints that `word` will be focused soon. REQUIRES: word < vocab_size.
  void Prefetch(WordId word) const { __builtin_prefetch(&index_[word]); }
  // Makes `word` the focused word; nothing if it already is.
  // REQUIRES: word < the vocab_size of the last Reset.
  void Focus(WordId word);

  // The focused word's net moves. REQUIRES: a word is focused.
  // Whether it has moves recorded in this batch (never, if not followed).
  bool empty() const { return list_ == nullptr && big_ == nullptr; }
  // Calls fn(topic, delta) for each topic it moved from or to.
  template <typename Fn>
  void ForEachEntry(Fn&& fn) const;
  // Its net count for topic k (0 if none); ScatteredDeltas() all K of them
  // (valid until the next Move or focus).
  int32_t Delta(TopicId k) { return ScatteredDeltas()[k]; }
  const int32_t* ScatteredDeltas() {
    if (big_ != nullptr) return big_;
    if (!scattered_) Scatter();
    return delta_.data();
  }

  // Records that one token of the focused word moved from `from` to `to`;
  // `word_tokens` is the word's tokens in the table (its row's total), read
  // only at its first move in the batch to decide whether it is followed
  // (see max_word_tokens). `from` may be kUncounted (sampling_kernel.h): a
  // token the table did not count, which only adds to `to`.
  // REQUIRES: a word is focused.
  void Move(TopicId from, TopicId to, int64_t word_tokens);
  // Whether the focused word is followed, as decided at its first move in
  // this batch (true before then).
  bool followed() const { return !unfollowed_; }

 private:
  static constexpr uint32_t kNone = ~uint32_t{0};
  // With stamp == the batch's and neither list nor big set, the word is
  // not followed in this batch.
  struct IndexSlot {
    uint32_t stamp = 0;     // the batch of list/big; else neither is set
    uint32_t list = kNone;  // into lists_
    uint32_t big = kNone;   // into big_deltas_ (K each) and big_topics_
  };
  void Scatter();
  void Unfocus();
  void AddSmall(TopicId k, int32_t d);
  void AddBig(TopicId k, int32_t d);
  void MakeBig();

  const TopicId num_topics_;
  const uint32_t max_bigs_;  // kMaxBigBytes' worth, at least 1
  const int64_t configured_max_word_tokens_;
  int64_t max_word_tokens_;  // the current batch's
  uint32_t stamp_ = 0;       // the current batch's
  std::vector<IndexSlot> index_;
  std::vector<std::vector<Entry>> lists_;  // the first lists_used_ are live
  uint32_t lists_used_ = 0;
  // Big records: K deltas each (zero where not moved) and the topics moved
  // from or to, each once; the first bigs_used_ are live.
  std::vector<int32_t> big_deltas_;
  std::vector<uint8_t> big_listed_;  // 1: in the record's topic list
  std::vector<std::vector<TopicId>> big_topics_;
  uint32_t bigs_used_ = 0;
  // The focused word: its record (list_ or big_ and big_list_; nullptr
  // until it moves) and, for a small one once scattered_, its deltas by
  // topic in delta_ (all zero otherwise).
  bool has_focus_ = false;
  bool scattered_ = false;
  bool unfollowed_ = false;
  WordId focused_ = 0;
  std::vector<Entry>* list_ = nullptr;
  int32_t* big_ = nullptr;
  uint8_t* big_listed_at_ = nullptr;
  std::vector<TopicId>* big_list_ = nullptr;
  std::vector<int32_t> delta_;
};

template <typename Fn>
void BatchOverlay::ForEachEntry(Fn&& fn) const {
  if (big_ != nullptr) {
    for (TopicId k : *big_list_) fn(k, big_[k]);
  } else if (list_ != nullptr) {
    for (const Entry& e : *list_) fn(e.topic, e.delta);
  }
}

}  // namespace latentd::internal

#endif  // LATENTD_SAMPLER_INTERNAL_BATCH_OVERLAY_H_
