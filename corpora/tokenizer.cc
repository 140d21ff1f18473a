#include "corpora/tokenizer.h"

#include "base/utf8.h"
#include "corpora/internal/stopwords.h"
#include "corpora/internal/utf8.h"

namespace latentd {
namespace {

bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
         c == '\v';
}

}  // namespace

void Tokenizer::Tokenize(std::string_view text,
                         std::vector<std::string>* words) const {
  if (!options_.strip_pos_tags) {
    TokenizeSpan(text, words);
    return;
  }
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && IsAsciiSpace(text[i])) ++i;
    size_t start = i;
    while (i < text.size() && !IsAsciiSpace(text[i])) ++i;
    std::string_view token = text.substr(start, i - start);
    size_t slash = token.rfind('/');
    if (slash != std::string_view::npos) token = token.substr(0, slash);
    TokenizeSpan(token, words);
  }
}

void Tokenizer::TokenizeSpan(std::string_view text,
                             std::vector<std::string>* words) const {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  std::string word;
  size_t chars = 0;
  while (p < end) {
    if (*p < 0x80) {  // ASCII fast path
      unsigned char c = *p++;
      if (c >= 'A' && c <= 'Z') c += 32;
      if (c >= 'a' && c <= 'z') {
        word.push_back(static_cast<char>(c));
        ++chars;
      } else if (chars > 0) {
        Emit(&word, chars, words);
        chars = 0;
      }
      continue;
    }
    char32_t cp = 0;
    size_t n = DecodeUtf8(p, end, &cp);
    char32_t lower = n == 0 ? 0 : internal::LowerWordChar(cp);
    p += n == 0 ? 1 : n;
    if (lower != 0) {
      AppendUtf8(lower, &word);
      ++chars;
    } else if (chars > 0) {
      Emit(&word, chars, words);
      chars = 0;
    }
  }
  if (chars > 0) Emit(&word, chars, words);
}

void Tokenizer::Emit(std::string* word, size_t chars,
                     std::vector<std::string>* words) const {
  bool keep =
      chars >= options_.min_length &&
      (options_.max_length == 0 || chars <= options_.max_length) &&
      !(options_.remove_stopwords && internal::IsEnglishStopword(*word));
  if (keep) words->push_back(*word);
  word->clear();
}

std::string LowercaseWord(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    char32_t cp = 0;
    size_t n = DecodeUtf8(p, end, &cp);
    if (n == 0) {  // invalid byte: kept as is
      out.push_back(static_cast<char>(*p++));
      continue;
    }
    char32_t lower = internal::LowerWordChar(cp);
    AppendUtf8(lower != 0 ? lower : cp, &out);
    p += n;
  }
  return out;
}

bool IsEnglishStopword(std::string_view word) {
  return internal::IsEnglishStopword(word);
}

}  // namespace latentd
