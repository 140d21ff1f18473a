// Strict UTF-8 decoding/encoding and the letter table of the tokenizer.
// Pure functions: thread-safe.
#ifndef LATENTD_CORPORA_INTERNAL_UTF8_H_
#define LATENTD_CORPORA_INTERNAL_UTF8_H_

#include <cstddef>
#include <string>

namespace latentd::internal {

// Decodes one code point at p (p < end) into *cp. Returns the bytes it
// spans, or 0 if the bytes at p are not valid UTF-8 (a bad lead byte, a
// missing continuation, an overlong form, a surrogate, above U+10FFFF); the
// caller then skips one byte.
size_t DecodeUtf8(const unsigned char* p, const unsigned char* end,
                  char32_t* cp);
// Appends the UTF-8 form of a valid code point.
void AppendUtf8(char32_t cp, std::string* out);

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
