// Byte sources behind InputFile: a plain file, or a zstd / gzip stream
// decompressed on the fly. Not thread-safe: one owner.
#ifndef LATENTD_CORPORA_INTERNAL_BYTE_SOURCE_H_
#define LATENTD_CORPORA_INTERNAL_BYTE_SOURCE_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "base/file_system.h"

namespace latentd::internal {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to n > 0 bytes into buf; returns 0 only at the end of the data.
  // A damaged or truncated compressed stream is kDataLoss naming the file.
  virtual absl::StatusOr<size_t> Read(char* buf, size_t n) = 0;
};

// Takes ownership of `file`.
std::unique_ptr<ByteSource> NewPlainSource(std::unique_ptr<ReadableFile> file);
absl::StatusOr<std::unique_ptr<ByteSource>> NewZstdSource(
    std::unique_ptr<ReadableFile> file);
absl::StatusOr<std::unique_ptr<ByteSource>> NewGzipSource(
    std::unique_ptr<ReadableFile> file);

}  // namespace latentd::internal

#endif  // LATENTD_CORPORA_INTERNAL_BYTE_SOURCE_H_
