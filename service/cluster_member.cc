#include "service/cluster_member.h"

#include <algorithm>
#include <span>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "corpora/types.h"
#include "sampler/store_counts.h"
#include "service/internal/daemon_log.h"

namespace latentd::service {

using internal::Log;
using internal::LogWarning;

namespace {

// A node whose sync server is to pick a port (port 0) asks for the port its
// last run bound, kept in `file`, so that a restart with the same command
// line comes back at the address the ring knows. Only for the same host: a
// changed --cluster-listen host wins. True if it did.
bool RememberedSyncAddress(const std::string& file, std::string* listen) {
  if (!absl::EndsWith(*listen, ":0")) return false;
  absl::StatusOr<std::string> saved = ReadFileToString(file, 256);
  if (!saved.ok()) return false;
  const std::string address(absl::StripAsciiWhitespace(*saved));
  const std::string host = listen->substr(0, listen->size() - 1);
  if (!absl::StartsWith(address, host) || address.size() == host.size()) {
    return false;
  }
  *listen = address;
  return true;
}

}  // namespace

ClusterMember::ClusterMember(ClusterMemberOptions options,
                             ClusterRouter* router)
    : options_(std::move(options)), router_(router) {}

ClusterMember::~ClusterMember() = default;

absl::Status ClusterMember::Join(ClusterLinkOptions options, Trainer* trainer,
                                 const Vocabulary& vocab) {
  options.key_replicas = options_.replicas;
  const std::string address_file = options_.data_dir + "/cluster.address";
  const bool remembered = RememberedSyncAddress(address_file, &options.listen);
  const std::string listen = options.listen;
  // Kept before this node registers: a node killed while pending, then
  // admitted, must come back at the address the ring names.
  options.on_listening = [address_file](const std::string& address) {
    return WriteFileAtomically(address_file, address + "\n");
  };
  TopicTable* table = trainer->mutable_table();
  // Every word of the cluster, named, so that words any node brings reach
  // this one (AdoptWords).
  std::vector<sync::Key> keys(table->vocab_size());
  std::vector<std::string> names(table->vocab_size());
  for (WordId w = 0; w < keys.size(); ++w) {
    keys[w] = vocab.key(w);
    names[w] = vocab.word(w);
  }
  synced_ = std::make_unique<SyncedTopicTable>(table, std::move(keys),
                                               std::move(names));
  SweepPipeline* pipeline = trainer->pipeline();
  pipeline->SetCountUpdaterHook(
      [this](TopicTable*, std::span<const WordTopicDelta> applied) {
        return link_->AfterBatch(applied);
      });
  pipeline->SetQuiesceMutex(synced_->layout_mutex());
  Log(absl::StrCat("joining cluster '", options.cluster, "' as ",
                   options.node_id, " (", options.expected_members,
                   " members, ", options.consistency.ToString(), ")"));
  absl::StatusOr<std::unique_ptr<ClusterLink>> link =
      ClusterLink::Create(std::move(options), synced_.get());
  if (!link.ok()) {
    // The table is untouched (corrections are applied only once joined).
    pipeline->SetCountUpdaterHook(nullptr);
    pipeline->SetQuiesceMutex(nullptr);
    synced_.reset();
    // (Only for a port that could not be had: other failures, say of the
    // first sync pass, have nothing to do with it.)
    if (remembered &&
        absl::StrContains(link.status().message(), "cannot listen on")) {
      return absl::Status(
          link.status().code(),
          absl::StrCat(link.status().message(), " (the sync address ", listen,
                       " is the one this node had, ", "kept in ", address_file,
                       ": the ring knows it there; free the port, or give "
                       "--cluster-listen)"));
    }
    return link.status();
  }
  link_ = std::move(*link);
  router_->SetLink(link_.get());
  Log(absl::StrCat("joined: ", link_->ring_config().members.size(),
                   " members; sync server on ", link_->address()));
  return absl::OkStatus();
}

absl::Status ClusterMember::BeforeSweep(uint64_t* t,
                                        const std::function<bool()>& give_up) {
  if (link_->declared_down() && !router_->failed()) {
    router_->MarkFailed("this node was declared down and failed over");
    // Failed over while alive (its heartbeats were late): the others took
    // this node's counts out and its keys over; sampling here would feed
    // owners that no longer count it. A restart re-admits it.
    LogWarning(absl::StrCat(
        "cluster: this node was declared down and failed over; it stops "
        "sampling ",
        options_.on_declared_down
            ? "and restarts itself to return to the cluster"
            : "and goes on serving queries (restart it from its data "
              "directory to return to the cluster)"));
    if (options_.on_declared_down) options_.on_declared_down();
  }
  if (router_->failed()) {
    return absl::FailedPreconditionError(
        "this cluster node stopped sampling after a failed sweep");
  }
  link_->set_settled_checksum(0);  // sampling again: not settled
  drain_checksum_ = 0;
  *t = link_->sweep() + 1;
  return link_->BeforeSweep(*t, give_up);
}

bool ClusterMember::LeaveDue() const {
  return joined() && !leave_started_ && link_->LeaveRequested().has_value();
}

absl::Status ClusterMember::Leave(Trainer* trainer, const Vocabulary& vocab) {
  // From here on this node samples no more, whatever happens below.
  router_->MarkLeft();
  leave_started_ = true;
  const sync::RemoveMode mode = *link_->LeaveRequested();
  if (mode != sync::RemoveMode::kDrop && mode != sync::RemoveMode::kHandoff) {
    return absl::InvalidArgumentError(
        absl::StrCat("a live node is not removed as ",
                     sync::RemoveModeName(mode), " (only drop or handoff)"));
  }
  LATENTD_RETURN_IF_ERROR(synced_->ApplyPending());
  if (mode == sync::RemoveMode::kHandoff) {
    // The others adopt this node's documents with their topics (their
    // merges add those counts) before it takes them out below: net zero.
    bool committed = false;
    absl::Status shipped = HandOffDocuments(trainer, vocab, &committed);
    if (!shipped.ok()) {
      if (!committed) return RollBackLeave(shipped);
      // Committed: the hand-off only completes forward. Nothing was taken
      // out here yet; the next turn tries again (the receivers skip what
      // they hold, by source; the commit is idempotent).
      LogWarning(absl::StrCat("hand-off committed but not finished: ",
                              shipped.message(), "; retrying"));
      leave_started_ = false;
      return shipped;
    }
  }
  // Minus every token of this node's store, through the table's writer,
  // so the owners take this node's documents out of the global counts.
  sync::MoveCounters counters;
  LATENTD_ASSIGN_OR_RETURN(
      std::vector<WordTopicDelta> minus,
      StoreCounts(trainer->store(), -1, &counters.documents));
  LATENTD_RETURN_IF_ERROR(trainer->mutable_table()->Apply(minus));
  synced_->MarkApplied(minus);
  finished_ = true;  // Leave() pushes what is left and finishes
  Log(mode == sync::RemoveMode::kDrop
          ? absl::StrCat("leaving the cluster (drop): ", counters.documents,
                         " documents taken out of the model")
          : absl::StrCat("leaving the cluster (handoff): ", counters.documents,
                         " documents handed off; their counts leave with "
                         "this node as the others' come in"));
  LATENTD_RETURN_IF_ERROR(link_->Leave(counters));
  Log("left the cluster");
  if (options_.on_left_cluster) options_.on_left_cluster();
  return absl::OkStatus();
}

absl::Status ClusterMember::RollBackLeave(absl::Status why) {
  absl::Status back = link_->RollBackLeave(std::string(why.message()));
  if (back.ok()) {
    LogWarning(absl::StrCat(
        "cluster: this node's removal was rolled back (", why.message(),
        "): the receivers drop what they staged; this node ",
        options_.on_removal_rolled_back
            ? "restarts itself to sample again"
            : "stops sampling until it is restarted from its data "
              "directory"));
    if (options_.on_removal_rolled_back) options_.on_removal_rolled_back();
    return why;
  }
  // (An operator aborted the move meanwhile, or Redis is away: the
  // receivers hold what they staged until Redis decides; nothing counts
  // twice.)
  LogWarning(absl::StrCat("rolling this node's removal back failed: ",
                          back.message()));
  absl::Status failed = link_->FailLeave(std::string(why.message()));
  if (failed.ok()) leave_started_ = false;
  return why;
}

absl::Status ClusterMember::ApplyMerge(Trainer* trainer,
                                       const MergeResult& merged) {
  if (merged.added_counts.empty()) return absl::OkStatus();
  LATENTD_RETURN_IF_ERROR(trainer->mutable_table()->Apply(merged.added_counts));
  synced_->MarkApplied(merged.added_counts);
  return absl::OkStatus();
}

absl::StatusOr<size_t> ClusterMember::AdoptWords(Trainer* trainer,
                                                 Vocabulary* vocab) {
  if (link_ == nullptr || router_->left()) return 0;
  const size_t before = vocab->size();
  for (const auto& [key, word] : link_->ForeignWords()) {
    if (HashWord(word) != key) {
      if (misnamed_.insert(key).second) {
        LogWarning(absl::StrCat("cluster: key ", key, " came named '", word,
                                "', which is another word's key; ignored"));
      }
      continue;
    }
    vocab->Add(word);
  }
  LATENTD_RETURN_IF_ERROR(GrowTable(trainer, *vocab));
  const size_t added = vocab->size() - before;
  if (added > 0 && options_.words_adopted != nullptr) {
    options_.words_adopted->Add(added);
  }
  return added;
}

absl::Status ClusterMember::GrowTable(Trainer* trainer,
                                      const Vocabulary& vocab) {
  const size_t from = synced_->num_words();
  const size_t to = vocab.size();
  if (to <= from) return absl::OkStatus();
  std::vector<sync::Key> keys;
  std::vector<std::string> names;
  for (size_t w = from; w < to; ++w) {
    keys.push_back(vocab.key(static_cast<WordId>(w)));
    names.push_back(vocab.word(static_cast<WordId>(w)));
  }
  TopicTable* table = trainer->mutable_table();
  return link_->GrowKeys([&]() -> absl::Status {
    table->Resize(to);
    synced_->AddWords(keys, names);
    return absl::OkStatus();
  });
}

namespace {

uint64_t Mix(uint64_t x) {  // splitmix64's finalizer
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// An order-free checksum of a table's non-zero counts, by word key (not by
// word id, which differs between nodes), and of its topic totals.
uint64_t TableChecksum(const TopicTable& table, const Vocabulary& vocab) {
  uint64_t sum = 0;
  auto add = [&sum](uint64_t key, TopicId k, int64_t count) {
    sum += Mix(key ^ Mix(uint64_t{k} ^ Mix(static_cast<uint64_t>(count))));
  };
  const size_t words = std::min(vocab.size(), table.vocab_size());
  for (size_t w = 0; w < words; ++w) {
    const uint64_t key = vocab.key(static_cast<WordId>(w));
    table.ForEachNonZero(static_cast<WordId>(w),
                         [&](TopicId k, Count c) { add(key, k, c); });
  }
  for (TopicId k = 0; k < table.num_topics(); ++k) {
    if (table.TopicTotal(k) != 0) {
      add(sync::kTopicTotalsKey, k, table.TopicTotal(k));
    }
  }
  return sum == 0 ? 1 : sum;  // (0 reads as "not settled")
}

}  // namespace

bool ClusterMember::drain_requested() const {
  return joined() && link_->drain_requested();
}

absl::StatusOr<bool> ClusterMember::DrainStep(Trainer* trainer,
                                              const Vocabulary& vocab) {
  const sync::Synchronizer::PassResult pass = link_->DrainPass();
  LATENTD_RETURN_IF_ERROR(synced_->ApplyPending());
  // (Corrections from the background rounds may have come in besides the
  // pass's: a table unchanged since the last step is what tells.)
  const uint64_t checksum = TableChecksum(trainer->table(), vocab);
  const bool changed = !pass.quiet || checksum != drain_checksum_;
  drain_checksum_ = checksum;
  link_->set_settled_checksum(changed ? 0 : checksum);
  return changed;
}

void ClusterMember::Finish() {
  if (!finished_.exchange(true)) link_->Finish();
}

absl::Status ClusterMember::Stop() {
  // Push what is left and leave; the table keeps this node's last view.
  Finish();
  link_->Stop();
  return synced_->ApplyPending();
}

}  // namespace latentd::service
