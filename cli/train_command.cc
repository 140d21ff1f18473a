#include "cli/train_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "cli/coherence_command.h"
#include "cli/evaluate_command.h"
#include "google/protobuf/struct.pb.h"
#include "sampler/checkpoint_files.h"
#include "sampler/fold_in.h"
#include "sampler/model_dir.h"
#include "sampler/model_export.h"
#include "service/api_dispatch.h"

namespace latentd {
namespace {

// Refuses to build over a model unless told to; with `overwrite`, removes
// the old model's files first (and nothing else in the directory), so no
// stale file (a held-out store, say) is mistaken for the new model's.
absl::Status ClaimModelDirectory(const TrainCommandOptions& o) {
  const std::vector<std::string> found = ModelPaths(o.out_dir).existing();
  if (found.empty()) return absl::OkStatus();
  if (!o.overwrite) {
    return absl::FailedPreconditionError(absl::StrCat(
        o.out_dir, " already holds a model (", found.front(),
        "): give --resume to continue it or --overwrite to replace it"));
  }
  return RemoveModelFiles(found);
}

// "1h02m", "3m05s", "42s".
std::string Duration(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return absl::StrFormat("%dh%02dm", s / 3600, s % 3600 / 60);
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
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
  s["train.sparse_start"] = absl::StrCat(o.trainer.init_row_topics);
  s["train.start"] = o.trainer.init_row_topics > 0 ? "sparse"
                     : o.trainer.progressive_start ? "progressive"
                                                   : "uniform";
  const KernelOptions& kernel = o.trainer.pipeline.kernel_options;
  s["train.batch_overlay"] = kernel.batch_overlay ? "true" : "false";
  s["train.overlay_max_word_tokens"] =
      OverlayMaxWordTokensName(kernel.overlay_max_word_tokens);
  PutTokenizerSettings(o.input.tokenizer, &s);
  return s;
}

// Creates the trainer: a fresh corpus build, or the model in out_dir.
absl::StatusOr<std::unique_ptr<Trainer>> StartTrainer(
    const TrainCommandOptions& o, FILE* err) {
  ModelPaths paths(o.out_dir);
  if (o.resume) {
    LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<TokenStore> store,
                             OpenFileTokenStore(paths.tokens()));
    // The newest snapshot that verifies (sampler/checkpoint_files.h).
    LATENTD_ASSIGN_OR_RETURN(ResumePoint resume,
                             LoadNewestSnapshot(paths, store->meta()));
    for (const std::string& line : resume.refused) {
      absl::FPrintF(err, "%s\n", line);
    }
    absl::FPrintF(err, "resuming %s at sweep %d from %s (store at sweep %d)\n",
                  o.out_dir, resume.snapshot.sweep, resume.path,
                  store->meta().sweep);
    return Trainer::Resume(resume.snapshot, o.trainer, std::move(store));
  }
  LATENTD_RETURN_IF_ERROR(MakeModelDirectory(o.out_dir));
  LATENTD_RETURN_IF_ERROR(ClaimModelDirectory(o));
  CorpusBuilderOptions build = o.build;
  build.num_topics = o.trainer.num_topics;
  build.seed = o.trainer.seed;
  build.progress = StderrProgress();
  absl::FPrintF(err, "reading %s (%s)\n", o.input.path,
                CorpusFormatName(o.input.format));
  if (std::string warning = MissingVocabularyWarning(o.input);
      !warning.empty()) {
    absl::FPrintF(err, "warning: %s\n", warning);
  }
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

// model.bin, keeping the one it replaces as model.prev.bin, once the token
// store's version of the same sweep is durable (its commit runs in the
// background): a snapshot newer than the store on disk would not resume.
absl::Status Checkpoint(Trainer& trainer, const ModelPaths& paths, FILE* err) {
  LATENTD_RETURN_IF_ERROR(trainer.store()->WaitDurable());
  std::string warning;
  LATENTD_RETURN_IF_ERROR(SaveCheckpoint(trainer.Rows(), paths, &warning));
  if (!warning.empty()) absl::FPrintF(err, "warning: %s\n", warning);
  return absl::OkStatus();
}

// What the sweeps of this invocation did, for the --json summary.
struct RunTotals {
  int sweeps = 0;
  double seconds = 0;
  uint64_t tokens = 0;                             // sampled, all sweeps
  std::optional<double> log_likelihood_per_token;  // last evaluated sweep
  std::optional<double> heldout_perplexity;
  std::optional<double> heldout_log_likelihood;  // per scored token
  std::optional<double> coherence_umass;  // means over topics, top 10 words
  std::optional<double> coherence_npmi;
};

// What the word-topic table holds now and the most its arena held, the
// part of the process's memory that grows with the model.
std::string TableMemoryLine(const TopicTable& table) {
  constexpr double kMiB = 1 << 20;
  std::string line = absl::StrFormat(
      "word-topic table: %.1f MiB in rows of %d words",
      static_cast<double>(table.MemoryBytes()) / kMiB, table.vocab_size());
  // 0 in an AddressSanitizer build, whose rows come from operator new.
  if (table.PeakArenaBytes() > 0) {
    absl::StrAppendFormat(&line, ", its arena at most %.1f MiB",
                          static_cast<double>(table.PeakArenaBytes()) / kMiB);
  }
  return line;
}

// The --json summary: one line, keys as TrainCommandOptions::json lists.
std::string SummaryJson(const TrainCommandOptions& o, Trainer& trainer,
                        const ModelRows& model, const RunTotals& run) {
  google::protobuf::Struct s;
  auto& f = *s.mutable_fields();
  f["modelDir"].set_string_value(o.out_dir);
  f["sweep"].set_number_value(static_cast<double>(model.sweep()));
  f["sweepsRun"].set_number_value(run.sweeps);
  f["topics"].set_number_value(trainer.options().num_topics);
  f["documents"].set_number_value(
      static_cast<double>(trainer.store()->meta().num_docs));
  f["tokens"].set_number_value(static_cast<double>(model.tokens()));
  f["samplingSeconds"].set_number_value(run.seconds);
  f["tableBytes"].set_number_value(
      static_cast<double>(trainer.table().MemoryBytes()));
  f["tableArenaPeakBytes"].set_number_value(
      static_cast<double>(trainer.table().PeakArenaBytes()));
  f["tokensPerSecond"].set_number_value(
      run.seconds > 0 ? static_cast<double>(run.tokens) / run.seconds : 0);
  if (run.log_likelihood_per_token.has_value()) {
    f["logLikelihoodPerToken"].set_number_value(*run.log_likelihood_per_token);
  } else {
    f["logLikelihoodPerToken"].set_null_value({});
  }
  if (run.heldout_perplexity.has_value()) {
    f["heldoutPerplexity"].set_number_value(*run.heldout_perplexity);
  } else {
    f["heldoutPerplexity"].set_null_value({});
  }
  for (const auto& [key, value] :
       {std::pair{"heldoutLogLikelihoodPerToken", run.heldout_log_likelihood},
        std::pair{"coherenceUmass", run.coherence_umass},
        std::pair{"coherenceNpmi", run.coherence_npmi}}) {
    if (value.has_value()) {
      f[key].set_number_value(*value);
    } else {
      f[key].set_null_value({});
    }
  }
  return service::ToJson(s);
}

absl::Status Finish(const TrainCommandOptions& o, Trainer& trainer,
                    RunTotals run, FILE* out, FILE* err) {
  ModelPaths paths(o.out_dir);
  // Read from the table, which no sweep changes from here on; the
  // samplers' scratch is not needed past the sweeps.
  trainer.pipeline()->ReleaseKernels();
  const ModelRows model = trainer.Rows();
  LATENTD_RETURN_IF_ERROR(Checkpoint(trainer, paths, err));
  LATENTD_ASSIGN_OR_RETURN(Vocabulary vocab, Vocabulary::Load(paths.vocab()));
  LATENTD_RETURN_IF_ERROR(
      ExportModelText(model, vocab, o.top_words, o.out_dir));
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
      absl::FPrintF(err, "%s\n", HeldoutSummaryLine(p));
      run.heldout_perplexity = p.perplexity;
      run.heldout_log_likelihood = p.log_likelihood_per_token();
    }
  }
  LATENTD_ASSIGN_OR_RETURN(
      CoherenceReport coherence,
      StoreCoherence(model, trainer.store(), CoherenceOptions{}));
  absl::FPrintF(err, "%s\n", CoherenceSummaryLine(coherence));
  run.coherence_umass = coherence.mean_umass;
  run.coherence_npmi = coherence.mean_npmi;
  absl::FPrintF(err, "model written to %s (sweep %d)\n", o.out_dir,
                model.sweep());
  absl::FPrintF(err, "%s\n", TableMemoryLine(trainer.table()));
  if (o.json) {
    absl::FPrintF(out, "%s\n", SummaryJson(o, trainer, model, run));
  } else if (o.print_topics > 0 && model.tokens() == 0) {
    // Before the progressive start's pass (--sweeps 0): no token is placed.
    absl::FPrintF(out,
                  "no topics yet: the progressive start places the tokens in "
                  "the first sweep (latentctl train --out %s --resume "
                  "--sweeps N)\n",
                  o.out_dir);
  } else if (o.print_topics > 0) {
    std::vector<TopicSummary> topics = SummarizeTopics(model, 10);
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
                                         100.0 * t.tokens / model.tokens());
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
  if (o.resume && o.overwrite) {
    return absl::InvalidArgumentError(
        "--resume and --overwrite: give one (continue the model, or replace "
        "it)");
  }
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer,
                           StartTrainer(o, err));
  ModelPaths paths(o.out_dir);
  absl::FPrintF(
      err, "training: %d topics, %d threads, %d sweeps, kernel %s (%s)\n",
      trainer->options().num_topics, trainer->options().pipeline.threads,
      o.sweeps, KernelKindName(trainer->options().pipeline.kernel),
      CpuPathsDescription());
  double wall = 0;
  RunTotals run;
  // A pass over a large corpus takes minutes: a line every 10 s within it
  // (a sweep after the progressive start makes more than one pass).
  int sweep_now = 0;
  absl::Time sweep_started;
  trainer->pipeline()->SetProgressHook(
      [&](uint64_t done, uint64_t total) {
        absl::FPrintF(
            err,
            "sweep %d/%d in progress: %.0f%% of a pass over %.1f M "
            "tokens, %s so far\n",
            sweep_now, o.sweeps,
            100.0 * static_cast<double>(done) /
                static_cast<double>(std::max<uint64_t>(total, 1)),
            static_cast<double>(total) / 1e6,
            Duration(absl::ToDoubleSeconds(absl::Now() - sweep_started)));
      },
      absl::Seconds(10));
  for (int s = 0; s < o.sweeps; ++s) {
    if (o.stop != nullptr && o.stop->load()) {
      absl::FPrintF(err, "stopping early on request after sweep %d\n",
                    trainer->sweep());
      break;
    }
    sweep_now = s + 1;
    sweep_started = absl::Now();
    LATENTD_ASSIGN_OR_RETURN(SweepReport r, trainer->Sweep());
    wall += r.result.seconds;
    ++run.sweeps;
    run.tokens += r.result.tokens;
    if (r.evaluated) run.log_likelihood_per_token = r.log_likelihood_per_token;
    // The ETA assumes the remaining sweeps take the mean so far (later
    // sweeps are cheaper, so it errs long).
    const double eta = wall / (s + 1) * (o.sweeps - s - 1);
    std::string line = absl::StrFormat(
        "sweep %*d/%d  %7.3f s  %6.2f Mtok/s  changed %5.1f%%",
        static_cast<int>(absl::StrCat(o.sweeps).size()), s + 1, o.sweeps,
        r.result.seconds, r.tokens_per_second() / 1e6,
        100.0 * r.result.changed / std::max<uint64_t>(r.result.tokens, 1));
    if (r.evaluated) {
      absl::StrAppendFormat(&line, "  loglik/token %.4f",
                            r.log_likelihood_per_token);
    }
    absl::StrAppend(&line, "  ", std::string(KernelKindName(r.kernel)));
    if (r.sparse_start) {
      absl::StrAppendFormat(&line, " (sparse start %.3f s)", r.init_seconds);
    }
    if (r.progressive_start) {
      absl::StrAppendFormat(&line, " (progressive start %.3f s)",
                            r.init_seconds);
    }
    if (r.alpha_updated) absl::StrAppend(&line, "  (alpha updated)");
    if (o.resume) absl::StrAppend(&line, "  (model sweep ", r.sweep, ")");
    if (s + 1 < o.sweeps) absl::StrAppend(&line, "  ETA ", Duration(eta));
    absl::FPrintF(err, "%s\n", line);
    if (o.checkpoint_every > 0 && r.sweep % o.checkpoint_every == 0) {
      LATENTD_RETURN_IF_ERROR(Checkpoint(*trainer, paths, err));
    }
  }
  absl::FPrintF(err, "%.2f s sampling\n", wall);
  run.seconds = wall;
  return Finish(o, *trainer, run, out, err);
}

}  // namespace latentd
