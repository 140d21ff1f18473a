#include "service/cluster/cluster_node.h"

#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "corpora/corpus_builder.h"
#include "hashring/ring.h"
#include "sampler/doc_topic_stats.h"
#include "sampler/store_counts.h"
#include "service/cluster/owned_log_likelihood.h"

namespace latentd {

namespace {

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) +
         1e-9 * static_cast<double>(ts.tv_nsec);
}

// Seed of document-id hashes (their own seed, so a document's shard does
// not follow a word key's owner). Changing it moves documents: never.
constexpr uint64_t kDocumentShardSeed = 0x646f637368617264ULL;  // "docshard"

}  // namespace

uint32_t DocumentShard(ShardBy by, uint64_t index, std::string_view id,
                       uint32_t num_shards) {
  LATENTD_CHECK(num_shards > 0);
  if (by == ShardBy::kIndex) return static_cast<uint32_t>(index % num_shards);
  return static_cast<uint32_t>(XXH64(id.data(), id.size(), kDocumentShardSeed) %
                               num_shards);
}

absl::StatusOr<std::unique_ptr<ClusterNode>> ClusterNode::Create(
    ClusterNodeOptions options) {
  std::unique_ptr<ClusterNode> node(new ClusterNode());
  node->options_ = std::move(options);
  if (node->options_.num_shards == 0 ||
      node->options_.shard >= node->options_.num_shards) {
    return absl::InvalidArgumentError("shard must be < num_shards");
  }
  LATENTD_RETURN_IF_ERROR(node->Load());
  LATENTD_ASSIGN_OR_RETURN(
      node->link_, ClusterLink::Create(node->options_, node->synced_.get()));
  node->link_->set_documents(node->store_->meta().num_docs);
  return node;
}

ClusterNode::~ClusterNode() { Stop(); }

absl::Status ClusterNode::Load() {
  const ClusterNodeOptions& o = options_;
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<DocumentReader> reader,
                           OpenDocumentReader(o.corpus));
  std::vector<std::vector<std::string>> mine;
  absl::flat_hash_set<std::string> all_words;
  RawDocument doc;
  for (uint64_t i = 0; o.max_docs == 0 || i < o.max_docs; ++i) {
    LATENTD_ASSIGN_OR_RETURN(bool more, reader->Next(&doc));
    if (!more) break;
    for (const std::string& w : doc.words) all_words.insert(w);
    if (DocumentShard(o.shard_by, i, doc.id, o.num_shards) == o.shard) {
      mine.push_back(std::move(doc.words));
    }
  }
  global_vocab_ = all_words.size();
  TokenStoreMeta meta;
  store_ = CreateInMemoryTokenStore(meta);
  CorpusBuilderOptions build;
  build.num_topics = o.num_topics;
  build.seed = o.seed * 1000003 + o.shard;
  std::unique_ptr<DocumentReader> shard_reader =
      NewInMemoryDocumentReader(std::move(mine));
  LATENTD_ASSIGN_OR_RETURN(BuiltCorpus built,
                           BuildCorpus(*shard_reader, build, store_.get()));
  tokens_ = built.stats.tokens;
  word_keys_.resize(built.vocab.size());
  for (WordId w = 0; w < built.vocab.size(); ++w) {
    word_keys_[w] = built.vocab.key(w);
  }
  table_ = std::make_unique<TopicTable>(built.vocab.size(), o.num_topics);
  LATENTD_RETURN_IF_ERROR(RebuildTable(store_.get(), table_.get()));
  synced_ = std::make_unique<SyncedTopicTable>(table_.get(), word_keys_);
  PipelineOptions po;
  po.threads = o.threads;
  pipeline_ = std::make_unique<SweepPipeline>(po, o.num_topics);
  pipeline_->SetCountUpdaterHook(
      [this](TopicTable*, std::span<const WordTopicDelta> applied) {
        return link_->AfterBatch(applied);
      });
  pipeline_->SetQuiesceMutex(synced_->layout_mutex());
  const double a = o.alpha > 0 ? o.alpha : 50.0 / o.num_topics;
  alpha_.assign(o.num_topics, a);
  return absl::OkStatus();
}

bool ClusterNode::WaitAllFinished(absl::Duration timeout) {
  return link_->WaitAllFinished(timeout);
}

absl::StatusOr<NodeSweepReport> ClusterNode::Sweep(bool evaluate) {
  if (!failed_.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "node ", node_id(),
        " stopped sampling after a failed sweep: ", failed_.message()));
  }
  absl::StatusOr<NodeSweepReport> report = SweepOnce(evaluate);
  if (!report.ok()) failed_ = report.status();
  return report;
}

absl::StatusOr<NodeSweepReport> ClusterNode::SweepOnce(bool evaluate) {
  NodeSweepReport report;
  const uint64_t t = link_->sweep() + 1;
  const auto wait_start = std::chrono::steady_clock::now();
  LATENTD_RETURN_IF_ERROR(link_->BeforeSweep(t));
  report.wait_seconds = std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - wait_start)
                            .count();
  if (options_.on_sweep_start) options_.on_sweep_start(node_id(), t);

  SweepParams params;
  params.table = table_.get();
  params.alpha = alpha_;
  params.beta = options_.beta;
  params.beta_sum = options_.beta * static_cast<double>(global_vocab_);
  params.seed = options_.seed * 7919 + options_.shard;
  params.sweep = t - 1;
  DocTopicStats stats(alpha_);
  const double cpu_start = ThreadCpuSeconds();
  LATENTD_ASSIGN_OR_RETURN(SweepResult result,
                           pipeline_->Run(store_.get(), table_.get(), params,
                                          evaluate ? &stats : nullptr));
  report.cpu_seconds = ThreadCpuSeconds() - cpu_start;
  const auto flush_start = std::chrono::steady_clock::now();
  link_->EndSweep(result.batches);
  report.wait_seconds += std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - flush_start)
                             .count();
  if (options_.on_sweep_end) options_.on_sweep_end(node_id(), t);
  link_->AnnounceSweep(t);
  if (options_.slow_down > absl::ZeroDuration()) {
    absl::SleepFor(options_.slow_down);
  }
  report.sweep = t;
  report.tokens = result.tokens;
  report.seconds = result.seconds;
  if (evaluate) report.doc_log_likelihood = stats.log_likelihood();
  return report;
}

void ClusterNode::Finish() { link_->Finish(); }

sync::Synchronizer::PassResult ClusterNode::DrainPass() {
  return link_->DrainPass();
}

void ClusterNode::Stop() {
  if (link_) link_->Stop();
}

absl::Status ClusterNode::Leave() {
  std::optional<sync::RemoveMode> mode = LeaveRequested();
  if (!mode.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat("node ", node_id(), " is not being removed"));
  }
  if (*mode != sync::RemoveMode::kDrop) {
    return absl::UnimplementedError(
        "an in-process ClusterNode leaves only with --drop (the hand-off "
        "of documents is latentd's, service/cluster_member_handoff.cc)");
  }
  // The corrections queued so far first, then minus every token's count.
  LATENTD_RETURN_IF_ERROR(synced_->ApplyPending());
  uint64_t documents = 0;
  LATENTD_ASSIGN_OR_RETURN(std::vector<WordTopicDelta> minus,
                           StoreCounts(store_.get(), -1, &documents));
  LATENTD_RETURN_IF_ERROR(table_->Apply(minus));
  synced_->MarkApplied(minus);
  sync::MoveCounters counters;
  counters.documents = documents;
  LATENTD_RETURN_IF_ERROR(link_->Leave(counters));
  Stop();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::pair<sync::Key, sync::SparseVector>>>
ClusterNode::OwnCounts() const {
  LATENTD_ASSIGN_OR_RETURN(std::vector<WordTopicDelta> counts,
                           StoreCounts(store_.get(), +1));
  std::vector<std::pair<sync::Key, sync::SparseVector>> out;
  std::vector<int64_t> totals(options_.num_topics, 0);
  for (const WordTopicDelta& d : counts) {  // sorted by word, then topic
    const sync::Key key = word_keys_[d.word];
    if (out.empty() || out.back().first != key) out.push_back({key, {}});
    out.back().second.push_back({d.topic, d.delta});
    totals[d.topic] += d.delta;
  }
  sync::SparseVector t;
  for (uint32_t k = 0; k < totals.size(); ++k) {
    if (totals[k] != 0) t.push_back({k, totals[k]});
  }
  out.push_back({sync::kTopicTotalsKey, std::move(t)});
  return out;
}

double ClusterNode::OwnedWordLogLikelihood() const {
  return latentd::OwnedWordLogLikelihood(link_->owner(), options_.beta,
                                         global_vocab_);
}

}  // namespace latentd
