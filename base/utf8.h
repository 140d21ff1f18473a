// Strict UTF-8: decoding, encoding and validation (no overlong forms, no
// surrogates U+D800..U+DFFF, nothing above U+10FFFF, no truncated
// sequence), as proto3 applies to `string` fields. Pure functions:
// thread-safe.
#ifndef LATENTD_BASE_UTF8_H_
#define LATENTD_BASE_UTF8_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace latentd {

// Decodes one code point at p (p < end) into *cp. Returns the bytes it
// spans, or 0 if the bytes at p are not valid UTF-8 (a bad lead byte, a
// missing continuation, an overlong form, a surrogate, above U+10FFFF); the
// caller then skips one byte.
size_t DecodeUtf8(const unsigned char* p, const unsigned char* end,
                  char32_t* cp);
// Appends the UTF-8 form of a valid code point.
void AppendUtf8(char32_t cp, std::string* out);
// True if all of `text` is well-formed UTF-8.
bool IsValidUtf8(std::string_view text);

}  // namespace latentd

#endif  // LATENTD_BASE_UTF8_H_
