#include "corpora/internal/reader_base.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "corpora/internal/absl_compat.h"

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
