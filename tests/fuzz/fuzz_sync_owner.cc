// libFuzzer harness: the owner side of the sync port, as ClusterLink's
// frame handler drives it (service/cluster/cluster_link.cc): a sequence of
// messages, each a DeltaBatch (OwnerShard::Apply), a KeyHandoff
// (ImportKeys) or a Progress (the consistency clocks), plus ring epoch
// changes and departing senders between them. Whatever the bytes, the
// shard answers OK or an error, and its globals stay canonical sparse
// vectors over its dimension.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "sync/consistency.h"
#include "sync/owner_shard.h"
#include "sync/sync.pb.h"
#include "tests/fuzz/fuzz_util.h"

namespace latentd::sync {
namespace {

constexpr uint32_t kDimension = 8;
constexpr char kMember[] = "node-0";  // the ring's one member

// Ops of the harness's messages (tests/fuzz/make_seeds.cc writes them).
enum Op : uint8_t {
  kOpDeltaBatch = 0,
  kOpKeyHandoff = 1,
  kOpProgress = 2,
  kOpAdvanceEpoch = 3,  // body: nothing; odd keys move to "node-x"
  kOpForgetSender = 4,  // body: the node id
  kOpRetractSender = 5,
  kNumOps = 6,
};

void CheckCanonical(const SparseVector& v) {
  for (size_t i = 0; i < v.size(); ++i) {
    LATENTD_FUZZ_CHECK(v[i].topic < kDimension);
    LATENTD_FUZZ_CHECK(v[i].count != 0);
    if (i > 0) LATENTD_FUZZ_CHECK(v[i - 1].topic < v[i].topic);
  }
}

void CheckReply(const DeltaReply& reply) {
  const SparseBlock& b = reply.changes();
  LATENTD_FUZZ_CHECK(b.sizes_size() == reply.changed_keys_size());
  uint64_t pairs = 0;
  for (uint32_t s : b.sizes()) pairs += s;
  LATENTD_FUZZ_CHECK(pairs == static_cast<uint64_t>(b.topics_size()));
  LATENTD_FUZZ_CHECK(b.topics_size() == b.counts_size());
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
  ClockTable clocks({kMember});
  uint64_t epoch = 0;
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
        if (owner.Apply(batch, &reply).ok()) CheckReply(reply);
        break;
      }
      case kOpKeyHandoff: {
        KeyHandoff h;
        if (!h.ParseFromArray(m.body.data(), static_cast<int>(m.body.size()))) {
          break;
        }
        (void)owner.ImportKeys(h);
        break;
      }
      case kOpProgress: {
        Progress p;
        if (!p.ParseFromArray(m.body.data(), static_cast<int>(m.body.size()))) {
          break;
        }
        const bool kept = clocks.Update(p.node_id(), p.clock(), p.finished());
        if (p.ready()) clocks.MarkReady(p.node_id());
        if (p.node_id() == kMember) {
          LATENTD_FUZZ_CHECK(kept && clocks.Get(kMember) >= p.clock());
        } else {
          // Progress from an id no ring names is kept aside (or dropped):
          // it never counts.
          LATENTD_FUZZ_CHECK(clocks.Get(p.node_id()) == 0);
        }
        break;
      }
      case kOpAdvanceEpoch: {
        std::vector<KeyHandoff> out = owner.AdvanceEpoch(
            epoch = std::max(epoch, owner.epoch()) + 1,
            [](Key k) { return k % 2 == 1 ? "node-x" : ""; }, "node-0", 4);
        for (const KeyHandoff& h : out) {
          for (uint64_t k : h.keys()) LATENTD_FUZZ_CHECK(k % 2 == 1);
        }
        break;
      }
      case kOpForgetSender:
        owner.ForgetSender(std::string(m.body));
        break;
      case kOpRetractSender:
        owner.RetractSender(std::string(m.body));
        break;
    }
  }
  for (const auto& [key, global] : owner.Snapshot()) CheckCanonical(global);
  return 0;
}
