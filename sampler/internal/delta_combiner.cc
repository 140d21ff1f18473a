#include "sampler/internal/delta_combiner.h"

#include <algorithm>
#include <bit>

namespace latentd::internal {

void DeltaCombiner::Combine(const std::vector<TopicChange>& changes,
                            std::vector<WordTopicDelta>* deltas) {
  deltas->clear();
  if (changes.empty()) return;
  WordId max_word = 0;
  TopicId max_topic = 0;
  for (const TopicChange& c : changes) {
    max_word = std::max(max_word, c.word);
    max_topic = std::max(max_topic, c.new_topic);
    if (c.old_topic != kUncounted) max_topic = std::max(max_topic, c.old_topic);
  }
  // key = word | topic | sign, the sign lowest so that the +1 and −1 of one
  // (word, topic) end up adjacent.
  const int topic_bits = std::bit_width(max_topic);
  const int key_bits = std::bit_width(max_word) + topic_bits + 1;
  keys_.resize(2 * changes.size());
  size_t n = 0;
  for (const TopicChange& c : changes) {
    if (c.old_topic == c.new_topic) continue;
    const uint64_t word = uint64_t{c.word} << (topic_bits + 1);
    if (c.old_topic != kUncounted)
      keys_[n++] = word | (uint64_t{c.old_topic} << 1);
    keys_[n++] = word | (uint64_t{c.new_topic} << 1) | 1;
  }
  keys_.resize(n);
  if (n == 0) return;
  scratch_.resize(n);
  const int passes = (key_bits + max_digit_bits_ - 1) / max_digit_bits_;
  const int digit_bits = (key_bits + passes - 1) / passes;
  const uint64_t mask = (uint64_t{1} << digit_bits) - 1;
  histogram_.resize(size_t{1} << digit_bits);
  for (int shift = 0; shift < key_bits; shift += digit_bits) {
    std::fill(histogram_.begin(), histogram_.end(), 0);
    for (uint64_t k : keys_) ++histogram_[(k >> shift) & mask];
    uint32_t sum = 0;
    for (uint32_t& h : histogram_) {
      const uint32_t count = h;
      h = sum;
      sum += count;
    }
    for (uint64_t k : keys_) {
      scratch_[histogram_[(k >> shift) & mask]++] = k;
    }
    keys_.swap(scratch_);
  }

  // Sum adjacent keys of one (word, topic), without data-dependent branches
  // (whether the next key continues a pair is a coin flip): every step
  // writes the running pair, and the output advances past it only when the
  // next key starts a new pair and the net is non-zero.
  deltas->resize(n + 1);
  WordTopicDelta* out = deltas->data();
  const uint64_t topic_mask = (uint64_t{1} << topic_bits) - 1;
  uint64_t pair = keys_[0] >> 1;
  int32_t net = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t next = keys_[i] >> 1;
    const int32_t sign = 2 * static_cast<int32_t>(keys_[i] & 1) - 1;
    const bool new_pair = next != pair;
    *out = {static_cast<WordId>(pair >> topic_bits),
            static_cast<TopicId>(pair & topic_mask), net};
    out += new_pair & (net != 0);
    net = new_pair ? sign : net + sign;
    pair = next;
  }
  *out = {static_cast<WordId>(pair >> topic_bits),
          static_cast<TopicId>(pair & topic_mask), net};
  out += (net != 0);
  deltas->resize(out - deltas->data());
}

}  // namespace latentd::internal
