#include "service/topic_model_files.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "corpora/corpus_builder.h"
#include "corpora/token_store_repair.h"
#include "sampler/checkpoint_files.h"
#include "sampler/model_dir.h"

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

absl::Status BuildStore(const ServiceOptions& options) {
  ModelPaths paths(options.data_dir);
  CorpusBuilderOptions build = options.build;
  build.num_topics = options.trainer.num_topics;
  build.seed = options.trainer.seed;
  log::Info("latentd", absl::StrCat("building the token store from ",
                                    options.corpus.path));
  LATENTD_ASSIGN_OR_RETURN(
      BuiltCorpus corpus,
      BuildCorpusFiles(options.corpus, build, paths.tokens(),
                       build.holdout_fraction > 0 ? paths.heldout() : ""));
  log::Info("latentd", absl::StrCat("corpus: ", corpus.stats.Summary()));
  LATENTD_RETURN_IF_ERROR(corpus.vocab.Save(paths.vocab()));
  ModelSettings settings;
  settings["corpus.path"] = options.corpus.path;
  settings["corpus.format"] =
      std::string(CorpusFormatName(options.corpus.format));
  settings["model.topics"] = absl::StrCat(options.trainer.num_topics);
  settings["model.beta"] = absl::StrCat(options.trainer.beta);
  settings["train.seed"] = absl::StrCat(options.trainer.seed);
  settings["corpus.holdout"] = absl::StrCat(build.holdout_fraction);
  settings["corpus.shard"] =
      absl::StrCat(build.shard_index, "/", build.shard_count);
  PutTokenizerSettings(options.corpus.tokenizer, &settings);
  LATENTD_RETURN_IF_ERROR(SaveSettings(settings, paths.settings()));
  return absl::OkStatus();
}

// Opens the token store at `path` and scans it into *scan; a damaged block
// is repaired (RepairFileTokenStore: its documents lost, reported and
// counted) unless options.refuse_ingest_loss.
absl::StatusOr<std::unique_ptr<TokenStore>> OpenScannedStore(
    const ServiceOptions& options, const internal::NodeMetrics& m,
    const std::string& path, StoreScan* scan_out);

}  // namespace

absl::StatusOr<OpenedTopicModel> OpenTopicModel(
    ServiceOptions* options_in, const internal::NodeMetrics& m) {
  ServiceOptions& options = *options_in;
  if (!PathExists(ModelPaths(options.data_dir).tokens())) {
    if (options.corpus.path.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "data directory ", options.data_dir,
          " holds no model yet: give a corpus (--corpus) for the first start"));
    }
    LATENTD_RETURN_IF_ERROR(BuildStore(options));
  }
  OpenedTopicModel model;
  ModelPaths paths(options.data_dir);
  LATENTD_ASSIGN_OR_RETURN(ModelSettings settings,
                           LoadSettings(paths.settings()));
  LATENTD_ASSIGN_OR_RETURN(TokenizerOptions tok,
                           GetTokenizerSettings(settings));
  model.tokenizer = Tokenizer(tok);
  LATENTD_ASSIGN_OR_RETURN(model.vocab, Vocabulary::Load(paths.vocab()));
  LATENTD_ASSIGN_OR_RETURN(
      std::unique_ptr<TokenStore> store,
      OpenScannedStore(options, m, paths.tokens(), &model.scan));
  if (model.vocab.size() < store->meta().vocab_size) {
    return absl::DataLossError(
        absl::StrCat(paths.vocab(), " has ", model.vocab.size(), " words but ",
                     paths.tokens(), " uses ", store->meta().vocab_size));
  }
  if (options.cluster_mode && options.trainer.progressive_start) {
    // The pass clears the table, which in a cluster also holds the other
    // nodes' counts.
    options.trainer.progressive_start = false;
    log::Info("latentd",
              "start progressive is for a single node: this cluster member "
              "starts from the store's uniform topics");
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
      log::Info("latentd", line);
    } else {
      m.snapshots_refused->Add(resume.refused.size());
      log::Error("latentd", line);
    }
    model.checkpoint_sweep = snap.sweep;
    LATENTD_ASSIGN_OR_RETURN(
        model.trainer,
        Trainer::Resume(snap, options.trainer, std::move(store)));
  } else {
    LATENTD_ASSIGN_OR_RETURN(
        model.trainer, Trainer::Create(options.trainer, std::move(store)));
  }
  if (PathExists(paths.heldout())) {
    LATENTD_ASSIGN_OR_RETURN(
        std::unique_ptr<TokenStore> heldout,
        WithStoreAdvice(OpenFileTokenStore(paths.heldout())));
    log::Info("latentd", absl::StrCat("held-out set: ",
                                      heldout->meta().num_docs, " documents, ",
                                      heldout->meta().num_tokens, " tokens"));
    model.heldout = std::move(heldout);
  }
  return model;
}

namespace {

absl::StatusOr<std::unique_ptr<TokenStore>> OpenScannedStore(
    const ServiceOptions& options, const internal::NodeMetrics& m,
    const std::string& path, StoreScan* scan_out) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<TokenStore> store,
                           WithStoreAdvice(OpenFileTokenStore(path)));
  absl::StatusOr<StoreScan> scan = ScanStore(store.get());
  if (scan.ok() || scan.status().code() != absl::StatusCode::kDataLoss) {
    LATENTD_ASSIGN_OR_RETURN(*scan_out, std::move(scan));
    return store;
  }
  if (options.refuse_ingest_loss) {
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
  m.store_damage->Add(repair.damage.size());
  m.store_docs_lost->Add(repair.docs_lost());
  log::Warning(
      "latentd",
      absl::StrCat(path, " rewritten without the damage: ", repair.docs_lost(),
                   " documents (", repair.tokens_lost(),
                   " tokens) are now empty, every other document keeps its "
                   "index; the damaged file is kept as ",
                   repair.kept_aside));
  LATENTD_ASSIGN_OR_RETURN(store, WithStoreAdvice(OpenFileTokenStore(path)));
  LATENTD_ASSIGN_OR_RETURN(*scan_out, WithStoreAdvice(ScanStore(store.get())));
  return store;
}

}  // namespace
}  // namespace latentd::service
