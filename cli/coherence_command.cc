#include "cli/coherence_command.h"

#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "cli/client_commands.h"
#include "cli/model_corpus.h"
#include "google/protobuf/struct.pb.h"
#include "sampler/model_dir.h"
#include "service/api_dispatch.h"

namespace latentd {
namespace {

std::string Value(const std::optional<double>& v) {
  return v.has_value() ? absl::StrFormat("%.4f", *v) : "n/a";
}

void SetNumber(google::protobuf::Value* out, const std::optional<double>& v) {
  if (v.has_value()) {
    out->set_number_value(*v);
  } else {
    out->set_null_value({});
  }
}

// The reference corpus read from a file, tokenized as the model's corpus.
absl::StatusOr<CoherenceReport> CorpusCoherence(
    const CoherenceCommandOptions& o, const LoadedModel& model,
    CoherenceConvention convention) {
  CoherenceCounter counter(TopicTopWords(model.snapshot, o.top_words),
                           model.snapshot.vocab_size, o.top_words, convention);
  LATENTD_RETURN_IF_ERROR(ForEachModelDocument(
      model, {.path = o.corpus, .format = o.format, .vocab_path = o.vocab_path},
      [&](uint64_t, std::span<const WordId> ids) {
        counter.AddDocument(ids);
        return absl::OkStatus();
      }));
  return counter.Report();
}

std::string Json(const CoherenceCommandOptions& o, const std::string& reference,
                 const CoherenceReport& r, const Vocabulary& vocab) {
  google::protobuf::Struct s;
  auto& f = *s.mutable_fields();
  f["dir"].set_string_value(o.model_dir);
  f["reference"].set_string_value(reference);
  f["documents"].set_number_value(static_cast<double>(r.documents));
  f["topWords"].set_number_value(r.top_words);
  f["convention"].set_string_value(CoherenceConventionName(r.convention));
  SetNumber(&f["meanUmass"], r.mean_umass);
  SetNumber(&f["meanNpmi"], r.mean_npmi);
  auto* topics = f["topics"].mutable_list_value();
  for (const TopicCoherence& t : r.topics) {
    auto& tf = *topics->add_values()->mutable_struct_value()->mutable_fields();
    tf["topic"].set_number_value(t.topic);
    SetNumber(&tf["umass"], t.umass);
    SetNumber(&tf["npmi"], t.npmi);
    auto* words = tf["words"].mutable_list_value();
    for (WordId w : t.words) {
      words->add_values()->set_string_value(vocab.word(w));
    }
  }
  return service::ToJson(s);
}

}  // namespace

CLI::App* AddCoherenceCommand(CLI::App* app, CoherenceCommandOptions* o) {
  CLI::App* cmd = app->add_subcommand(
      "coherence",
      "Print the UMass and NPMI coherence of each topic of a trained model "
      "(its --top most probable words; document co-occurrence over the "
      "training documents, or --corpus) and their means over the topics. "
      "UMass: Mimno et al. 2011 with +1 smoothing, averaged over word "
      "pairs; NPMI: Bouma 2009, -1 for pairs never seen together. "
      "--convention gensim gives gensim's u_mass and c_npmi instead (its "
      "1e-12 smoothing; c_npmi with a window as long as the longest "
      "document)");
  cmd->add_option("dir", o->model_dir, "Model directory")->required();
  cmd->add_option("--corpus", o->corpus,
                  "Reference corpus (file or directory) instead of the "
                  "training documents; tokenized as the model's corpus was");
  cmd->add_option("--format", o->format,
                  "Format of --corpus (lines, yahoo, dir, uci, ldac; default: "
                  "the model's corpus format)");
  cmd->add_option("--vocab", o->vocab_path,
                  "Vocabulary file of a uci/ldac --corpus");
  cmd->add_option("--top", o->top_words, "Words per topic scored")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
  cmd->add_option("--convention", o->convention,
                  "Smoothing convention: mimno (+1, Bouma's limits) or "
                  "gensim (gensim's u_mass and c_npmi, to compare with it)")
      ->check(CLI::IsMember({"mimno", "gensim"}))
      ->capture_default_str();
  AddJsonOption(cmd, &o->json);
  return cmd;
}

absl::Status RunCoherence(const CoherenceCommandOptions& o, FILE* out) {
  if (o.top_words < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--top must be >= 2, got ", o.top_words));
  }
  LATENTD_ASSIGN_OR_RETURN(CoherenceConvention convention,
                           ParseCoherenceConvention(o.convention));
  LATENTD_ASSIGN_OR_RETURN(LoadedModel model, LoadModelDir(o.model_dir));
  std::string reference = o.corpus;
  std::optional<CoherenceReport> report;
  if (o.corpus.empty()) {
    reference = ModelPaths(o.model_dir).tokens();
    LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<TokenStore> store,
                             OpenFileTokenStore(reference));
    CoherenceOptions options;
    options.top_words = o.top_words;
    options.convention = convention;
    LATENTD_ASSIGN_OR_RETURN(
        report, StoreCoherence(model.snapshot, store.get(), options));
  } else {
    LATENTD_ASSIGN_OR_RETURN(report, CorpusCoherence(o, model, convention));
  }
  if (o.json) {
    absl::FPrintF(out, "%s\n", Json(o, reference, *report, model.vocab));
    return absl::OkStatus();
  }
  absl::FPrintF(out,
                "# %d topics, top %d words, %d documents of %s (%s "
                "convention)\n",
                report->topics.size(), o.top_words, report->documents,
                reference, CoherenceConventionName(convention));
  absl::FPrintF(out, "topic\tumass\tnpmi\twords\n");
  for (const TopicCoherence& t : report->topics) {
    std::string words;
    for (WordId w : t.words) {
      absl::StrAppend(&words, words.empty() ? "" : " ", model.vocab.word(w));
    }
    absl::FPrintF(out, "%d\t%s\t%s\t%s\n", t.topic, Value(t.umass),
                  Value(t.npmi), words);
  }
  absl::FPrintF(out, "mean\t%s\t%s\n", Value(report->mean_umass),
                Value(report->mean_npmi));
  return absl::OkStatus();
}

std::string CoherenceSummaryLine(const CoherenceReport& r) {
  return absl::StrFormat(
      "coherence (top %d words, %d documents): UMass %s NPMI %s (mean over "
      "topics)",
      r.top_words, r.documents, Value(r.mean_umass), Value(r.mean_npmi));
}

}  // namespace latentd
