#include "cli/evaluate_command.h"

#include <sys/stat.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "cli/client_commands.h"
#include "google/protobuf/struct.pb.h"
#include "sampler/model_dir.h"
#include "service/api_dispatch.h"

namespace latentd {

CLI::App* AddEvaluateCommand(CLI::App* app, EvaluateCommandOptions* o) {
  CLI::App* cmd = app->add_subcommand(
      "evaluate",
      "Print a trained model's held-out log-likelihood per token and "
      "perplexity by document completion: each document's first half folds "
      "in its topic mixture, its second half is scored. Documents: --corpus, "
      "or those `train --holdout` set aside");
  cmd->add_option("dir", o->model_dir, "Model directory")->required();
  cmd->add_option("--corpus", o->corpus.path,
                  "Held-out corpus (file or directory), tokenized as the "
                  "model's corpus was (default: DIR/heldout.lts)");
  cmd->add_option("--format", o->corpus.format,
                  "Format of --corpus (lines, yahoo, dir, uci, ldac; default: "
                  "the model's corpus format)");
  cmd->add_option("--vocab", o->corpus.vocab_path,
                  "Vocabulary file of a uci/ldac --corpus");
  cmd->add_option("--iterations", o->infer.iterations,
                  "Fold-in Gibbs sweeps over each first half")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--burn-in", o->infer.burn_in,
                  "Fold-in sweeps discarded before averaging")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--seed", o->infer.seed, "Random seed of the fold-in")
      ->capture_default_str();
  AddJsonOption(cmd, &o->json);
  return cmd;
}

std::string HeldoutSummaryLine(const PerplexityResult& p) {
  return absl::StrFormat(
      "held-out log-likelihood per token %.4f, perplexity %.2f (document "
      "completion: %d documents, %d tokens scored)",
      p.log_likelihood_per_token(), p.perplexity, p.documents, p.scored_tokens);
}

absl::Status RunEvaluate(const EvaluateCommandOptions& o, FILE* out) {
  if (o.infer.iterations < 1 || o.infer.burn_in < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--iterations must be >= 1 and --burn-in >= 0, got ",
                     o.infer.iterations, " and ", o.infer.burn_in));
  }
  LATENTD_ASSIGN_OR_RETURN(LoadedModel model, LoadModelDir(o.model_dir));
  std::unique_ptr<TopicTable> table = model.snapshot.ToTable();
  FoldIn fold_in(*table, model.snapshot.alpha, model.snapshot.beta);
  PerplexityResult result;
  std::string corpus = o.corpus.path;
  if (corpus.empty()) {
    corpus = ModelPaths(o.model_dir).heldout();
    struct stat st;
    if (::stat(corpus.c_str(), &st) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(o.model_dir, " has no held-out documents (", corpus,
                       "): train with --holdout, or give --corpus"));
    }
    LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<TokenStore> store,
                             OpenFileTokenStore(corpus));
    LATENTD_ASSIGN_OR_RETURN(
        result, DocumentCompletionPerplexity(&fold_in, store.get(), o.infer));
  } else {
    LATENTD_RETURN_IF_ERROR(ForEachModelDocument(
        model, o.corpus, [&](uint64_t index, std::span<const WordId> ids) {
          return AddDocumentCompletion(&fold_in, ids, o.infer, index, &result);
        }));
    absl::Status finished = FinishPerplexity(&result);
    if (!finished.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(corpus,
                       ": no document has two or more words the "
                       "model knows, nothing to score"));
    }
  }
  if (o.json) {
    google::protobuf::Struct s;
    auto& f = *s.mutable_fields();
    f["dir"].set_string_value(o.model_dir);
    f["corpus"].set_string_value(corpus);
    f["documents"].set_number_value(static_cast<double>(result.documents));
    f["scoredTokens"].set_number_value(
        static_cast<double>(result.scored_tokens));
    f["logLikelihoodPerToken"].set_number_value(
        result.log_likelihood_per_token());
    f["perplexity"].set_number_value(result.perplexity);
    absl::FPrintF(out, "%s\n", service::ToJson(s));
  } else {
    absl::FPrintF(out, "%s of %s\n", HeldoutSummaryLine(result), corpus);
  }
  return absl::OkStatus();
}

}  // namespace latentd
