#include "cli/train_command.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "corpora/status_macros.h"
#include "sampler/fold_in.h"
#include "sampler/model_dir.h"
#include "sampler/model_export.h"

namespace latentd {
namespace {

absl::Status MakeDirectory(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot create ", dir, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

ModelSettings TrainSettings(const TrainCommandOptions& o, size_t vocab) {
  ModelSettings s;
  s["corpus.path"] = o.input.path;
  s["corpus.format"] = std::string(CorpusFormatName(o.input.format));
  s["corpus.vocab"] = o.input.vocab_path;
  s["corpus.min_doc_freq"] = absl::StrCat(o.build.min_doc_freq);
  s["corpus.max_vocab"] = absl::StrCat(o.build.max_vocab);
  s["corpus.holdout"] = absl::StrCat(o.build.holdout_fraction);
  s["model.topics"] = absl::StrCat(o.trainer.num_topics);
  s["model.vocabulary"] = absl::StrCat(vocab);
  s["model.beta"] = absl::StrCat(o.trainer.beta);
  s["train.seed"] = absl::StrCat(o.trainer.seed);
  s["train.optimize_alpha"] = o.trainer.optimize_alpha ? "true" : "false";
  s["train.kernel"] = std::string(KernelKindName(o.trainer.pipeline.kernel));
  PutTokenizerSettings(o.input.tokenizer, &s);
  return s;
}

// Creates the trainer: a fresh corpus build, or the model in out_dir.
absl::StatusOr<std::unique_ptr<Trainer>> StartTrainer(
    const TrainCommandOptions& o, FILE* err) {
  ModelPaths paths(o.out_dir);
  if (o.resume) {
    LATENTD_ASSIGN_OR_RETURN(ModelSnapshot snapshot,
                             ModelSnapshot::Load(paths.snapshot()));
    LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<TokenStore> store,
                             OpenFileTokenStore(paths.tokens()));
    absl::FPrintF(err, "resuming %s at sweep %d (store at sweep %d)\n",
                  o.out_dir, snapshot.sweep, store->meta().sweep);
    return Trainer::Resume(snapshot, o.trainer, std::move(store));
  }
  LATENTD_RETURN_IF_ERROR(MakeDirectory(o.out_dir));
  CorpusBuilderOptions build = o.build;
  build.num_topics = o.trainer.num_topics;
  build.seed = o.trainer.seed;
  build.progress = StderrProgress();
  absl::FPrintF(err, "reading %s (%s)\n", o.input.path,
                CorpusFormatName(o.input.format));
  LATENTD_ASSIGN_OR_RETURN(
      BuiltCorpus corpus,
      BuildCorpusFiles(o.input, build, paths.tokens(),
                       build.holdout_fraction > 0 ? paths.heldout() : ""));
  absl::FPrintF(err, "corpus: %s\n", corpus.stats.Summary());
  LATENTD_RETURN_IF_ERROR(corpus.vocab.Save(paths.vocab()));
  LATENTD_RETURN_IF_ERROR(
      SaveSettings(TrainSettings(o, corpus.vocab.size()), paths.settings()));
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<TokenStore> store,
                           OpenFileTokenStore(paths.tokens()));
  return Trainer::Create(o.trainer, std::move(store));
}

absl::Status Checkpoint(Trainer& trainer, const ModelPaths& paths) {
  return trainer.Snapshot().Save(paths.snapshot());
}

absl::Status Finish(const TrainCommandOptions& o, Trainer& trainer, FILE* out,
                    FILE* err) {
  ModelPaths paths(o.out_dir);
  const ModelSnapshot snapshot = trainer.Snapshot();
  LATENTD_RETURN_IF_ERROR(snapshot.Save(paths.snapshot()));
  LATENTD_ASSIGN_OR_RETURN(Vocabulary vocab, Vocabulary::Load(paths.vocab()));
  LATENTD_RETURN_IF_ERROR(
      ExportModelText(snapshot, vocab, o.top_words, o.out_dir));
  LATENTD_RETURN_IF_ERROR(
      ExportDocTopics(trainer.store(), trainer.alpha(), paths.doc_topics()));
  if (o.build.holdout_fraction > 0 || o.resume) {
    absl::StatusOr<std::unique_ptr<TokenStore>> heldout =
        OpenFileTokenStore(paths.heldout());
    if (heldout.ok()) {
      FoldIn fold_in(trainer.table(), trainer.alpha(), trainer.beta());
      LATENTD_ASSIGN_OR_RETURN(PerplexityResult p,
                               DocumentCompletionPerplexity(
                                   &fold_in, heldout->get(), o.heldout_infer));
      absl::FPrintF(err,
                    "held-out perplexity %.2f (document completion, %d "
                    "documents, %d tokens scored)\n",
                    p.perplexity, p.documents, p.scored_tokens);
    }
  }
  absl::FPrintF(err, "model written to %s (sweep %d)\n", o.out_dir,
                snapshot.sweep);
  if (o.print_topics > 0) {
    std::vector<TopicSummary> topics = SummarizeTopics(snapshot, 10);
    // The heaviest topics first.
    std::sort(topics.begin(), topics.end(),
              [](const TopicSummary& a, const TopicSummary& b) {
                return a.tokens > b.tokens;
              });
    if (topics.size() > static_cast<size_t>(o.print_topics)) {
      topics.resize(o.print_topics);
    }
    for (const TopicSummary& t : topics) {
      std::string line = absl::StrFormat("topic %3d (%5.2f%%):", t.topic,
                                         100.0 * t.tokens / snapshot.tokens);
      for (const auto& [w, p] : t.top_words) {
        absl::StrAppend(&line, " ", vocab.word(w));
      }
      absl::FPrintF(out, "%s\n", line);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunTrain(const TrainCommandOptions& o, FILE* out, FILE* err) {
  if (o.out_dir.empty()) {
    return absl::InvalidArgumentError("--out: a model directory is needed");
  }
  if (o.sweeps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--sweeps must be >= 0, got ", o.sweeps));
  }
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer,
                           StartTrainer(o, err));
  ModelPaths paths(o.out_dir);
  absl::FPrintF(err, "training: %d topics, %d threads, %d sweeps, kernel %s\n",
                trainer->options().num_topics,
                trainer->options().pipeline.threads, o.sweeps,
                KernelKindName(trainer->options().pipeline.kernel));
  double wall = 0;
  for (int s = 0; s < o.sweeps; ++s) {
    if (o.stop != nullptr && o.stop->load()) {
      absl::FPrintF(err, "stopping early on request after sweep %d\n",
                    trainer->sweep());
      break;
    }
    LATENTD_ASSIGN_OR_RETURN(SweepReport r, trainer->Sweep());
    wall += r.result.seconds;
    std::string line = absl::StrFormat(
        "sweep %4d  %7.3f s  %6.2f Mtok/s  changed %5.1f%%", r.sweep,
        r.result.seconds, r.tokens_per_second() / 1e6,
        100.0 * r.result.changed / std::max<uint64_t>(r.result.tokens, 1));
    if (r.evaluated) {
      absl::StrAppendFormat(&line, "  loglik/token %.4f",
                            r.log_likelihood_per_token);
    }
    if (r.alpha_updated) absl::StrAppend(&line, "  (alpha updated)");
    absl::FPrintF(err, "%s\n", line);
    if (o.checkpoint_every > 0 && r.sweep % o.checkpoint_every == 0) {
      LATENTD_RETURN_IF_ERROR(Checkpoint(*trainer, paths));
    }
  }
  absl::FPrintF(err, "%.2f s sampling\n", wall);
  return Finish(o, *trainer, out, err);
}

}  // namespace latentd
