#include "corpora/internal/byte_source.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace latentd::internal {
namespace {

constexpr size_t kCompressedBufferBytes = size_t{1} << 18;

class PlainSource : public ByteSource {
 public:
  explicit PlainSource(std::unique_ptr<ReadableFile> file)
      : file_(std::move(file)) {}
  absl::StatusOr<size_t> Read(char* buf, size_t n) override {
    return file_->Read(buf, n);
  }

 private:
  std::unique_ptr<ReadableFile> file_;
};

// Refills `in` from `file`; returns the number of bytes now available.
absl::StatusOr<size_t> Refill(ReadableFile& file, std::vector<char>& in) {
  return file.Read(in.data(), in.size());
}

class ZstdSource : public ByteSource {
 public:
  ZstdSource(std::unique_ptr<ReadableFile> file, ZSTD_DCtx* ctx)
      : file_(std::move(file)), ctx_(ctx), in_(kCompressedBufferBytes) {}
  ~ZstdSource() override { ZSTD_freeDCtx(ctx_); }

  absl::StatusOr<size_t> Read(char* buf, size_t n) override {
    ZSTD_outBuffer out{buf, n, 0};
    while (out.pos == 0) {
      if (pos_ == avail_) {
        LATENTD_ASSIGN_OR_RETURN(avail_, Refill(*file_, in_));
        pos_ = 0;
        if (avail_ == 0) {
          if (frame_open_) {
            return absl::DataLossError(absl::StrCat(
                file_->path(), ": truncated zstd stream (ends mid-frame)"));
          }
          return size_t{0};
        }
      }
      ZSTD_inBuffer in{in_.data(), avail_, pos_};
      size_t ret = ZSTD_decompressStream(ctx_, &out, &in);
      pos_ = in.pos;
      if (ZSTD_isError(ret)) {
        return absl::DataLossError(absl::StrCat(
            file_->path(), ": corrupt zstd stream: ", ZSTD_getErrorName(ret)));
      }
      frame_open_ = ret != 0;
    }
    return out.pos;
  }

 private:
  std::unique_ptr<ReadableFile> file_;
  ZSTD_DCtx* ctx_;
  std::vector<char> in_;
  size_t pos_ = 0, avail_ = 0;
  bool frame_open_ = false;
};

class GzipSource : public ByteSource {
 public:
  explicit GzipSource(std::unique_ptr<ReadableFile> file)
      : file_(std::move(file)), in_(kCompressedBufferBytes) {
    std::memset(&z_, 0, sizeof(z_));
  }
  ~GzipSource() override {
    if (initialized_) inflateEnd(&z_);
  }
  absl::Status Init() {
    // 15 + 32: maximum window, accept gzip or zlib headers.
    if (inflateInit2(&z_, 15 + 32) != Z_OK) {
      return absl::ResourceExhaustedError(
          absl::StrCat(file_->path(), ": cannot initialise zlib"));
    }
    initialized_ = true;
    return absl::OkStatus();
  }

  absl::StatusOr<size_t> Read(char* buf, size_t n) override {
    z_.next_out = reinterpret_cast<Bytef*>(buf);
    z_.avail_out = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    while (z_.next_out == reinterpret_cast<Bytef*>(buf)) {
      if (z_.avail_in == 0) {
        LATENTD_ASSIGN_OR_RETURN(size_t got, Refill(*file_, in_));
        if (got == 0) {
          if (member_open_) {
            return absl::DataLossError(absl::StrCat(
                file_->path(), ": truncated gzip stream (ends mid-member)"));
          }
          return size_t{0};
        }
        z_.next_in = reinterpret_cast<Bytef*>(in_.data());
        z_.avail_in = static_cast<uInt>(got);
      }
      member_open_ = true;
      int ret = inflate(&z_, Z_NO_FLUSH);
      if (ret == Z_STREAM_END) {
        // Concatenated members are legal gzip: start the next one.
        member_open_ = false;
        if (inflateReset(&z_) != Z_OK) return Corrupt("reset failed");
      } else if (ret != Z_OK && ret != Z_BUF_ERROR) {
        return Corrupt(z_.msg != nullptr ? z_.msg : "inflate failed");
      }
    }
    return static_cast<size_t>(z_.next_out - reinterpret_cast<Bytef*>(buf));
  }

 private:
  absl::Status Corrupt(const char* what) {
    return absl::DataLossError(
        absl::StrCat(file_->path(), ": corrupt gzip stream: ", what));
  }

  std::unique_ptr<ReadableFile> file_;
  std::vector<char> in_;
  z_stream z_;
  bool initialized_ = false;
  bool member_open_ = false;
};

}  // namespace

std::unique_ptr<ByteSource> NewPlainSource(std::unique_ptr<ReadableFile> file) {
  return std::make_unique<PlainSource>(std::move(file));
}

absl::StatusOr<std::unique_ptr<ByteSource>> NewZstdSource(
    std::unique_ptr<ReadableFile> file) {
  ZSTD_DCtx* ctx = ZSTD_createDCtx();
  if (ctx == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat(file->path(), ": cannot create zstd context"));
  }
  return std::make_unique<ZstdSource>(std::move(file), ctx);
}

absl::StatusOr<std::unique_ptr<ByteSource>> NewGzipSource(
    std::unique_ptr<ReadableFile> file) {
  auto source = std::make_unique<GzipSource>(std::move(file));
  LATENTD_RETURN_IF_ERROR(source->Init());
  return source;
}

}  // namespace latentd::internal
