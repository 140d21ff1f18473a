// Strict UTF-8 validation, as proto3 applies to `string` fields.
#ifndef LATENTD_HASHRING_INTERNAL_UTF8_H_
#define LATENTD_HASHRING_INTERNAL_UTF8_H_

#include <string_view>

namespace latentd::hashring::internal {

// True if `text` is well-formed UTF-8: no overlong forms, no surrogates
// (U+D800..U+DFFF), nothing above U+10FFFF, no truncated sequence.
bool IsValidUtf8(std::string_view text);

}  // namespace latentd::hashring::internal

#endif  // LATENTD_HASHRING_INTERNAL_UTF8_H_
