// Debian's Abseil is built with its own absl::string_view (not an alias of
// std::string_view): these convert at the boundary. Pure functions.
#ifndef LATENTD_BASE_ABSL_COMPAT_H_
#define LATENTD_BASE_ABSL_COMPAT_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace latentd::internal {

inline absl::string_view ToAbsl(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}
inline std::string_view ToStd(absl::string_view s) {
  return std::string_view(s.data(), s.size());
}

}  // namespace latentd::internal

#endif  // LATENTD_BASE_ABSL_COMPAT_H_
