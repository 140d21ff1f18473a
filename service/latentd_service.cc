#include "service/latentd_service.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "base/file_system.h"
#include "base/file_util.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "corpora/token_store_repair.h"
#include "sampler/checkpoint_files.h"
#include "sampler/model_dir.h"
#include "service/api_client.h"

namespace latentd::service {
namespace {

// The snapshot padded to `vocab_size` words (empty rows): a checkpoint taken
// before a merge that grew the vocabulary still resumes over the newer store.
void PadSnapshot(ModelSnapshot* s, uint32_t vocab_size) {
  while (s->vocab_size < vocab_size) {
    s->word_offsets.push_back(s->word_offsets.back());
    ++s->vocab_size;
  }
}

// A damaged token store stops the node: unlike model.bin it is kept once,
// since a second copy would double the largest file (docs/operations.md,
// "Checkpoints and damaged files"). The error says what to do.
template <typename T>
absl::StatusOr<T> WithStoreAdvice(absl::StatusOr<T> result) {
  if (result.ok() || result.status().code() != absl::StatusCode::kDataLoss) {
    return result;
  }
  return absl::DataLossError(absl::StrCat(
      result.status().message(),
      " (latentd keeps one copy of the token store: restore the data "
      "directory from a backup, or move it aside and rebuild it from the "
      "corpus)"));
}

}  // namespace

void LatentdService::Log(const std::string& line) {
  log::Info("latentd", line);
}

void LatentdService::LogWarning(const std::string& line) {
  log::Warning("latentd", line);
}

namespace {

int InferSlots(int configured) {
  if (configured > 0) return configured;
  return 2 * std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace

LatentdService::LatentdService(const ServiceOptions& options,
                               MetricsRegistry* metrics)
    : options_(options),
      m_(RegisterMetrics(metrics)),
      infer_gate_(InferSlots(options.infer_slots)),
      coherence_(metrics, {.mean_umass = m_.coherence_umass,
                           .mean_npmi = m_.coherence_npmi,
                           .sweep = m_.coherence_sweep,
                           .seconds = m_.coherence_seconds}),
      heldout_(m_.heldout_perplexity),
      start_time_(absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch())),
      router_({.cluster_mode = options.cluster_mode,
               .peer_token = options.peer_token,
               .peer_tls = options.peer_tls,
               .replicas = options.replicas,
               .forwarded = m_.forwarded}),
      ingest_({.data_dir = options.data_dir,
               .cluster_mode = options.cluster_mode,
               .replicas = options.replicas,
               .refuse_ingest_loss = options.refuse_ingest_loss,
               .keep_sources = options.keep_sources,
               .metrics = {.pending = m_.pending,
                           .ingested = m_.ingested,
                           .duplicates = m_.duplicates,
                           .replicated = m_.replicated,
                           .under_replicated = m_.under_replicated,
                           .replicas_adopted = m_.replicas_adopted,
                           .log_damage = m_.log_damage,
                           .lost = m_.lost}},
              &router_),
      cluster_({.data_dir = options.data_dir,
                .replicas = options.replicas,
                .max_documents_per_ingest = options.max_documents_per_ingest,
                .on_left_cluster = options.on_left_cluster,
                .on_declared_down = options.on_declared_down,
                .words_adopted = m_.words_adopted},
               &router_) {}

LatentdService::~LatentdService() { (void)Stop(); }

absl::StatusOr<std::unique_ptr<LatentdService>> LatentdService::Open(
    const ServiceOptions& options, MetricsRegistry* metrics) {
  if (options.data_dir.empty()) {
    return absl::InvalidArgumentError("a data directory is needed");
  }
  std::unique_ptr<LatentdService> s(new LatentdService(options, metrics));
  LATENTD_RETURN_IF_ERROR(s->Init(metrics));
  return s;
}

absl::Status LatentdService::Init(MetricsRegistry* metrics) {
  RegisterCollectors(metrics);
  const std::string& dir = options_.data_dir;
  absl::Status made = FileSystem::Default()->CreateDirectory(dir);
  if (!made.ok() && !absl::IsAlreadyExists(made)) {
    return absl::InvalidArgumentError(
        absl::StrCat("data directory ", dir, ": ", made.message()));
  }
  LATENTD_ASSIGN_OR_RETURN(dir_lock_, DirectoryLock::Acquire(dir));
  absl::MutexLock lock(&train_mu_);
  if (!PathExists(ModelPaths(dir).tokens())) {
    if (options_.corpus.path.empty() && !options_.graph.edges_path.empty()) {
      // A graph-only node: no topic model at all (in cluster mode, a
      // member of a graph cluster: JoinCluster).
      topics_ = false;
      Log("no corpus and no topic model: serving the graph only");
      return OpenGraph(metrics);
    }
    if (options_.corpus.path.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "data directory ", dir,
          " holds no model yet: give a corpus (--corpus) for the first start"));
    }
    LATENTD_RETURN_IF_ERROR(BuildStore());
  }
  LATENTD_RETURN_IF_ERROR(OpenTrainer());
  // Records after the store's merged sequence are queued to merge.
  LATENTD_RETURN_IF_ERROR(ingest_.Open(scan_.merged_sequence));
  merged_sequence_ = scan_.merged_sequence;
  LATENTD_RETURN_IF_ERROR(MergePending());
  absl::StatusOr<absl::flat_hash_map<std::string, UserTopics>> users =
      CollectUsers(trainer_->store());
  if (!users.ok()) return users.status();
  has_users_ = !users->empty();
  similarity_ = std::make_unique<SimilarityService>(
      options_.similarity,
      [this](const api::InferDocumentRequest& r) { return InferDocument(r); });
  LATENTD_RETURN_IF_ERROR(Publish());
  return OpenGraph(metrics);
}

absl::Status LatentdService::OpenGraph(MetricsRegistry* metrics) {
  if (options_.graph.edges_path.empty()) return absl::OkStatus();
  GraphServiceOptions graph = options_.graph;
  graph.dir = options_.data_dir + "/graph";
  LATENTD_ASSIGN_OR_RETURN(graph_, GraphService::Open(graph, metrics));
  graph_->SetEdgeForwarder(
      [this](const std::string& owner, const api::IngestEdgesRequest& r) {
        return router_.ForwardEdges(owner, r);
      });
  return absl::OkStatus();
}

absl::Status LatentdService::CheckTopics(std::string_view call) const {
  if (topics_) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      absl::string_view(call.data(), call.size()),
      ": this node serves no topic model (it was started with --graph-edges "
      "and no corpus)"));
}

absl::Status LatentdService::BuildStore() {
  ModelPaths paths(options_.data_dir);
  CorpusBuilderOptions build = options_.build;
  build.num_topics = options_.trainer.num_topics;
  build.seed = options_.trainer.seed;
  Log(absl::StrCat("building the token store from ", options_.corpus.path));
  LATENTD_ASSIGN_OR_RETURN(
      BuiltCorpus corpus,
      BuildCorpusFiles(options_.corpus, build, paths.tokens(),
                       build.holdout_fraction > 0 ? paths.heldout() : ""));
  Log(absl::StrCat("corpus: ", corpus.stats.Summary()));
  LATENTD_RETURN_IF_ERROR(corpus.vocab.Save(paths.vocab()));
  ModelSettings settings;
  settings["corpus.path"] = options_.corpus.path;
  settings["corpus.format"] =
      std::string(CorpusFormatName(options_.corpus.format));
  settings["model.topics"] = absl::StrCat(options_.trainer.num_topics);
  settings["model.beta"] = absl::StrCat(options_.trainer.beta);
  settings["train.seed"] = absl::StrCat(options_.trainer.seed);
  settings["corpus.holdout"] = absl::StrCat(build.holdout_fraction);
  settings["corpus.shard"] =
      absl::StrCat(build.shard_index, "/", build.shard_count);
  PutTokenizerSettings(options_.corpus.tokenizer, &settings);
  LATENTD_RETURN_IF_ERROR(SaveSettings(settings, paths.settings()));
  return absl::OkStatus();
}

absl::Status LatentdService::OpenTrainer() {
  ModelPaths paths(options_.data_dir);
  LATENTD_ASSIGN_OR_RETURN(ModelSettings settings,
                           LoadSettings(paths.settings()));
  LATENTD_ASSIGN_OR_RETURN(TokenizerOptions tok,
                           GetTokenizerSettings(settings));
  tokenizer_ = Tokenizer(tok);
  LATENTD_ASSIGN_OR_RETURN(vocab_, Vocabulary::Load(paths.vocab()));
  vocab_saved_ = vocab_.size();
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<TokenStore> store,
                           OpenScannedStore(paths.tokens()));
  if (vocab_.size() < store->meta().vocab_size) {
    return absl::DataLossError(
        absl::StrCat(paths.vocab(), " has ", vocab_.size(), " words but ",
                     paths.tokens(), " uses ", store->meta().vocab_size));
  }
  if (options_.cluster_mode && options_.trainer.progressive_start) {
    // The pass clears the table, which in a cluster also holds the other
    // nodes' counts.
    options_.trainer.progressive_start = false;
    Log("start progressive is for a single node: this cluster member starts "
        "from the store's uniform topics");
  }
  if (HasSnapshot(paths)) {
    // The newest snapshot that verifies; an older one only costs the α
    // optimized since, as the counts and the sweep come from the store.
    LATENTD_ASSIGN_OR_RETURN(ResumePoint resume,
                             LoadNewestSnapshot(paths, store->meta()));
    ModelSnapshot& snap = resume.snapshot;
    PadSnapshot(&snap, store->meta().vocab_size);
    const std::string line = absl::StrCat(
        resume.Describe(), ", token store at sweep ", store->meta().sweep);
    if (resume.refused.empty()) {
      Log(line);
    } else {
      m_.snapshots_refused->Add(resume.refused.size());
      log::Error("latentd", line);
    }
    checkpoint_sweep_ = snap.sweep;
    LATENTD_ASSIGN_OR_RETURN(
        trainer_, Trainer::Resume(snap, options_.trainer, std::move(store)));
  } else {
    LATENTD_ASSIGN_OR_RETURN(
        trainer_, Trainer::Create(options_.trainer, std::move(store)));
    LATENTD_RETURN_IF_ERROR(WriteCheckpoint());
  }
  checkpoint_sweep_seen_ = checkpoint_sweep_;
  if (PathExists(paths.heldout())) {
    LATENTD_ASSIGN_OR_RETURN(
        std::unique_ptr<TokenStore> heldout,
        WithStoreAdvice(OpenFileTokenStore(paths.heldout())));
    Log(absl::StrCat("held-out set: ", heldout->meta().num_docs, " documents, ",
                     heldout->meta().num_tokens, " tokens"));
    heldout_.SetStore(std::move(heldout));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<TokenStore>> LatentdService::OpenScannedStore(
    const std::string& path) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<TokenStore> store,
                           WithStoreAdvice(OpenFileTokenStore(path)));
  absl::StatusOr<StoreScan> scan = ScanStore(store.get());
  if (scan.ok() || scan.status().code() != absl::StatusCode::kDataLoss) {
    LATENTD_ASSIGN_OR_RETURN(scan_, std::move(scan));
    return store;
  }
  if (options_.refuse_ingest_loss) {
    return absl::DataLossError(absl::StrCat(
        scan.status().message(),
        " (not repaired: --refuse-ingest-loss on; with it off the damaged "
        "blocks' documents are dropped and the rest kept)"));
  }
  log::Error("latentd",
             absl::StrCat(scan.status().message(), "; repairing ", path));
  store.reset();
  LATENTD_ASSIGN_OR_RETURN(TokenStoreRepair repair,
                           WithStoreAdvice(RepairFileTokenStore(path)));
  for (const TokenStoreDamage& d : repair.damage) {
    log::Error("latentd", absl::StrCat(path, ": lost ", d.Describe()));
  }
  m_.store_damage->Add(repair.damage.size());
  m_.store_docs_lost->Add(repair.docs_lost());
  LogWarning(absl::StrCat(
      path, " rewritten without the damage: ", repair.docs_lost(),
      " documents (", repair.tokens_lost(),
      " tokens) are now empty, every other document keeps its index; the "
      "damaged file is kept as ",
      repair.kept_aside));
  LATENTD_ASSIGN_OR_RETURN(store, WithStoreAdvice(OpenFileTokenStore(path)));
  LATENTD_ASSIGN_OR_RETURN(scan_, WithStoreAdvice(ScanStore(store.get())));
  return store;
}

void LatentdService::Start() {
  if (started_) return;
  started_ = true;
  if (topics_) {
    training_ = true;
    thread_ = std::thread([this] { TrainLoop(); });
  }
  ingest_.Start();
  if (graph_ != nullptr) graph_->Start();
}

absl::Status LatentdService::Stop() {
  if (stopped_) return absl::OkStatus();
  stopped_ = true;
  ingest_.BeginStop();
  if (thread_.joinable()) thread_.join();
  ingest_.Stop();
  training_ = false;
  absl::Status graph_stopped =
      graph_ != nullptr ? graph_->Stop() : absl::OkStatus();
  if (!graph_stopped.ok()) LogWarning(std::string(graph_stopped.message()));
  absl::MutexLock lock(&train_mu_);
  if (trainer_ == nullptr) return graph_stopped;
  if (cluster_.joined()) {
    // Push what is left and leave; the table keeps this node's last view.
    absl::Status applied = cluster_.Stop();
    if (!applied.ok()) LogWarning(std::string(applied.message()));
  }
  absl::Status s = WriteCheckpoint();
  if (s.ok()) {
    Log(absl::StrCat("checkpoint written at sweep ", trainer_->sweep()));
  }
  return s.ok() ? graph_stopped : s;
}

absl::Status LatentdService::Reconfigure(const ServiceOptions& next) {
  absl::MutexLock lock(&train_mu_);
  options_.checkpoint_every = next.checkpoint_every;
  options_.checkpoint_seconds = next.checkpoint_seconds;
  options_.publish_interval_ms = next.publish_interval_ms;
  options_.progress_seconds = next.progress_seconds;
  options_.coherence_seconds = next.coherence_seconds;
  options_.coherence_top_words = next.coherence_top_words;
  options_.compact_log_bytes = next.compact_log_bytes;
  if (next.max_sweeps != options_.max_sweeps && cluster_.finished()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "max-sweeps stays ", options_.max_sweeps,
        ": this cluster node has finished training (restart the cluster to "
        "train further)"));
  }
  options_.max_sweeps = next.max_sweeps;
  return absl::OkStatus();
}

void LatentdService::TrainLoop() {
  for (;;) {
    if (ingest_.stopping()) return;
    bool swept = false;
    bool backoff = false;
    {
      absl::MutexLock lock(&train_mu_);
      absl::Status merged = MergePending();
      if (merged.ok()) {
        absl::StatusOr<size_t> adopted =
            cluster_.AdoptWords(trainer_.get(), &vocab_);
        if (!adopted.ok()) {
          merged = adopted.status();
        } else if (*adopted > 0) {
          pending_merged_ = true;  // publish the new words
        }
      }
      if (!merged.ok()) {
        m_.merge_errors->Add();
        LogWarning(
            absl::StrCat("merge failed (will retry): ", merged.message()));
        backoff = true;
      }
      if (cluster_.joined() && !router_.left() &&
          cluster_.link()->LeaveRequested().has_value()) {
        // An operator removes this node: refuse further ingests, merge what
        // was acknowledged (so a hand-off ships it and a drop takes it out
        // with the rest), stop sampling and leave. A failed merge is retried
        // before leaving, at the next turn.
        ingest_.BeginLeave();
        absl::Status left = MergePending();
        if (left.ok()) left = cluster_.Leave(trainer_.get(), vocab_);
        if (!left.ok()) {
          LogWarning(
              absl::StrCat("leaving the cluster failed: ", left.message()));
        }
      }
      training_ = !SamplingStopped();
      {
        std::string reason;
        if (!training_ && !router_.failed()) {
          reason = router_.left()
                       ? std::string("it left its cluster")
                       : absl::StrCat("--max-sweeps ", options_.max_sweeps,
                                      " reached");
        }
        absl::MutexLock l(&stopped_mu_);
        stopped_reason_ = std::move(reason);
      }
      if (!training_ && cluster_.joined() && !router_.left()) {
        // Not sampling: stop holding back SSP peers, and keep the view in
        // step with the globals the background rounds bring.
        cluster_.Finish();
        if (cluster_.HasPending()) {
          absl::Status applied = cluster_.ApplyPending();
          if (!applied.ok()) {
            LogWarning(std::string(applied.message()));
            // The view can no longer take the globals (say a count would
            // go negative): it is inconsistent with the cluster's.
            router_.MarkFailed(absl::StrCat(
                "its topic table is inconsistent with the cluster's: ",
                applied.message()));
          }
          pending_merged_ = true;  // publish
        }
      }
      if (training_) {
        swept = true;
        // A failing sweep (say a damaged store) is retried, but not at once.
        if (!SweepOnce()) backoff = true;
      }
      absl::Status published = MaybePublish(swept);
      if (!published.ok()) {
        LogWarning(absl::StrCat("publish failed: ", published.message()));
        backoff = true;
      }
      heldout_.MaybeScore(*trainer_, SamplingStopped(), options_.heldout_every,
                          options_.infer);
      coherence_.MaybeCompute(
          *view(), trainer_->store(), training_, options_.coherence_seconds,
          options_.coherence_top_words, options_.coherence_convention);
    }
    if (backoff) {
      absl::SleepFor(absl::Milliseconds(500));
    } else if (!swept) {
      // Idle (max_sweeps reached): wait for documents to merge.
      ingest_.WaitForWork(absl::Milliseconds(200));
    }
  }
}

bool LatentdService::SamplingStopped() const {
  return (options_.max_sweeps > 0 &&
          trainer_->sweep() >= options_.max_sweeps) ||
         router_.failed() || router_.left();
}

bool LatentdService::SweepOnce() {
  uint64_t cluster_sweep = 0;
  if (cluster_.joined()) {
    absl::Status ready = cluster_.BeforeSweep(&cluster_sweep);
    if (!ready.ok()) {
      LogWarning(absl::StrCat("cluster: ", ready.message()));
      return false;
    }
  }
  absl::StatusOr<SweepReport> r = trainer_->Sweep();
  if (!r.ok()) {
    m_.sweep_errors->Add();
    LogWarning(absl::StrCat("sweep failed: ", r.status().message()));
    if (cluster_.joined()) {
      // The trainer rebuilt the table from this store alone: it is out of
      // step with what the owners hold, so sampling here must stop.
      router_.MarkFailed(
          absl::StrCat("a sweep failed: ", r.status().message()));
      LogWarning(
          "cluster mode: this node stops sampling (restart the cluster); "
          "it goes on serving queries and ingesting");
    }
    return false;
  }
  if (cluster_.joined()) {
    cluster_.link()->EndSweep(r->result.batches);
    cluster_.link()->AnnounceSweep(cluster_sweep);
  }
  m_.sweeps->Add();
  m_.tokens_sampled->Add(r->result.tokens);
  tokens_per_second_ = r->tokens_per_second();
  m_.tokens_per_second->Set(r->tokens_per_second());
  m_.sweep->Set(static_cast<double>(r->sweep));
  if (r->evaluated) {
    loglik_per_token_ = r->log_likelihood_per_token;
    m_.loglik->Set(r->log_likelihood_per_token);
    history_.Add({.sweep = r->sweep,
                  .log_likelihood_per_token = r->log_likelihood_per_token,
                  .tokens_per_second = r->tokens_per_second()});
  }
  LogProgress(*r);
  const bool by_sweeps = options_.checkpoint_every > 0 &&
                         r->sweep % options_.checkpoint_every == 0;
  const bool by_time = options_.checkpoint_seconds > 0 &&
                       absl::Now() - checkpoint_at_ >=
                           absl::Seconds(options_.checkpoint_seconds);
  if (by_sweeps || by_time) {
    absl::Status c = WriteCheckpoint();
    if (!c.ok()) LogWarning(absl::StrCat("checkpoint failed: ", c.message()));
  }
  return true;
}

void LatentdService::LogProgress(const SweepReport& r) {
  Progress& p = progress_;
  ++p.sweeps;
  p.tokens += r.result.tokens;
  p.seconds += r.result.seconds;
  const absl::Time now = absl::Now();
  const bool last = options_.max_sweeps > 0 && r.sweep >= options_.max_sweeps;
  if (!last && options_.progress_seconds > 0 &&
      now - p.logged_at < absl::Seconds(options_.progress_seconds)) {
    return;
  }
  std::string line = absl::StrFormat(
      "sweep %d%s: %d sweep%s in %.1f s, %.2f M tokens/s", r.sweep,
      options_.max_sweeps > 0 ? absl::StrCat("/", options_.max_sweeps) : "",
      p.sweeps, p.sweeps == 1 ? "" : "s", p.seconds,
      p.seconds > 0 ? static_cast<double>(p.tokens) / p.seconds / 1e6 : 0.0);
  const double ll = loglik_per_token_.load(std::memory_order_relaxed);
  if (ll != 0) absl::StrAppendFormat(&line, ", log-likelihood/token %.4f", ll);
  if (last) absl::StrAppend(&line, " (max-sweeps reached: sampling stops)");
  Log(line);
  p = Progress{.logged_at = now};
}

absl::Status LatentdService::MaybePublish(bool swept) {
  // A merge at once; sweeps at most every publish_interval_ms; and the last
  // sweep before training pauses.
  const bool sweep_due =
      trainer_->sweep() != published_sweep_ &&
      (!swept ||
       absl::Now() - published_at_ >=
           absl::Milliseconds(options_.publish_interval_ms) ||
       (options_.max_sweeps > 0 && trainer_->sweep() >= options_.max_sweeps));
  if (!pending_merged_ && !sweep_due) return absl::OkStatus();
  pending_merged_ = false;
  return Publish();
}

absl::Status LatentdService::MergePending() {
  std::vector<IngestRecord> batch = ingest_.PendingAfter(scan_.merged_sequence);
  if (batch.empty()) return absl::OkStatus();
  // Words first: vocab.txt must cover the store version that uses them.
  // Compared with what vocab.txt holds, not with the size before this
  // merge: after a failed save the words are in vocab_ already.
  for (const IngestRecord& r : batch) {
    for (const std::string& w : r.words) vocab_.Add(w);
  }
  ModelPaths paths(options_.data_dir);
  if (vocab_.size() != vocab_saved_) {
    LATENTD_RETURN_IF_ERROR(vocab_.Save(paths.vocab()));
    vocab_saved_ = vocab_.size();
  }
  // In a cluster the new words become keys of the synchronized table
  // before their counts go in (ClusterMember::ApplyMerge).
  if (cluster_.joined()) {
    LATENTD_RETURN_IF_ERROR(cluster_.GrowTable(trainer_.get(), vocab_));
  }
  // With sampling stopped no sweep would revisit a random start: new tokens
  // are folded in against the model as it is (and join it, so the counts
  // stay those of the store).
  std::optional<FoldIn> fold_in;
  TopicAssigner assign;
  if (SamplingStopped()) {
    fold_in.emplace(trainer_->table(), trainer_->alpha(), trainer_->beta());
    assign = [&](std::span<const WordId> words, uint64_t sequence) {
      return fold_in->Assign(words, options_.infer, sequence);
    };
  }
  LATENTD_ASSIGN_OR_RETURN(
      MergeResult result,
      MergeIntoStore(batch, trainer_->options().seed, trainer_->store(),
                     &vocab_, &scan_, /*count_added=*/cluster_.joined(),
                     assign));
  if (cluster_.joined()) {
    LATENTD_RETURN_IF_ERROR(cluster_.ApplyMerge(trainer_.get(), result));
  } else {
    LATENTD_RETURN_IF_ERROR(trainer_->ReloadStore());
  }
  m_.merged->Add(result.records);
  merged_sequence_ = scan_.merged_sequence;
  for (const IngestRecord& r : batch) {
    if (!r.user.empty()) has_users_ = true;
  }
  // The records leave the queue when Publish() makes them visible.
  pending_merged_ = true;
  if (!result.not_durable.empty()) {
    // Merged, but a crash could bring back the store before it: the log
    // keeps their words (no compaction) until a later commit is durable.
    LogWarning(absl::StrCat("merge: ", result.not_durable,
                            "; the ingest log keeps the records"));
    return absl::OkStatus();
  }
  ingest_.Compact(scan_.merged_sequence, options_.compact_log_bytes);
  return absl::OkStatus();
}

absl::Status LatentdService::Publish() {
  absl::flat_hash_map<std::string, UserTopics> users;
  if (has_users_) {
    LATENTD_ASSIGN_OR_RETURN(users, CollectUsers(trainer_->store()));
  }
  const TokenStoreMeta& meta = trainer_->store()->meta();
  m_.documents->Set(static_cast<double>(meta.num_docs));
  if (cluster_.joined()) cluster_.link()->set_documents(meta.num_docs);
  m_.tokens->Set(static_cast<double>(meta.num_tokens));
  m_.vocabulary->Set(static_cast<double>(meta.vocab_size));
  uint64_t version;
  {
    absl::MutexLock lock(&view_mu_);
    version = ++view_version_;
  }
  published_sweep_ = trainer_->sweep();
  published_at_ = absl::Now();
  std::shared_ptr<const ModelView> view = BuildModelView(
      trainer_->Snapshot(), vocab_, std::move(users), meta, version);
  {
    absl::MutexLock lock(&view_mu_);
    view_ = view;
  }
  if (absl::Status s =
          similarity_->OnPublish(*view, trainer_->store(), !SamplingStopped());
      !s.ok()) {
    LogWarning(absl::StrCat("similarity index not refreshed: ", s.message()));
  }
  if (absl::Status s = MaybeCollectDocuments(*view); !s.ok()) {
    LogWarning(absl::StrCat("document table not refreshed: ", s.message()));
  }
  // Merged records are visible now: they leave the queue.
  ingest_.Published(scan_.merged_sequence);
  return absl::OkStatus();
}

absl::Status LatentdService::WriteCheckpoint() {
  // The store's version of this sweep must be on disk first (sweeps commit
  // it in the background): a snapshot newer than it would not resume.
  LATENTD_RETURN_IF_ERROR(trainer_->store()->WaitDurable());
  ModelPaths paths(options_.data_dir);
  std::string warning;
  ModelSnapshot snapshot = trainer_->Snapshot();
  // A cluster node's table also holds words its store does not use (other
  // nodes'): a checkpoint covers the store's words, so that it fits the
  // store on a restart (the others come back from their owners).
  const uint32_t store_words = trainer_->store()->meta().vocab_size;
  if (snapshot.vocab_size > store_words) {
    snapshot.vocab_size = store_words;
    snapshot.word_offsets.resize(store_words + 1);
    snapshot.entries.resize(snapshot.word_offsets.back());
  }
  LATENTD_RETURN_IF_ERROR(SaveCheckpoint(snapshot, paths, &warning));
  if (!warning.empty()) LogWarning(warning);
  checkpoint_sweep_ = trainer_->sweep();
  checkpoint_sweep_seen_ = checkpoint_sweep_;
  checkpoint_at_ = absl::Now();
  m_.checkpoints->Add();
  return absl::OkStatus();
}

std::shared_ptr<const ModelView> LatentdService::view() const {
  absl::MutexLock lock(&view_mu_);
  return view_;
}

absl::StatusOr<api::CheckpointResponse> LatentdService::Checkpoint(
    const api::CheckpointRequest&) {
  absl::MutexLock lock(&train_mu_);
  LATENTD_RETURN_IF_ERROR(WriteCheckpoint());
  api::CheckpointResponse resp;
  resp.set_sweep(checkpoint_sweep_);
  resp.set_path(ModelPaths(options_.data_dir).snapshot());
  return resp;
}

api::ModelVersion LatentdService::Version(const ModelView& v) const {
  api::ModelVersion out;
  out.set_sweep(v.sweep);
  out.set_view(v.version);
  return out;
}

absl::StatusOr<api::StatusResponse> LatentdService::Status(
    const api::StatusRequest& request) const {
  std::shared_ptr<const ModelView> v = view();
  api::StatusResponse resp;
  if (v == nullptr) {  // a graph-only node
    resp.set_uptime_seconds(
        absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()) - start_time_);
    if (graph_ != nullptr) {
      *resp.mutable_graph() = graph_->Status(request.history());
      resp.set_training(resp.graph().training());
      AddClusterMembers(graph_->cluster_link(), &resp);
    }
    return resp;
  }
  *resp.mutable_version() = Version(*v);
  resp.set_topics(v->snapshot.num_topics);
  resp.set_documents(v->store_meta.num_docs);
  resp.set_tokens(v->store_meta.num_tokens);
  resp.set_vocabulary(v->snapshot.vocab_size);
  resp.set_tokens_per_second(tokens_per_second_.load());
  resp.set_log_likelihood_per_token(loglik_per_token_.load());
  resp.set_users(v->users.size());
  resp.set_ingested(ingest_.ingested());
  resp.set_pending(ingest_.pending());
  resp.set_merged_sequence(merged_sequence_.load());
  resp.set_checkpoint_sweep(checkpoint_sweep_seen_.load());
  resp.set_training(training_.load());
  resp.set_uptime_seconds(
      absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()) - start_time_);
  coherence_.AddTo(&resp);
  if (graph_ != nullptr) {
    *resp.mutable_graph() = graph_->Status(request.history());
  }
  if (std::optional<api::HeldOut> heldout = heldout_.latest()) {
    *resp.mutable_heldout() = *std::move(heldout);
  }
  for (const SweepPoint& p : history_.Points(request.history())) {
    api::SweepPoint* out = resp.add_history();
    out->set_sweep(p.sweep);
    out->set_log_likelihood_per_token(p.log_likelihood_per_token);
    out->set_tokens_per_second(p.tokens_per_second);
  }
  AddClusterMembers(router_.link(), &resp);
  return resp;
}

void LatentdService::AddClusterMembers(const ClusterLink* link,
                                       api::StatusResponse* resp) {
  if (link == nullptr) return;
  resp->set_node_id(link->node_id());
  resp->set_ring_epoch(link->epoch());
  const hashring::RingConfig config = link->ring_config();
  for (const hashring::Member& m : config.members) {
    resp->add_cluster_members(m.id);
  }
  for (std::string& id : link->UnavailablePeers()) {
    resp->add_unavailable_peers(std::move(id));
  }
}

}  // namespace latentd::service
