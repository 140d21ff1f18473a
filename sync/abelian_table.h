// The keyed Abelian table the synchronizer takes changes from and writes
// corrections into (docs/design.md, "Many nodes"). sync/ defines it; the
// sampler's table implements it (sampler/synced_table.h), so sync/ never
// includes sampler/ headers.
//
// A key's value is a sparse vector of counts over `dimension()` topics.
// Values form an Abelian group under +, so the synchronizer can batch,
// delay and merge deltas without loss.
#ifndef LATENTD_SYNC_ABELIAN_TABLE_H_
#define LATENTD_SYNC_ABELIAN_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace latentd::sync {

using Key = uint64_t;

// The topic totals n_k travel as one more key, this reserved value (a word
// key is an xxh64 hash; hitting this value has probability 2^-64).
inline constexpr Key kTopicTotalsKey = ~uint64_t{0};

struct SparseEntry {
  uint32_t topic = 0;
  int64_t count = 0;
  friend bool operator==(const SparseEntry&, const SparseEntry&) = default;
};
// Topics ascending and distinct, counts non-zero ("canonical").
using SparseVector = std::vector<SparseEntry>;

// a + sign·b into *out (canonical if a and b are). sign is +1 or -1.
// `out` may not alias a or b.
void AddSparse(const SparseVector& a, const SparseVector& b, int sign,
               SparseVector* out);
// Σ |count|.
int64_t L1Norm(const SparseVector& v);

// Thread-safety (what implementations must provide): EnqueueCorrection,
// TakeChange and DirtyWeight are called from synchronizer threads
// concurrently with the table's own writer (the sampler's count updater) and
// with each other for different keys; never concurrently for the same key
// index.
class AbelianTable {
 public:
  virtual ~AbelianTable() = default;

  // The number of keys this node holds. Keys are addressed by index
  // 0..num_keys()-1 below. Fixed, unless the table grows (GrowsKeys): then
  // it grows only inside Synchronizer::AddKeys's callback, by appending.
  // REQUIRES: concurrent calls see a size that does not change under them.
  virtual size_t num_keys() const = 0;
  virtual Key key(size_t index) const = 0;
  // K: every topic index is < dimension().
  virtual uint32_t dimension() const = 0;

  // Enqueues x ← x + correction; the table's single writer applies it
  // later. A correction is never part of a key's change (TakeChange).
  // REQUIRES: index < num_keys(), `correction` canonical with topics <
  // dimension().
  virtual void EnqueueCorrection(size_t index,
                                 const SparseVector& correction) = 0;

  // Change accounting. The table accumulates, per key, the net change its
  // own writer made (not corrections), starting from its whole initial
  // value; the synchronizer sends these changes and never reads x.
  //
  // Appends to *out every index whose change may have become non-empty
  // since the previous call (the first call: every key whose initial value
  // is not empty). Every key whose change is not empty must be listed at
  // some point after it became so: a key is registered with its owner, and
  // hears the others' changes, once it has sent a change. An index may
  // come more than once, or with its change already taken. Called by one
  // thread at a time.
  virtual void TakeDirtyList(std::vector<uint32_t>* out) = 0;
  // Moves the key's accumulated change not yet taken into *out (canonical;
  // empty if none) and clears its dirty weight. A table may hand over
  // changes only as of its last TakeDirtyList; later ones then come after
  // a later one. REQUIRES: index < num_keys().
  virtual void TakeChange(size_t index, SparseVector* out) = 0;
  // How much the key's change not yet taken may weigh (e.g. Σ|change|; 0 =
  // none), without clearing anything. Lets background rounds leave keys
  // with little change to a later round. The default says "much".
  virtual uint32_t DirtyWeight(size_t index) const {
    (void)index;
    return UINT32_MAX;
  }

  // Growing key sets (docs/design.md, "Growing vocabulary in a
  // cluster"). A table that returns true wants every key of the cluster,
  // not just those it writes: the synchronizer asks the owners for every
  // key (DeltaBatch.all_keys), tells them each key's name (KeyName) the
  // first time it sends the key, keeps the changes of keys this table does
  // not hold aside with their names (Synchronizer::ForeignKeys), and adds
  // keys through Synchronizer::AddKeys, whose callback appends them to the
  // table (existing indices keep their keys).
  virtual bool GrowsKeys() const { return false; }
  // The name of key index `index` (a word's UTF-8 form; "" if it has
  // none). REQUIRES: index < num_keys().
  virtual std::string KeyName(size_t index) const {
    (void)index;
    return {};
  }
};

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_ABELIAN_TABLE_H_
