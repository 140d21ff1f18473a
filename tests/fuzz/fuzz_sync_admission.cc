// libFuzzer harness: an owner's admission of delta batches (sync/
// owner_shard.h, "Admission"), as ClusterLink sets it up for a ring of
// "node-0" and "node-1" in which this owner owns the even keys. Messages
// (the format of fuzz_sync_owner's corpus): a DeltaBatch (Apply), a ring
// epoch change, a sender retracted. Whatever the bytes: no batch from
// outside the ring and no odd key is ever applied, no incarnation past the
// clock bound is taken, and every global stays a canonical vector of
// positive counts (no sender took a key below its own part).
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "sync/owner_shard.h"
#include "sync/sync.pb.h"
#include "tests/fuzz/fuzz_util.h"

namespace latentd::sync {
namespace {

constexpr uint32_t kDimension = 8;

enum Op : uint8_t {
  kOpDeltaBatch = 0,
  kOpAdvanceEpoch = 1,
  kOpRetractSender = 2,
  kNumOps = 3,
};

OwnerAdmission Admission() {
  OwnerAdmission a;
  a.members = {"node-0", "node-1"};
  a.owns = [](Key k) { return k % 2 == 0; };
  a.max_incarnation = [] {
    return IncarnationBound(absl::FromUnixSeconds(1800000000), kMaxClockSkew);
  };
  a.counts = true;
  return a;
}

void CheckGlobal(Key key, const SparseVector& v) {
  LATENTD_FUZZ_CHECK(key % 2 == 0);
  for (size_t i = 0; i < v.size(); ++i) {
    LATENTD_FUZZ_CHECK(v[i].topic < kDimension);
    LATENTD_FUZZ_CHECK(v[i].count > 0);
    if (i > 0) LATENTD_FUZZ_CHECK(v[i - 1].topic < v[i].topic);
  }
}

}  // namespace
}  // namespace latentd::sync

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  latentd::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace latentd::sync;
  OwnerShard owner(kDimension);
  uint64_t epoch = 1;
  owner.SetAdmission(epoch, Admission());
  owner.SetEpoch(epoch);
  const uint64_t bound = Admission().max_incarnation();
  for (const latentd::fuzz::Message& m : latentd::fuzz::SplitMessages(
           std::string_view(reinterpret_cast<const char*>(data), size))) {
    switch (m.op % kNumOps) {
      case kOpDeltaBatch: {
        DeltaBatch batch;
        if (!batch.ParseFromArray(m.body.data(),
                                  static_cast<int>(m.body.size()))) {
          break;
        }
        DeltaReply reply;
        const OwnerShardStats before = owner.stats();
        const bool ok = owner.Apply(batch, &reply).ok();
        if (ok) {
          LATENTD_FUZZ_CHECK(batch.node_id() == "node-0" ||
                             batch.node_id() == "node-1");
          LATENTD_FUZZ_CHECK(batch.incarnation() <= bound);
        } else {
          // A refusal changed nothing but its counters.
          LATENTD_FUZZ_CHECK(owner.stats().batches_applied ==
                             before.batches_applied);
          LATENTD_FUZZ_CHECK(owner.stats().keys_applied == before.keys_applied);
        }
        break;
      }
      case kOpAdvanceEpoch:
        // The same ownership at the next epoch: nothing moves.
        owner.SetAdmission(epoch + 1, Admission());
        owner.AdvanceEpoch(
            ++epoch, [](Key) { return std::string(); }, "node-0");
        break;
      case kOpRetractSender:
        owner.RetractSender(std::string(m.body));
        break;
    }
  }
  for (const auto& [key, global] : owner.Snapshot()) CheckGlobal(key, global);
  return 0;
}
