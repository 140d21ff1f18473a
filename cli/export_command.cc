#include "cli/export_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <variant>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/file_system.h"
#include "base/status_macros.h"
#include "cli/gensim_export.h"
#include "google/protobuf/struct.pb.h"
#include "sampler/model_dir.h"
#include "sampler/model_export.h"
#include "sampler/tool_exports.h"
#include "service/api_dispatch.h"

namespace latentd {
namespace {

using service::ApiClient;
using service::Method;

// What a fetch that the model moved under says.
struct Moved {
  api::ModelVersion from;
  api::ModelVersion to;
};

bool SameVersion(const api::ModelVersion& a, const api::ModelVersion& b) {
  return a.sweep() == b.sweep() && a.view() == b.view();
}

std::string Describe(const api::ModelVersion& v) {
  return absl::StrCat("sweep ", v.sweep(), ", view ", v.view());
}

// Takes the first page's model-wide fields into *m.
absl::Status StartModel(const api::ExportModelResponse& page, FetchedModel* m) {
  if (page.topics() < 1 || page.topics() > kMaxTopics ||
      page.vocabulary() > Vocabulary::kMaxSize ||
      page.alpha_size() != static_cast<int>(page.topics()) ||
      page.topic_tokens_size() != static_cast<int>(page.topics())) {
    return absl::DataLossError(absl::StrCat(
        "first page: K = ", page.topics(), " with ", page.alpha_size(),
        " alphas and ", page.topic_tokens_size(),
        " topic totals, V = ", page.vocabulary()));
  }
  m->version = page.version();
  ModelSnapshot& s = m->snapshot;
  s.num_topics = page.topics();
  s.vocab_size = page.vocabulary();
  s.beta = page.beta();
  s.sweep = page.version().sweep();
  s.seed = 0;
  s.alpha.assign(page.alpha().begin(), page.alpha().end());
  s.word_offsets.push_back(0);
  return absl::OkStatus();
}

// Appends the words of `page` (starting at WordId *next) to *m.
absl::Status AddWords(const api::ExportModelResponse& page, uint32_t* next,
                      FetchedModel* m) {
  ModelSnapshot& s = m->snapshot;
  if (page.topics() != s.num_topics || page.vocabulary() != s.vocab_size ||
      page.first_word() != *next ||
      static_cast<uint64_t>(page.words_size()) > s.vocab_size - *next ||
      (page.words_size() == 0 && *next < s.vocab_size)) {
    return absl::DataLossError(absl::StrCat(
        "page at word ", *next, " does not fit the model: K = ", page.topics(),
        ", V = ", page.vocabulary(), ", first_word ", page.first_word(), ", ",
        page.words_size(), " words (model: K = ", s.num_topics,
        ", V = ", s.vocab_size, ")"));
  }
  for (const api::WordTopicCounts& w : page.words()) {
    const WordId id = *next;
    // A word is one line of vocab.txt and a field of the .tsv.
    if (w.word().empty() ||
        w.word().find_first_of("\t\n") != std::string::npos ||
        m->vocab.Add(w.word()) != id) {
      return absl::DataLossError(
          absl::StrCat("word ", id, " ('", w.word(),
                       "') is empty, holds a tab or newline, or came before"));
    }
    if (w.topics_size() != w.counts_size()) {
      return absl::DataLossError(
          absl::StrCat("word '", w.word(), "': ", w.topics_size(),
                       " topics for ", w.counts_size(), " counts"));
    }
    for (int i = 0; i < w.topics_size(); ++i) {
      const TopicId k = w.topics(i);
      if (k >= s.num_topics || w.counts(i) <= 0 ||
          (i > 0 && k <= w.topics(i - 1))) {
        return absl::DataLossError(absl::StrCat(
            "word '", w.word(), "': topic ", k, " count ", w.counts(i),
            " (topics must rise, below K = ", s.num_topics,
            ", counts be positive)"));
      }
      s.entries.push_back({k, w.counts(i)});
    }
    s.word_offsets.push_back(s.entries.size());
    ++*next;
  }
  return absl::OkStatus();
}

// The counts of each topic's column must add up to the n_k the node sent.
absl::Status CheckTotals(const api::ExportModelResponse& first,
                         FetchedModel* m) {
  const std::vector<int64_t> totals = m->snapshot.TopicTotals();
  uint64_t tokens = 0;
  for (uint32_t k = 0; k < totals.size(); ++k) {
    if (totals[k] != first.topic_tokens(static_cast<int>(k))) {
      return absl::DataLossError(absl::StrCat(
          "topic ", k, ": the words' counts add up to ", totals[k],
          ", the node says n_k = ", first.topic_tokens(static_cast<int>(k))));
    }
    tokens += static_cast<uint64_t>(totals[k]);
  }
  m->snapshot.tokens = tokens;
  return absl::OkStatus();
}

// A cluster node's words in canonical order (ExportModelResponse.cluster):
// sorted by their bytes, without the words that have no count.
void SortClusterWords(FetchedModel* m) {
  const ModelSnapshot& s = m->snapshot;
  std::vector<WordId> order;
  for (WordId w = 0; w < s.vocab_size; ++w) {
    if (s.word_offsets[w + 1] > s.word_offsets[w]) order.push_back(w);
  }
  std::sort(order.begin(), order.end(), [m](WordId a, WordId b) {
    return m->vocab.word(a) < m->vocab.word(b);
  });
  ModelSnapshot sorted = s;
  sorted.vocab_size = static_cast<uint32_t>(order.size());
  sorted.word_offsets.assign(1, 0);
  sorted.entries.clear();
  Vocabulary vocab;
  for (WordId w : order) {
    vocab.Add(m->vocab.word(w));
    sorted.entries.insert(
        sorted.entries.end(),
        s.entries.begin() + static_cast<ptrdiff_t>(s.word_offsets[w]),
        s.entries.begin() + static_cast<ptrdiff_t>(s.word_offsets[w + 1]));
    sorted.word_offsets.push_back(sorted.entries.size());
  }
  m->snapshot = std::move(sorted);
  m->vocab = std::move(vocab);
}

// One fetch from word 0 to the end: the model, or where it moved.
absl::StatusOr<std::variant<FetchedModel, Moved>> FetchOnce(
    ApiClient* api, const FetchOptions& o) {
  FetchedModel m;
  api::ExportModelResponse first;
  api::ExportModelRequest request;
  request.set_max_words(o.page_words);
  uint32_t next = 0;
  absl::Time reported = absl::Now();
  do {
    request.set_first_word(next);
    api::ExportModelResponse page;
    LATENTD_RETURN_IF_ERROR(api->Call(Method::kExportModel, request, &page));
    if (next == 0) {
      LATENTD_RETURN_IF_ERROR(StartModel(page, &m));
    } else if (!SameVersion(page.version(), m.version)) {
      return Moved{m.version, page.version()};
    }
    LATENTD_RETURN_IF_ERROR(AddWords(page, &next, &m));
    if (m.pages++ == 0) first = std::move(page);
    if (o.progress != nullptr && absl::Now() - reported >= absl::Seconds(1)) {
      reported = absl::Now();
      absl::FPrintF(o.progress, "export: %d/%d words (%d pages)\n", next,
                    m.snapshot.vocab_size, m.pages);
    }
  } while (next < m.snapshot.vocab_size);
  LATENTD_RETURN_IF_ERROR(CheckTotals(first, &m));
  if (first.cluster()) SortClusterWords(&m);
  return m;
}

// `addr` is in every message, so a failure says which node it was.
absl::Status NameAddress(const absl::Status& s, const std::string& addr) {
  if (s.ok() || absl::StrContains(s.message(), addr)) return s;
  return absl::Status(s.code(), absl::StrCat(addr, ": ", s.message()));
}

// The --json summary: one line, keys as ExportCommandOptions::json lists.
std::string SummaryJson(const ExportCommandOptions& o, const FetchedModel& m) {
  google::protobuf::Struct s;
  auto& f = *s.mutable_fields();
  f["outDir"].set_string_value(o.out_dir);
  f["addr"].set_string_value(o.address.addr);
  f["sweep"].set_number_value(static_cast<double>(m.version.sweep()));
  f["view"].set_number_value(static_cast<double>(m.version.view()));
  f["topics"].set_number_value(m.snapshot.num_topics);
  f["vocabulary"].set_number_value(m.snapshot.vocab_size);
  f["tokens"].set_number_value(static_cast<double>(m.snapshot.tokens));
  f["pages"].set_number_value(m.pages);
  return service::ToJson(s);
}

// The --json summary of `export DIR --format F`: dir, outDir, format,
// files (a format adds its own fields).
google::protobuf::Struct ToolExportSummary(
    const ExportCommandOptions& o, const std::string& out_dir,
    const std::vector<std::string>& files) {
  google::protobuf::Struct s;
  auto& f = *s.mutable_fields();
  f["dir"].set_string_value(o.model_dir);
  f["outDir"].set_string_value(out_dir);
  f["format"].set_string_value(o.format);
  for (const std::string& file : files) {
    f["files"].mutable_list_value()->add_values()->set_string_value(file);
  }
  return s;
}

// `export DIR --format gensim` (cli/gensim_export.h).
absl::Status RunGensimExport(const ExportCommandOptions& o, FILE* out,
                             FILE* err) {
  const std::string out_dir = o.out_dir.empty() ? o.model_dir : o.out_dir;
  LATENTD_RETURN_IF_ERROR(MakeModelDirectory(out_dir));
  LATENTD_RETURN_IF_ERROR(ExportGensim(o.model_dir, out_dir, o.python, err));
  const std::string model = out_dir + "/" + kGensimModelFile;
  absl::FPrintF(err,
                "wrote gensim files (%s and its companions) to %s: "
                "gensim.models.LdaModel.load(\"%s\")\n",
                kGensimModelFile, out_dir, model);
  if (o.json) {
    absl::FPrintF(
        out, "%s\n",
        service::ToJson(ToolExportSummary(o, out_dir, {kGensimModelFile})));
  }
  return absl::OkStatus();
}

// `export DIR --format F`: the model directory's files for another tool.
absl::Status RunToolExport(const ExportCommandOptions& o, FILE* out,
                           FILE* err) {
  if (!o.address.addr.empty()) {
    return absl::InvalidArgumentError(
        "give a model directory or --addr, not both");
  }
  if (o.format.empty()) {
    return absl::InvalidArgumentError(
        "--format: pyldavis, mallet, csv or gensim is needed with a model "
        "directory");
  }
  if (o.format == "gensim") return RunGensimExport(o, out, err);
  LATENTD_ASSIGN_OR_RETURN(ToolFormat format, ParseToolFormat(o.format));
  LATENTD_ASSIGN_OR_RETURN(LoadedModel model, LoadModelDir(o.model_dir));
  const ModelPaths paths(o.model_dir);
  struct stat st;
  if (::stat(paths.tokens().c_str(), &st) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        o.model_dir, " holds no token store (", paths.tokens(),
        "): the document-topic part of --format ", o.format,
        " comes from the training documents, which only a directory "
        "written by `latentctl train` has"));
  }
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<TokenStore> store,
                           OpenFileTokenStore(paths.tokens()));
  const std::string out_dir = o.out_dir.empty() ? o.model_dir : o.out_dir;
  LATENTD_RETURN_IF_ERROR(MakeModelDirectory(out_dir));
  ToolExportOptions options;
  options.top_words = o.top_words;
  LATENTD_RETURN_IF_ERROR(ExportForTool(model.snapshot, model.vocab,
                                        store.get(), format, options, out_dir));
  const std::vector<std::string> files = ToolExportFiles(format);
  const ModelSnapshot& m = model.snapshot;
  absl::FPrintF(err,
                "wrote %s files (%s) for %d topics, %d words, %d documents "
                "(sweep %d) to %s\n",
                o.format, absl::StrJoin(files, ", "), m.num_topics,
                m.vocab_size, store->meta().num_docs, m.sweep, out_dir);
  if (o.json) {
    google::protobuf::Struct s = ToolExportSummary(o, out_dir, files);
    auto& f = *s.mutable_fields();
    f["topics"].set_number_value(m.num_topics);
    f["vocabulary"].set_number_value(m.vocab_size);
    f["documents"].set_number_value(
        static_cast<double>(store->meta().num_docs));
    absl::FPrintF(out, "%s\n", service::ToJson(s));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<FetchedModel> FetchModel(ApiClient* api,
                                        const FetchOptions& options) {
  std::vector<Moved> moves;
  for (int attempt = 1; attempt <= std::max(options.attempts, 1); ++attempt) {
    LATENTD_ASSIGN_OR_RETURN(auto fetched, FetchOnce(api, options));
    if (auto* m = std::get_if<FetchedModel>(&fetched)) return std::move(*m);
    moves.push_back(std::get<Moved>(fetched));
    if (options.progress != nullptr) {
      absl::FPrintF(options.progress,
                    "export: the model changed (%s -> %s); starting over\n",
                    Describe(moves.back().from), Describe(moves.back().to));
    }
  }
  return absl::AbortedError(absl::StrCat(
      "the model changed while it was being fetched, ", moves.size(),
      " times running (last from ", Describe(moves.back().from), " to ",
      Describe(moves.back().to),
      "): training is moving the model (or ingested documents are being "
      "merged); export once the node has stopped sampling (start latentd "
      "with --max-sweeps)"));
}

absl::Status WriteModelText(const FetchedModel& model, int top_words,
                            const std::string& dir) {
  LATENTD_RETURN_IF_ERROR(model.vocab.Save(ModelPaths(dir).vocab()));
  return ExportModelText(model.snapshot, model.vocab, top_words, dir);
}

CLI::App* AddExportCommand(CLI::App* app, ExportCommandOptions* o) {
  CLI::App* cmd = app->add_subcommand(
      "export",
      "Write the model a running latentd serves (--addr) into --out in "
      "train's text formats (vocab.txt, word_topic_counts.tsv, alpha.txt, "
      "topics.txt), fetched page by page from one model version (from a "
      "cluster node: words sorted, those with no count left out, the same "
      "on every node once drained); or write "
      "a trained model directory DIR in the files another tool reads "
      "(--format pyldavis: pyldavis.json, the arguments of pyLDAvis.prepare "
      "| mallet: mallet_topic_keys.txt, mallet_doc_topics.txt, "
      "mallet_state.gz in Mallet's layouts | csv: doc_topic.csv, "
      "topic_word.csv | gensim: lda.gensim, which "
      "gensim.models.LdaModel.load opens, written by gensim run with "
      "--python), into --out or DIR");
  cmd->add_option("dir", o->model_dir,
                  "Model directory written by `latentctl train` (with "
                  "--format); without it, fetch from --addr");
  AddDaemonAddressOptions(cmd, &o->address);
  // Export has no default node: without DIR, --addr must name one.
  cmd->get_option("--addr")->description(
      "The node to fetch from: its --listen address for tcp, its --http "
      "address for http/json (needed without DIR)");
  cmd->add_option("--format", o->format,
                  "With DIR: pyldavis | mallet | csv | gensim")
      ->check(CLI::IsMember({"pyldavis", "mallet", "csv", "gensim"}));
  cmd->add_option("--python", o->python,
                  "With --format gensim: a Python 3 that has gensim (Debian: "
                  "python3-gensim)")
      ->capture_default_str();
  cmd->add_option("--out", o->out_dir,
                  "Directory to write (created); with DIR, default DIR");
  cmd->add_flag("--overwrite", o->overwrite,
                "With --addr: replace the model already in --out (without "
                "it a directory holding a model is refused; with DIR the "
                "format's files are always replaced)");
  cmd->add_option("--top", o->top_words,
                  "Words per topic in topics.txt (mallet: in "
                  "mallet_topic_keys.txt)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--attempts", o->fetch.attempts,
                  "Fetches begun before a model that keeps changing (a "
                  "node still training) is an error")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  AddJsonOption(cmd, &o->json);
  // For tests: small pages without a big model.
  cmd->add_option("--page-words", o->fetch.page_words,
                  "Words per page (0: the node's default)")
      ->group("");
  return cmd;
}

absl::Status RunExport(const ExportCommandOptions& o, FILE* out, FILE* err) {
  if (!o.model_dir.empty()) return RunToolExport(o, out, err);
  const std::string& addr = o.address.addr;
  if (addr.empty()) {
    return absl::InvalidArgumentError(
        "--addr: the node's address is needed (or a model directory and "
        "--format)");
  }
  if (!o.format.empty()) {
    return absl::InvalidArgumentError(
        "--format is for a model directory (export DIR --format F); --addr "
        "exports train's text formats");
  }
  if (o.out_dir.empty()) {
    return absl::InvalidArgumentError("--out: a directory is needed");
  }
  LATENTD_RETURN_IF_ERROR(MakeModelDirectory(o.out_dir));
  std::vector<std::string> old = ModelPaths(o.out_dir).existing();
  if (!old.empty() && !o.overwrite) {
    return absl::FailedPreconditionError(
        absl::StrCat(o.out_dir, " already holds a model (", old.front(),
                     "): give --overwrite to replace it"));
  }
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<ApiClient> api,
                           ConnectDaemon(o.address));
  FetchOptions fetch = o.fetch;
  fetch.progress = err;
  absl::StatusOr<FetchedModel> model = FetchModel(api.get(), fetch);
  if (!model.ok()) return NameAddress(model.status(), addr);
  // Written beside the old model first, so that neither a failed fetch
  // nor a failed write (a full disk) costs it; then the old model's files
  // all go (none is mistaken for the new model's) and the new ones move in.
  namespace fs = std::filesystem;
  const fs::path staging =
      fs::path(o.out_dir) / absl::StrCat(".export-", ::getpid());
  std::error_code ec;
  fs::remove_all(staging, ec);
  LATENTD_RETURN_IF_ERROR(MakeModelDirectory(staging.string()));
  absl::Status written = WriteModelText(*model, o.top_words, staging.string());
  if (!written.ok()) {
    fs::remove_all(staging, ec);
    return written;
  }
  LATENTD_RETURN_IF_ERROR(RemoveModelFiles(ModelPaths(o.out_dir).existing()));
  for (const fs::directory_entry& e : fs::directory_iterator(staging, ec)) {
    absl::Status moved = latentd::FileSystem::Default()->Rename(
        e.path().string(),
        (fs::path(o.out_dir) / e.path().filename()).string());
    if (!moved.ok()) {
      return absl::InternalError(absl::StrCat("cannot move ", e.path().string(),
                                              " into ", o.out_dir, ": ",
                                              moved.message()));
    }
  }
  fs::remove(staging, ec);
  const ModelSnapshot& m = model->snapshot;
  absl::FPrintF(err,
                "exported sweep %d (view %d) from %s: %d words, %d topics, "
                "%d tokens in %d page%s to %s\n",
                model->version.sweep(), model->version.view(), addr,
                m.vocab_size, m.num_topics, m.tokens, model->pages,
                model->pages == 1 ? "" : "s", o.out_dir);
  if (o.json) absl::FPrintF(out, "%s\n", SummaryJson(o, *model));
  return absl::OkStatus();
}

}  // namespace latentd
