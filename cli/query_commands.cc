#include "cli/query_commands.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "corpora/tokenizer.h"
#include "google/protobuf/struct.pb.h"
#include "sampler/model_dir.h"
#include "sampler/model_export.h"
#include "service/api_dispatch.h"

namespace latentd {
namespace {

// The offline topics as the daemon's ListTopics would answer them.
api::ListTopicsResponse TopicsMessage(const LoadedModel& model,
                                      const std::vector<TopicSummary>& topics) {
  api::ListTopicsResponse r;
  r.mutable_version()->set_sweep(model.snapshot.sweep);
  for (const TopicSummary& t : topics) {
    api::Topic* topic = r.add_topics();
    topic->set_id(t.topic);
    topic->set_alpha(t.alpha);
    topic->set_tokens(t.tokens);
    for (const auto& [word, p] : t.top_words) {
      api::WordWeight* w = topic->add_top_words();
      w->set_word(model.vocab.word(word));
      w->set_probability(p);
    }
  }
  return r;
}

}  // namespace

std::string TopicsJson(const api::ListTopicsResponse& topics) {
  return service::ToJson(topics);
}

std::string InferJsonLine(uint64_t line, const api::InferDocumentResponse& r) {
  const std::string json = service::ToJson(r);  // "{...}", never "{}"
  return absl::StrCat("{\"line\":", line, ",", json.substr(1));
}

std::string InferErrorJsonLine(uint64_t line, std::string_view message) {
  google::protobuf::Value text;
  text.set_string_value(std::string(message));
  return absl::StrCat("{\"line\":", line, ",\"error\":", service::ToJson(text),
                      "}");
}

std::string InferTextLine(uint64_t line, const api::InferDocumentResponse& r) {
  std::string text = absl::StrCat(line);
  for (const api::TopicWeight& t : r.topics()) {
    absl::StrAppendFormat(&text, "\t%d:%.4f", t.topic(), t.weight());
    for (int i = 0; i < t.top_words_size(); ++i) {
      absl::StrAppend(&text, i == 0 ? " (" : " ", t.top_words(i).word(),
                      i + 1 == t.top_words_size() ? ")" : "");
    }
  }
  return text;
}

absl::Status RunTopics(const TopicsCommandOptions& o, FILE* out) {
  if (o.top < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--top must be at least 1, got ", o.top));
  }
  LATENTD_ASSIGN_OR_RETURN(LoadedModel model, LoadModelDir(o.model_dir));
  std::vector<TopicSummary> topics = SummarizeTopics(model.snapshot, o.top);
  if (o.topic.has_value()) {
    if (*o.topic < 0 || *o.topic >= static_cast<int64_t>(topics.size())) {
      return absl::OutOfRangeError(
          absl::StrCat("topic ", *o.topic, " does not exist: the model has ",
                       topics.size(), " topics (0..", topics.size() - 1, ")"));
    }
    topics = {topics[*o.topic]};
  }
  if (o.json) {
    absl::FPrintF(out, "%s\n", TopicsJson(TopicsMessage(model, topics)));
  } else {
    absl::FPrintF(out, "%s", FormatTopics(topics, model.vocab));
  }
  return absl::OkStatus();
}

absl::Status RunInfer(const InferCommandOptions& o, FILE* in, FILE* out,
                      FILE* err) {
  if (o.infer.iterations < 1 || o.infer.burn_in < 0) {
    return absl::InvalidArgumentError(
        "--iterations must be >= 1 and --burn-in >= 0");
  }
  LATENTD_ASSIGN_OR_RETURN(LoadedModel model, LoadModelDir(o.model_dir));
  const std::vector<TopicSummary> summaries =
      SummarizeTopics(model.snapshot, std::max(o.words, 0));
  LATENTD_ASSIGN_OR_RETURN(TokenizerOptions tokenizer_options,
                           GetTokenizerSettings(model.settings));
  const Tokenizer tokenizer(tokenizer_options);
  std::unique_ptr<TopicTable> table = model.snapshot.ToTable();
  FoldIn fold_in(*table, model.snapshot.alpha, model.snapshot.beta);

  std::string line;
  std::vector<std::string> words;
  std::vector<WordId> ids;
  uint64_t line_number = 0;
  char buf[1 << 16];
  bool at_line_start = true;
  while (fgets(buf, sizeof(buf), in) != nullptr) {
    if (at_line_start) line.clear();
    line += buf;
    at_line_start = !line.empty() && line.back() == '\n';
    if (!at_line_start && !feof(in)) continue;
    ++line_number;
    words.clear();
    ids.clear();
    tokenizer.Tokenize(line, &words);
    size_t unknown = 0;
    for (const std::string& w : words) {
      if (std::optional<WordId> id = model.vocab.Find(w)) {
        ids.push_back(*id);
      } else {
        ++unknown;
      }
    }
    absl::StatusOr<std::vector<double>> theta =
        fold_in.Infer(ids, o.infer, line_number);
    if (!theta.ok()) {
      const std::string why =
          absl::StrFormat("%s (%d words, %d unknown)", theta.status().message(),
                          words.size(), unknown);
      absl::FPrintF(err, "infer: line %d: %s\n", line_number, why);
      absl::FPrintF(out, "%s\n",
                    o.json ? InferErrorJsonLine(line_number, why)
                           : absl::StrCat(line_number));
      continue;
    }
    std::vector<TopicId> order(theta->size());
    std::iota(order.begin(), order.end(), 0);
    const size_t n = std::min<size_t>(std::max(o.top, 1), order.size());
    std::partial_sort(
        order.begin(), order.begin() + n, order.end(),
        [&](TopicId a, TopicId b) { return (*theta)[a] > (*theta)[b]; });
    api::InferDocumentResponse r;
    r.mutable_version()->set_sweep(model.snapshot.sweep);
    r.set_known_tokens(static_cast<uint32_t>(ids.size()));
    r.set_unknown_tokens(static_cast<uint32_t>(unknown));
    for (size_t i = 0; i < n; ++i) {
      api::TopicWeight* t = r.add_topics();
      t->set_topic(order[i]);
      t->set_weight((*theta)[order[i]]);
      for (const auto& [w, p] : summaries[order[i]].top_words) {
        api::WordWeight* ww = t->add_top_words();
        ww->set_word(model.vocab.word(w));
        ww->set_probability(p);
      }
    }
    absl::FPrintF(
        out, "%s\n",
        o.json ? InferJsonLine(line_number, r) : InferTextLine(line_number, r));
  }
  return absl::OkStatus();
}

}  // namespace latentd
