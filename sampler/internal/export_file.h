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
#include <utility>

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

// An ExportFile written through a text buffer: append to buf(), call
// MaybeFlush() now and then (it hands the buffer to the file once it holds
// a megabyte, so memory stays bounded whatever the export's size), and
// Commit() at the end. Errors are ExportFile's.
class BufferedExportFile {
 public:
  static absl::StatusOr<BufferedExportFile> Open(const std::string& path,
                                                 bool gzip = false) {
    absl::StatusOr<std::unique_ptr<ExportFile>> f =
        ExportFile::Create(path, gzip);
    if (!f.ok()) return f.status();
    return BufferedExportFile(*std::move(f));
  }
  std::string& buf() { return buf_; }
  absl::Status MaybeFlush() {
    if (buf_.size() < (size_t{1} << 20)) return absl::OkStatus();
    absl::Status s = file_->Append(buf_);
    buf_.clear();
    return s;
  }
  absl::Status Commit() {
    absl::Status s = file_->Append(buf_);
    buf_.clear();
    return s.ok() ? file_->Commit() : s;
  }

 private:
  explicit BufferedExportFile(std::unique_ptr<ExportFile> f)
      : file_(std::move(f)) {}
  std::unique_ptr<ExportFile> file_;
  std::string buf_;
};

}  // namespace latentd::internal

#endif  // LATENTD_SAMPLER_INTERNAL_EXPORT_FILE_H_
