// Named integer types shared by every latentd module, and the word-key hash.
//
// A word's key is a 64-bit xxh64 hash (fixed seed) of its normalised UTF-8
// form, so nodes need no shared vocabulary. Each node maps keys to dense local
// WordIds for its arrays. Thread-safe: everything here is a pure function.
#ifndef LATENTD_CORPORA_TYPES_H_
#define LATENTD_CORPORA_TYPES_H_

#include <cstdint>
#include <string_view>

namespace latentd {

using WordKey = uint64_t;   // global, hash of the normalised word
using WordId = uint32_t;    // dense, local to one node's vocabulary
using TopicId = uint32_t;   // 0 .. K-1
using Count = int32_t;      // a word-topic or doc-topic count
using DocIndex = uint64_t;  // position of a document in a token store

// Reserved key of the topic-totals vector n_k (docs/design.md "Keys"). No word
// hashes to it: HashWord() remaps the one colliding value.
inline constexpr WordKey kTopicTotalsKey = ~WordKey{0};

// The fixed xxh64 seed of word keys. Changing it changes every key: never.
inline constexpr uint64_t kWordKeySeed = 0x6c6174656e7464ULL;  // "latentd"

// Key of a normalised word (the tokenizer's output).
WordKey HashWord(std::string_view normalized_word);

// Largest number of topics a model may have. Keeps K * sizeof(Count) per
// document scratch small and rejects absurd requests (a topic id of 10^9).
inline constexpr TopicId kMaxTopics = 1 << 16;

}  // namespace latentd

#endif  // LATENTD_CORPORA_TYPES_H_
