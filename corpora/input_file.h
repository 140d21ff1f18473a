// InputFile: sequential reading of a corpus file by lines or bytes, with
// transparent decompression by file name: "*.zst" (zstd) and "*.gz" (gzip
// or zlib) are decompressed on the fly, anything else is read as is.
//
// Errors: a missing or unreadable file is the errno's status (kNotFound,
// kPermissionDenied, ...); a truncated or corrupt compressed stream is
// kDataLoss; each message names the file.
//
// Thread-safety: not thread-safe; one thread at a time per InputFile.
#ifndef LATENTD_CORPORA_INPUT_FILE_H_
#define LATENTD_CORPORA_INPUT_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace latentd {

namespace internal {
class ByteSource;
}  // namespace internal

class InputFile {
 public:
  // Longest line (or whole file for ReadWholeFile) accepted, in bytes:
  // guards against a binary or runaway file exhausting memory.
  static constexpr size_t kMaxLineBytes = size_t{1} << 30;

  // Opens `path`; the result owns the file descriptor.
  static absl::StatusOr<std::unique_ptr<InputFile>> Open(
      const std::string& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // Reads the next line into *line, without its "\n" (a "\r" before it is
  // dropped too). A last line without a newline is returned as a line.
  // Returns false (and clears *line) at the end of the file.
  // A line over kMaxLineBytes is kResourceExhausted.
  absl::StatusOr<bool> ReadLine(std::string* line);
  // Reads up to n bytes (of decompressed data) into buf; returns fewer only
  // at the end (0 = end). Do not mix with ReadLine on one file.
  absl::StatusOr<size_t> Read(char* buf, size_t n);

  const std::string& path() const { return path_; }
  // 1-based number of the line last returned by ReadLine (0 before).
  uint64_t line_number() const { return line_number_; }

 private:
  InputFile(std::string path, std::unique_ptr<internal::ByteSource> source);
  absl::Status FillBuffer();

  std::string path_;
  std::unique_ptr<internal::ByteSource> source_;
  std::unique_ptr<char[]> buf_;
  size_t pos_ = 0, end_ = 0;
  bool eof_ = false;
  uint64_t line_number_ = 0;
};

// The whole (decompressed) content of `path`. Errors as InputFile; a file
// over InputFile::kMaxLineBytes is kResourceExhausted.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

// True if `path` names a compressed file InputFile decompresses.
bool IsCompressedPath(const std::string& path);

}  // namespace latentd

#endif  // LATENTD_CORPORA_INPUT_FILE_H_
