#include "corpora/internal/reader_base.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "base/absl_compat.h"

namespace latentd::internal {

absl::Status ReaderBase::Malformed(std::string_view path, uint64_t line,
                                   std::string_view what) {
  std::string message =
      line == 0 ? absl::StrCat(ToAbsl(path), ": ", ToAbsl(what))
                : absl::StrCat(ToAbsl(path), ":", line, ": ", ToAbsl(what));
  if (!skip_malformed_) return absl::InvalidArgumentError(message);
  ++stats_.malformed;
  if (stats_.messages.size() < ReadStats::kMaxMessages) {
    stats_.messages.push_back(std::move(message));
  }
  return absl::OkStatus();
}

bool ReaderBase::Accept(const RawDocument& doc) {
  if (doc.words.empty()) {
    ++stats_.empty_documents;
    return false;
  }
  ++stats_.documents;
  stats_.tokens += doc.words.size();
  return true;
}

void FormatSniffer::Add(std::string_view line) {
  if (decided()) return;
  SplitWhitespace(line, &fields_);
  if (fields_.empty()) return;
  ++seen_;
  uint64_t n;
  auto is_uint = [&n](std::string_view f) {
    return ParseUint(f, std::numeric_limits<uint64_t>::max(), &n);
  };
  // LDA-C: `N id:count ...` with at least one pair.
  if (fields_.size() < 2 || !is_uint(fields_[0])) ldac_ = false;
  for (size_t i = 1; ldac_ && i < fields_.size(); ++i) {
    const size_t colon = fields_[i].find(':');
    ldac_ = colon != std::string_view::npos &&
            is_uint(fields_[i].substr(0, colon)) &&
            is_uint(fields_[i].substr(colon + 1));
  }
  // UCI: D, W, NNZ on lines of their own, then `docID wordID count`.
  const size_t want = seen_ <= 3 ? 1 : 3;
  if (fields_.size() != want) uci_ = false;
  for (size_t i = 0; uci_ && i < fields_.size(); ++i)
    uci_ = is_uint(fields_[i]);
}

std::string FormatSniffer::Hint() const {
  if (ldac_ && seen_ > 0) {
    return "this looks like an LDA-C file: did you mean --format ldac?";
  }
  if (uci_ && seen_ >= 3) {
    return "this looks like a UCI bag-of-words (docword) file: did you mean "
           "--format uci?";
  }
  return "";
}

void SplitWhitespace(std::string_view line,
                     std::vector<std::string_view>* fields) {
  fields->clear();
  auto space = [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' ||
           c == '\v';
  };
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && space(line[i])) ++i;
    size_t start = i;
    while (i < line.size() && !space(line[i])) ++i;
    if (i > start) fields->push_back(line.substr(start, i - start));
  }
}

bool ParseUint(std::string_view text, uint64_t max, uint64_t* value) {
  if (text.empty() || text.size() > 20) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10) return false;
    v = v * 10 + digit;
  }
  if (v > max) return false;
  *value = v;
  return true;
}

bool ParseInt(std::string_view text, int64_t* value) {
  bool negative = !text.empty() && text[0] == '-';
  uint64_t magnitude;
  if (!ParseUint(negative ? text.substr(1) : text,
                 uint64_t{std::numeric_limits<int64_t>::max()}, &magnitude)) {
    return false;
  }
  *value = negative ? -static_cast<int64_t>(magnitude)
                    : static_cast<int64_t>(magnitude);
  return true;
}

}  // namespace latentd::internal
