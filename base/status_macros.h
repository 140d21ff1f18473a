// Status propagation helpers (Debian's Abseil ships no RETURN_IF_ERROR).
#ifndef LATENTD_BASE_STATUS_MACROS_H_
#define LATENTD_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define LATENTD_STATUS_CONCAT_INNER_(a, b) a##b
#define LATENTD_STATUS_CONCAT_(a, b) LATENTD_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define LATENTD_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::absl::Status latentd_status_ = (expr);           \
    if (!latentd_status_.ok()) return latentd_status_; \
  } while (0)

// `lhs = value of expr` (a StatusOr<T>), or returns its error status.
#define LATENTD_ASSIGN_OR_RETURN(lhs, expr) \
  LATENTD_ASSIGN_OR_RETURN_IMPL_(           \
      LATENTD_STATUS_CONCAT_(latentd_statusor_, __LINE__), lhs, expr)
#define LATENTD_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).value()

#endif  // LATENTD_BASE_STATUS_MACROS_H_
