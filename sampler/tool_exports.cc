#include "sampler/tool_exports.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <span>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "sampler/internal/export_file.h"
#include "sampler/model_export.h"

namespace latentd {
namespace {

using Out = internal::BufferedExportFile;

// `v` with 9 significant digits, the shortest way ("0.25", "1e-05").
void AppendNumber(std::string* out, double v) {
  char buf[32];
  auto r =
      std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general, 9);
  out->append(buf, r.ptr);
}

void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(out, "\\u%04x", static_cast<int>(c));
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

void AppendCsvField(std::string* out, std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) {
    out->append(s);
    return;
  }
  out->push_back('"');
  for (char c : s) {
    if (c == '"') out->push_back('"');
    out->push_back(c);
  }
  out->push_back('"');
}

// The model's counts by topic: words[k] lists (word, n_wk) with n_wk > 0.
struct TopicColumns {
  std::vector<std::vector<std::pair<WordId, Count>>> words;
  std::vector<int64_t> totals;  // n_k
};

TopicColumns ByTopic(const ModelSnapshot& m) {
  TopicColumns c;
  c.words.resize(m.num_topics);
  c.totals = m.TopicTotals();
  for (WordId w = 0; w < m.vocab_size; ++w) {
    for (uint64_t i = m.word_offsets[w]; i < m.word_offsets[w + 1]; ++i) {
      c.words[m.entries[i].topic].emplace_back(w, m.entries[i].count);
    }
  }
  return c;
}

// Calls row(k, φ_k) for every topic, φ_k dense over the vocabulary.
template <typename Row>
absl::Status ForEachTopicRow(const ModelSnapshot& m, Row row) {
  const TopicColumns c = ByTopic(m);
  const double beta_sum = m.beta * m.vocab_size;
  std::vector<double> phi(m.vocab_size);
  for (TopicId k = 0; k < m.num_topics; ++k) {
    const double norm = c.totals[k] + beta_sum;
    std::fill(phi.begin(), phi.end(), m.beta / norm);
    for (const auto& [w, n] : c.words[k]) phi[w] = (n + m.beta) / norm;
    LATENTD_RETURN_IF_ERROR(row(k, phi));
  }
  return absl::OkStatus();
}

// One document of the store as the exports see it.
struct DocRow {
  DocIndex index;
  std::string_view id;
  const DocBatch* batch;
  size_t d;  // position in batch
  std::span<const double> theta;
};

// Calls row(doc) for every document of the store in order.
template <typename Row>
absl::Status ForEachDocumentRow(TokenStore* store,
                                const std::vector<double>& alpha, Row row) {
  const double alpha_sum = std::accumulate(alpha.begin(), alpha.end(), 0.0);
  std::vector<Count> n_dk(alpha.size());
  std::vector<double> theta(alpha.size());
  return latentd::ForEachDocument(store, [&](const DocBatch& batch, size_t d) {
    std::fill(n_dk.begin(), n_dk.end(), 0);
    for (TopicId t : batch.doc_topics(d)) ++n_dk[t];
    const double norm = batch.doc_length(d) + alpha_sum;
    for (size_t k = 0; k < alpha.size(); ++k) {
      theta[k] = (n_dk[k] + alpha[k]) / norm;
    }
    return row(DocRow{batch.first_doc + d, batch.doc_ids[d], &batch, d, theta});
  });
}

absl::Status CheckStore(const ModelSnapshot& m, TokenStore* store) {
  const TokenStoreMeta& s = store->meta();
  if (s.num_topics != m.num_topics || s.vocab_size != m.vocab_size ||
      s.sweep != m.sweep) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the token store (K = ", s.num_topics, ", V = ", s.vocab_size,
        ", sweep ", s.sweep, ") is not the model's (K = ", m.num_topics,
        ", V = ", m.vocab_size, ", sweep ", m.sweep,
        "): model.bin and tokens.lts are out of step (resume training for a "
        "sweep to write both)"));
  }
  return absl::OkStatus();
}

// ---- pyLDAvis ----

absl::Status WritePyldavis(const ModelSnapshot& m, const Vocabulary& vocab,
                           TokenStore* store, const std::string& path) {
  LATENTD_ASSIGN_OR_RETURN(Out out, Out::Open(path));
  std::string& b = out.buf();
  b += "{\"topic_term_dists\": [";
  LATENTD_RETURN_IF_ERROR(ForEachTopicRow(
      m, [&](TopicId k, const std::vector<double>& phi) -> absl::Status {
        b += k == 0 ? "\n[" : ",\n[";
        for (WordId w = 0; w < phi.size(); ++w) {
          if (w > 0) b += ',';
          AppendNumber(&b, phi[w]);
          if ((w & 1023) == 0) LATENTD_RETURN_IF_ERROR(out.MaybeFlush());
        }
        b += ']';
        return absl::OkStatus();
      }));
  b += "],\n\"doc_topic_dists\": [";
  std::vector<uint32_t> lengths;
  lengths.reserve(store->meta().num_docs);
  LATENTD_RETURN_IF_ERROR(
      ForEachDocumentRow(store, m.alpha, [&](const DocRow& r) -> absl::Status {
        b += lengths.empty() ? "\n[" : ",\n[";
        for (size_t k = 0; k < r.theta.size(); ++k) {
          if (k > 0) b += ',';
          AppendNumber(&b, r.theta[k]);
        }
        b += ']';
        lengths.push_back(static_cast<uint32_t>(r.batch->doc_length(r.d)));
        return out.MaybeFlush();
      }));
  absl::StrAppend(&b, "],\n\"doc_lengths\": [", absl::StrJoin(lengths, ","),
                  "],\n\"vocab\": [");
  for (WordId w = 0; w < vocab.size(); ++w) {
    if (w > 0) b += ',';
    AppendJsonString(&b, vocab.word(w));
  }
  b += "],\n\"term_frequency\": [";
  for (WordId w = 0; w < m.vocab_size; ++w) {
    int64_t n = 0;
    for (uint64_t i = m.word_offsets[w]; i < m.word_offsets[w + 1]; ++i) {
      n += m.entries[i].count;
    }
    absl::StrAppend(&b, w > 0 ? "," : "", n);
  }
  b += "]}\n";
  return out.Commit();
}

// ---- Mallet ----

// Java NumberFormat with at most 5 fraction digits (Mallet's formatter for
// α in the topic keys): "0.5", "0.08333", "2", "1,250.5".
std::string MalletAlpha(double v) {
  std::string s = absl::StrFormat("%.5f", std::fabs(v));
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  const size_t point = std::min(s.find('.'), s.size());
  std::string out = v < 0 ? "-" : "";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && i < point && (point - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

absl::Status CheckMalletWords(const Vocabulary& vocab) {
  for (WordId w = 0; w < vocab.size(); ++w) {
    if (vocab.word(w).find_first_of(" \t\r\n\f\v") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "word ", w, " ('", vocab.word(w),
          "') holds whitespace: Mallet's files separate words by spaces"));
    }
  }
  return absl::OkStatus();
}

// A document id as a Mallet instance name: one tab-separated field.
std::string MalletName(std::string_view id) {
  if (id.empty()) return "no-name";
  std::string s(id);
  for (char& c : s) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

absl::Status WriteMalletKeys(const ModelSnapshot& m, const Vocabulary& vocab,
                             int top_words, const std::string& path) {
  std::string b;
  for (const TopicSummary& t : SummarizeTopics(m, top_words)) {
    absl::StrAppend(&b, t.topic, "\t", MalletAlpha(t.alpha), "\t");
    for (const auto& [w, p] : t.top_words)
      absl::StrAppend(&b, vocab.word(w), " ");
    b += '\n';
  }
  LATENTD_ASSIGN_OR_RETURN(Out out, Out::Open(path));
  out.buf() = std::move(b);
  return out.Commit();
}

absl::Status WriteMalletDocTopics(const ModelSnapshot& m, TokenStore* store,
                                  const std::string& path) {
  LATENTD_ASSIGN_OR_RETURN(Out out, Out::Open(path));
  std::string& b = out.buf();
  LATENTD_RETURN_IF_ERROR(
      ForEachDocumentRow(store, m.alpha, [&](const DocRow& r) -> absl::Status {
        absl::StrAppend(&b, r.index, "\t", MalletName(r.id));
        for (double t : r.theta) absl::StrAppend(&b, "\t", JavaDoubleString(t));
        b += '\n';
        return out.MaybeFlush();
      }));
  return out.Commit();
}

absl::Status WriteMalletState(const ModelSnapshot& m, const Vocabulary& vocab,
                              TokenStore* store, const std::string& path) {
  LATENTD_ASSIGN_OR_RETURN(Out out, Out::Open(path, /*gzip=*/true));
  std::string& b = out.buf();
  b += "#doc source pos typeindex type topic\n#alpha : ";
  for (double a : m.alpha) absl::StrAppend(&b, JavaDoubleString(a), " ");
  absl::StrAppend(&b, "\n#beta : ", JavaDoubleString(m.beta), "\n");
  LATENTD_RETURN_IF_ERROR(
      ForEachDocumentRow(store, m.alpha, [&](const DocRow& r) -> absl::Status {
        std::span<const WordId> words = r.batch->doc_words(r.d);
        std::span<const TopicId> topics = r.batch->doc_topics(r.d);
        for (size_t pos = 0; pos < words.size(); ++pos) {
          absl::StrAppend(&b, r.index, " NA ", pos, " ", words[pos], " ",
                          vocab.word(words[pos]), " ", topics[pos], "\n");
        }
        return out.MaybeFlush();
      }));
  return out.Commit();
}

// ---- CSV ----

absl::Status WriteCsv(const ModelSnapshot& m, const Vocabulary& vocab,
                      TokenStore* store, const std::string& dir) {
  {
    LATENTD_ASSIGN_OR_RETURN(Out out, Out::Open(dir + "/doc_topic.csv"));
    std::string& b = out.buf();
    b += "doc,id";
    for (TopicId k = 0; k < m.num_topics; ++k)
      absl::StrAppend(&b, ",topic_", k);
    b += "\r\n";
    LATENTD_RETURN_IF_ERROR(ForEachDocumentRow(
        store, m.alpha, [&](const DocRow& r) -> absl::Status {
          absl::StrAppend(&b, r.index, ",");
          AppendCsvField(&b, r.id);
          for (double t : r.theta) {
            b += ',';
            AppendNumber(&b, t);
          }
          b += "\r\n";
          return out.MaybeFlush();
        }));
    LATENTD_RETURN_IF_ERROR(out.Commit());
  }
  LATENTD_ASSIGN_OR_RETURN(Out out, Out::Open(dir + "/topic_word.csv"));
  std::string& b = out.buf();
  b += "topic";
  for (WordId w = 0; w < vocab.size(); ++w) {
    b += ',';
    AppendCsvField(&b, vocab.word(w));
  }
  b += "\r\n";
  LATENTD_RETURN_IF_ERROR(ForEachTopicRow(
      m, [&](TopicId k, const std::vector<double>& phi) -> absl::Status {
        absl::StrAppend(&b, k);
        for (WordId w = 0; w < phi.size(); ++w) {
          b += ',';
          AppendNumber(&b, phi[w]);
          if ((w & 1023) == 0) LATENTD_RETURN_IF_ERROR(out.MaybeFlush());
        }
        b += "\r\n";
        return absl::OkStatus();
      }));
  return out.Commit();
}

}  // namespace

absl::StatusOr<ToolFormat> ParseToolFormat(std::string_view name) {
  if (name == "pyldavis") return ToolFormat::kPyldavis;
  if (name == "mallet") return ToolFormat::kMallet;
  if (name == "csv") return ToolFormat::kCsv;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown export format '", std::string(name),
                   "' (pyldavis, mallet or csv)"));
}

std::string_view ToolFormatName(ToolFormat format) {
  switch (format) {
    case ToolFormat::kPyldavis:
      return "pyldavis";
    case ToolFormat::kMallet:
      return "mallet";
    case ToolFormat::kCsv:
      return "csv";
  }
  return "?";
}

std::vector<std::string> ToolExportFiles(ToolFormat format) {
  switch (format) {
    case ToolFormat::kPyldavis:
      return {"pyldavis.json"};
    case ToolFormat::kMallet:
      return {"mallet_topic_keys.txt", "mallet_doc_topics.txt",
              "mallet_state.gz"};
    case ToolFormat::kCsv:
      return {"doc_topic.csv", "topic_word.csv"};
  }
  return {};
}

absl::Status ExportForTool(const ModelSnapshot& model, const Vocabulary& vocab,
                           TokenStore* store, ToolFormat format,
                           const ToolExportOptions& options,
                           const std::string& dir) {
  LATENTD_RETURN_IF_ERROR(CheckStore(model, store));
  switch (format) {
    case ToolFormat::kPyldavis:
      return WritePyldavis(model, vocab, store, dir + "/pyldavis.json");
    case ToolFormat::kMallet:
      LATENTD_RETURN_IF_ERROR(CheckMalletWords(vocab));
      LATENTD_RETURN_IF_ERROR(WriteMalletKeys(model, vocab, options.top_words,
                                              dir + "/mallet_topic_keys.txt"));
      LATENTD_RETURN_IF_ERROR(
          WriteMalletDocTopics(model, store, dir + "/mallet_doc_topics.txt"));
      return WriteMalletState(model, vocab, store, dir + "/mallet_state.gz");
    case ToolFormat::kCsv:
      return WriteCsv(model, vocab, store, dir);
  }
  return absl::InvalidArgumentError("unknown export format");
}

std::string JavaDoubleString(double v) {
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  // Shortest round-trip digits and exponent: "d.ddde±XX".
  char buf[40];
  auto r = std::to_chars(buf, buf + sizeof(buf), std::fabs(v),
                         std::chars_format::scientific);
  const std::string_view sci(buf, r.ptr - buf);
  const size_t e = sci.find('e');
  std::string digits(sci.substr(0, e));
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exp = std::atoi(std::string(sci.substr(e + 1)).c_str());
  std::string out = v < 0 ? "-" : "";
  if (std::fabs(v) >= 1e-3 && std::fabs(v) < 1e7) {
    if (exp >= 0) {
      // Integer part: the first exp+1 digits (padded with zeros).
      while (digits.size() < static_cast<size_t>(exp) + 1) digits += '0';
      const absl::string_view frac = absl::string_view(digits).substr(exp + 1);
      absl::StrAppend(&out, absl::string_view(digits).substr(0, exp + 1), ".",
                      frac.empty() ? absl::string_view("0") : frac);
    } else {
      absl::StrAppend(&out, "0.", std::string(-exp - 1, '0'), digits);
    }
    return out;
  }
  const absl::string_view frac = absl::string_view(digits).substr(1);
  absl::StrAppend(&out, absl::string_view(digits).substr(0, 1), ".",
                  frac.empty() ? absl::string_view("0") : frac, "E", exp);
  return out;
}

}  // namespace latentd
