// GuardExceptions: runs a call into a library that reports errors by
// throwing (hnswlib) and returns what it threw as an absl::Status, so that
// no exception crosses a latentd module boundary:
//   std::bad_alloc, or a message that mentions memory (hnswlib's "Not
//   enough memory: ...") -> kResourceExhausted; any other exception ->
//   kInternal, with `what` and the message.
//
// Thread-safety: a pure function of its arguments.
#ifndef LATENTD_SIMILARITY_INTERNAL_EXCEPTION_GUARD_H_
#define LATENTD_SIMILARITY_INTERNAL_EXCEPTION_GUARD_H_

#include <exception>
#include <new>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace latentd {

template <typename Fn>
absl::Status GuardExceptions(const char* what, Fn&& fn) {
  try {
    fn();
    return absl::OkStatus();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(what, ": out of memory"));
  } catch (const std::exception& e) {
    const std::string message = e.what();
    if (message.find("memory") != std::string::npos) {
      return absl::ResourceExhaustedError(absl::StrCat(what, ": ", message));
    }
    return absl::InternalError(absl::StrCat(what, ": ", message));
  } catch (...) {
    return absl::InternalError(absl::StrCat(what, ": unknown exception"));
  }
}

}  // namespace latentd

#endif  // LATENTD_SIMILARITY_INTERNAL_EXCEPTION_GUARD_H_
