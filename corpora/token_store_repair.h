// Repairing a damaged token store file (corpora/token_store.h) so that a
// node can start from it: the damaged blocks' documents are lost, every
// other document keeps its store-wide index.
//
// Each block of the file has a header (magic, document and token counts,
// payload size) with its own checksum, and a payload checksum. A block whose
// header verifies but whose payload does not is skipped by its size, and its
// documents are known by count. Where a header itself is damaged the repair
// looks for the next header that verifies (magic and checksum) and treats
// the bytes between as one damaged stretch; how many documents it held is
// the file header's count less those of every other block, which is only
// known when there is one such stretch. Each damaged block or stretch is
// replaced by as many empty documents (no tokens, no id, no user), so the
// documents after it keep their indices (the model's counts are rebuilt
// from the tokens that are left; a document's index is what doc-topic
// queries and exports use).
//
// Thread-safety: plain functions; the store must not be open for writing
// meanwhile (run it before the store is opened).
#ifndef LATENTD_CORPORA_TOKEN_STORE_REPAIR_H_
#define LATENTD_CORPORA_TOKEN_STORE_REPAIR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace latentd {

// One damaged block, or one stretch of bytes between two good blocks where
// no block header verified.
struct TokenStoreDamage {
  uint64_t first_doc = 0;  // store-wide index of its first document
  uint64_t docs = 0;       // documents lost (now empty)
  uint64_t tokens = 0;     // tokens lost
  uint64_t offset = 0;     // byte range in the damaged file
  uint64_t bytes = 0;
  bool counted_from_header = true;  // false: the file header's count less
                                    // the other blocks'
  std::string reason;               // the first check that failed
  // "documents 1024..2047 (1024 documents, 51234 tokens; bytes 65536..
  // 196607): REASON".
  std::string Describe() const;
};

struct TokenStoreRepair {
  std::vector<TokenStoreDamage> damage;  // empty: the file was intact
  std::string kept_aside;  // the damaged file's second name, if rewritten
  uint64_t docs_lost() const;
  uint64_t tokens_lost() const;
};

// Reads the store file at `path` through; if every block verifies, changes
// nothing and returns no damage. Otherwise keeps the damaged file as
// PATH.damaged-<UTC time> (KeepDamagedCopy) and rewrites `path` (temp
// file, fsync, rename) with each damaged block or stretch replaced by empty
// documents, and says what was lost. kDataLoss, changing nothing, if the
// file header is damaged, if more than one stretch has an unknown document
// count, if the counts do not add up to the file header's (or a stretch
// between good blocks could not hold its share), or if more documents would
// be lost than kept.
absl::StatusOr<TokenStoreRepair> RepairFileTokenStore(const std::string& path);

}  // namespace latentd

#endif  // LATENTD_CORPORA_TOKEN_STORE_REPAIR_H_
