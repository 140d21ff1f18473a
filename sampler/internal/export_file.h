// ExportFile: a file written front to back and made visible only when
// complete — streamed into "<path>.tmp", fsynced, renamed over `path` —
// optionally gzip-compressed on the way (RFC 1952, zlib). For exports too
// big to build in one string (a dense K×V matrix, a token-per-line state).
//
// Thread-safety: one owner; not thread-safe.
#ifndef LATENTD_SAMPLER_INTERNAL_EXPORT_FILE_H_
#define LATENTD_SAMPLER_INTERNAL_EXPORT_FILE_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace latentd::internal {

class ExportFile {
 public:
  // Creates "<path>.tmp" (replacing one left by a failed run). Fails naming
  // the path if it cannot be created.
  static absl::StatusOr<std::unique_ptr<ExportFile>> Create(
      const std::string& path, bool gzip);
  // Without Commit(), removes the temporary file; `path` stays as it was.
  ~ExportFile();
  ExportFile(const ExportFile&) = delete;
  ExportFile& operator=(const ExportFile&) = delete;

  // Appends `data` (compressed if gzip). Errors name the path.
  absl::Status Append(std::string_view data);
  // Ends the gzip stream, fsyncs, renames over `path`. The object is spent
  // afterwards (Append fails).
  absl::Status Commit();

 private:
  struct Impl;
  explicit ExportFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace latentd::internal

#endif  // LATENTD_SAMPLER_INTERNAL_EXPORT_FILE_H_
