// libFuzzer harness: the client side of the sync port, the handler of an
// owner's DeltaReply (Synchronizer::OnReply: CheckReply, ApplyChanges) over
// the sampler's own table (SyncedTopicTable). The input is a sequence of
// messages: a reply to answer the next batch with, an answer from a real
// OwnerShard (so that incarnations get set as a real owner sets them),
// local count changes, and flushes. A reply may be refused, but never
// crashes the node, and the table's counts never go negative: a
// correction that would is refused whole.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "sampler/synced_table.h"
#include "sampler/topic_table.h"
#include "sync/owner_shard.h"
#include "sync/sync.pb.h"
#include "sync/synchronizer.h"
#include "tests/fuzz/fuzz_util.h"

namespace latentd {
namespace {

constexpr TopicId kTopics = 4;
constexpr size_t kWords = 6;

enum Op : uint8_t {
  kOpReply = 0,      // body: a DeltaReply for the next batch
  kOpRealOwner = 1,  // the next batch goes to the real shard
  kOpUpdate = 2,     // body: (word, topic, +1/-1) triples, applied locally
  kOpFlush = 3,      // ops 3 and 4: a Flush
  kNumOps = 5,
};

// Answers each batch with the next queued reply; with none queued, with
// the real shard's answer.
class ScriptedChannel final : public sync::OwnerChannel {
 public:
  explicit ScriptedChannel(sync::OwnerShard* real) : real_(real) {}
  void Queue(sync::DeltaReply reply) {
    absl::MutexLock l(&mu_);
    replies_.push_back(std::move(reply));
  }
  void Send(const sync::DeltaBatch& batch, DoneFn done) override {
    sync::DeltaReply reply;
    bool scripted = false;
    {
      absl::MutexLock l(&mu_);
      if (!replies_.empty()) {
        reply = std::move(replies_.front());
        replies_.pop_front();
        scripted = true;
      }
    }
    if (!scripted) {
      if (absl::Status s = real_->Apply(batch, &reply); !s.ok()) {
        done(s);
        return;
      }
    }
    done(std::move(reply));
  }
  bool remote() const override { return true; }
  std::string name() const override { return "owner"; }

 private:
  sync::OwnerShard* real_;
  absl::Mutex mu_;
  std::deque<sync::DeltaReply> replies_ ABSL_GUARDED_BY(mu_);
};

void CheckTable(const TopicTable& table) {
  for (WordId w = 0; w < kWords; ++w) {
    for (TopicId k = 0; k < kTopics; ++k) {
      LATENTD_FUZZ_CHECK(table.Get(w, k) >= 0);
    }
  }
}

}  // namespace
}  // namespace latentd

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  latentd::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace latentd;
  TopicTable table(kWords, kTopics);
  std::vector<sync::Key> keys;
  for (size_t w = 0; w < kWords; ++w) keys.push_back(1000 + 7 * w);
  SyncedTopicTable synced(&table, keys);
  sync::OwnerShard real(kTopics);
  auto channel = std::make_unique<ScriptedChannel>(&real);
  ScriptedChannel* script = channel.get();
  std::vector<std::unique_ptr<sync::OwnerChannel>> channels;
  channels.push_back(std::move(channel));
  sync::SynchronizerOptions o;
  o.node_id = "node-1";
  o.incarnation = 77;
  o.round_interval = absl::Hours(1);  // rounds only when the input says
  // A failed round waits this long before its retry, even when a pass is
  // asked for (Synchronizer::Pass waits for it): short, or a pass after a
  // refused reply would wait that long (a libFuzzer timeout at an hour).
  o.retry_interval = absl::Milliseconds(1);
  sync::Synchronizer synchronizer(o, &synced,
                                  std::vector<uint32_t>(synced.num_keys(), 0),
                                  std::move(channels));
  synchronizer.Start();
  for (const fuzz::Message& m : fuzz::SplitMessages(
           std::string_view(reinterpret_cast<const char*>(data), size), 32)) {
    switch (m.op % kNumOps) {
      case kOpReply: {
        sync::DeltaReply reply;
        if (reply.ParseFromArray(m.body.data(),
                                 static_cast<int>(m.body.size()))) {
          script->Queue(std::move(reply));
        }
        break;
      }
      case kOpRealOwner:
        break;  // nothing queued: the real shard answers
      case kOpUpdate: {
        std::vector<WordTopicDelta> deltas;
        for (size_t i = 0; i + 2 < m.body.size(); i += 3) {
          WordTopicDelta d;
          d.word = static_cast<uint8_t>(m.body[i]) % kWords;
          d.topic = static_cast<uint8_t>(m.body[i + 1]) % kTopics;
          d.delta = (m.body[i + 2] & 1) ? 1 : -1;
          deltas.push_back(d);
        }
        // One delta per (word, topic), as the combiner emits them.
        std::sort(deltas.begin(), deltas.end(),
                  [](const WordTopicDelta& a, const WordTopicDelta& b) {
                    return a.word != b.word ? a.word < b.word
                                            : a.topic < b.topic;
                  });
        deltas.erase(
            std::unique(deltas.begin(), deltas.end(),
                        [](const WordTopicDelta& a, const WordTopicDelta& b) {
                          return a.word == b.word && a.topic == b.topic;
                        }),
            deltas.end());
        if (table.Apply(deltas).ok()) synced.MarkApplied(deltas);
        break;
      }
      case kOpFlush:
      case kOpFlush + 1:
        (void)synchronizer.Flush();
        break;
    }
    (void)synced.ApplyPending();  // the count updater's turn
    CheckTable(table);
  }
  synchronizer.Stop();
  return 0;
}
