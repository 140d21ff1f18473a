#include "corpora/types.h"

#include <xxhash.h>

namespace latentd {

WordKey HashWord(std::string_view normalized_word) {
  WordKey key =
      XXH64(normalized_word.data(), normalized_word.size(), kWordKeySeed);
  // kTopicTotalsKey is reserved; the one word that hashes to it gets the
  // neighbouring key instead (a collision with that word is as unlikely as
  // any other 64-bit collision).
  if (key == kTopicTotalsKey) key = kTopicTotalsKey - 1;
  return key;
}

}  // namespace latentd
