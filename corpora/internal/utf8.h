// The letter table of the tokenizer (strict UTF-8 itself is base/utf8.h).
// Pure functions: thread-safe.
#ifndef LATENTD_CORPORA_INTERNAL_UTF8_H_
#define LATENTD_CORPORA_INTERNAL_UTF8_H_

namespace latentd::internal {

// The lowercase form of `cp` if it is a word character, else 0. Word
// characters: ASCII letters; Latin-1 letters (U+00C0..U+00FF except the
// signs U+00D7, U+00F7); Latin Extended-A and -B (U+0100..U+024F);
// combining diacritics (U+0300..U+036F); Greek (U+0370..U+03FF) and
// Cyrillic (U+0400..U+04FF) letters; Latin Extended Additional
// (U+1E00..U+1EFF). Lowercased: ASCII, Latin-1, Extended-A, Greek,
// Cyrillic, Extended Additional; other word characters are kept as they are.
char32_t LowerWordChar(char32_t cp);

}  // namespace latentd::internal

#endif  // LATENTD_CORPORA_INTERNAL_UTF8_H_
