// Tokenizer: turns raw text into normalised words, the form HashWord() and
// the Vocabulary expect.
//
// Rules, in order:
//  1. With strip_pos_tags, each whitespace-separated token loses everything
//     from its last '/' on ("Fulton/np-tl" -> "Fulton", "./." -> "."), so
//     part-of-speech tags (Brown corpus) never become words.
//  2. Words are maximal runs of word characters (letters of ASCII, Latin-1,
//     Latin Extended-A/B and Additional, Greek, Cyrillic, plus combining
//     diacritics; see internal/utf8.h). Everything else splits: digits,
//     punctuation, symbols, other scripts (CJK, Arabic, ... are dropped) and
//     bytes that are not valid UTF-8 (e.g. Latin-1 encoded text).
//  3. Words are lowercased (ASCII, Latin-1, Latin Extended-A, Greek,
//     Cyrillic) and re-encoded as UTF-8.
//  4. Words shorter than min_length characters (code points), longer than
//     max_length (if set), or on the English stop-word list (if
//     remove_stopwords) are dropped.
// Any byte sequence is accepted; Tokenize never fails.
//
// Thread-safety: a Tokenizer is immutable after construction; its const
// methods may be called concurrently.
#ifndef LATENTD_CORPORA_TOKENIZER_H_
#define LATENTD_CORPORA_TOKENIZER_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace latentd {

struct TokenizerOptions {
  // Drop words on the built-in English stop-word list (the Glasgow IR list
  // as shipped by scikit-learn, 314 words).
  bool remove_stopwords = true;
  // Drop words shorter than this many characters. The default 2 drops the
  // single letters left by splitting ("don't" -> "don", "t").
  size_t min_length = 2;
  // Drop words longer than this many characters; 0 = no limit.
  size_t max_length = 0;
  // Drop a trailing "/TAG" from each whitespace-separated token first.
  bool strip_pos_tags = false;
};

class Tokenizer {
 public:
  explicit Tokenizer(const TokenizerOptions& options = {})
      : options_(options) {}

  // Appends the words of `text`, in order, to *words.
  void Tokenize(std::string_view text, std::vector<std::string>* words) const;
  std::vector<std::string> Tokenize(std::string_view text) const {
    std::vector<std::string> words;
    Tokenize(text, &words);
    return words;
  }

  const TokenizerOptions& options() const { return options_; }

 private:
  void TokenizeSpan(std::string_view text,
                    std::vector<std::string>* words) const;
  void Emit(std::string* word, size_t chars,
            std::vector<std::string>* words) const;

  TokenizerOptions options_;
};

// Lowercases the letters of `text` as the tokenizer does, leaving every
// other character (and any invalid byte) unchanged. For words that were
// tokenized elsewhere (UCI / LDA-C vocabularies).
std::string LowercaseWord(std::string_view text);

// True if `word` (normalised) is on the built-in English stop-word list.
bool IsEnglishStopword(std::string_view word);

}  // namespace latentd

#endif  // LATENTD_CORPORA_TOKENIZER_H_
