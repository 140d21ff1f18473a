#include "corpora/input_file.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/file_system.h"
#include "base/status_macros.h"
#include "corpora/internal/byte_source.h"

namespace latentd {
namespace {

constexpr size_t kReadBufferBytes = size_t{1} << 20;

}  // namespace

bool IsCompressedPath(const std::string& path) {
  return absl::EndsWith(path, ".zst") || absl::EndsWith(path, ".gz");
}

InputFile::InputFile(std::string path,
                     std::unique_ptr<internal::ByteSource> source)
    : path_(std::move(path)), source_(std::move(source)) {}

InputFile::~InputFile() = default;

absl::StatusOr<std::unique_ptr<InputFile>> InputFile::Open(
    const std::string& path) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file,
                           FileSystem::Default()->OpenForRead(path));
  std::unique_ptr<internal::ByteSource> source;
  if (absl::EndsWith(path, ".zst")) {
    LATENTD_ASSIGN_OR_RETURN(source, internal::NewZstdSource(std::move(file)));
  } else if (absl::EndsWith(path, ".gz")) {
    LATENTD_ASSIGN_OR_RETURN(source, internal::NewGzipSource(std::move(file)));
  } else {
    source = internal::NewPlainSource(std::move(file));
  }
  return std::unique_ptr<InputFile>(new InputFile(path, std::move(source)));
}

absl::Status InputFile::FillBuffer() {
  // Allocated on first use: ReadWholeFile (one call per file of a "dir"
  // corpus) never needs it.
  if (buf_ == nullptr) buf_.reset(new char[kReadBufferBytes]);
  pos_ = 0;
  end_ = 0;
  LATENTD_ASSIGN_OR_RETURN(end_, source_->Read(buf_.get(), kReadBufferBytes));
  if (end_ == 0) eof_ = true;
  return absl::OkStatus();
}

absl::StatusOr<bool> InputFile::ReadLine(std::string* line) {
  line->clear();
  bool got_any = false;
  while (true) {
    if (pos_ == end_) {
      if (eof_) break;
      LATENTD_RETURN_IF_ERROR(FillBuffer());
      if (eof_) break;
    }
    const char* start = buf_.get() + pos_;
    const void* nl = std::memchr(start, '\n', end_ - pos_);
    size_t take = nl ? static_cast<const char*>(nl) - start : end_ - pos_;
    if (line->size() + take > kMaxLineBytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat(path_, ":", line_number_ + 1, ": line longer than ",
                       kMaxLineBytes, " bytes"));
    }
    line->append(start, take);
    got_any = true;
    pos_ += take;
    if (nl != nullptr) {
      ++pos_;
      break;
    }
  }
  if (!got_any) return false;
  if (!line->empty() && line->back() == '\r') line->pop_back();
  ++line_number_;
  return true;
}

absl::StatusOr<size_t> InputFile::Read(char* buf, size_t n) {
  size_t done = 0;
  if (pos_ < end_) {
    done = std::min(n, end_ - pos_);
    std::memcpy(buf, buf_.get() + pos_, done);
    pos_ += done;
  }
  while (done < n && !eof_) {
    LATENTD_ASSIGN_OR_RETURN(size_t got, source_->Read(buf + done, n - done));
    if (got == 0) eof_ = true;
    done += got;
  }
  return done;
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<InputFile> file,
                           InputFile::Open(path));
  std::string contents;
  size_t chunk = size_t{64} << 10;  // doubles up to kMaxChunk
  constexpr size_t kMaxChunk = size_t{16} << 20;
  while (true) {
    size_t old = contents.size();
    if (old >= InputFile::kMaxLineBytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          path, ": file larger than ", InputFile::kMaxLineBytes, " bytes"));
    }
    contents.resize(old + chunk);
    LATENTD_ASSIGN_OR_RETURN(size_t got,
                             file->Read(contents.data() + old, chunk));
    contents.resize(old + got);
    if (got < chunk) break;
    chunk = std::min(chunk * 2, kMaxChunk);
  }
  return contents;
}

}  // namespace latentd
