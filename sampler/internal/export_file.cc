#include "sampler/internal/export_file.h"

#include <zlib.h>

#include "absl/strings/str_cat.h"
#include "base/file_system.h"
#include "base/file_util.h"
#include "base/status_macros.h"

namespace latentd::internal {

struct ExportFile::Impl {
  std::string path;
  std::string tmp;
  std::unique_ptr<WritableFile> file;
  bool gzip = false;
  bool deflating = false;  // deflateInit2 succeeded, deflateEnd owed
  bool done = false;
  z_stream z{};
  std::string out;  // compressed bytes, handed to `file`

  ~Impl() {
    if (deflating) deflateEnd(&z);
  }

  // Runs deflate over z's input with `flush`, appending what it makes.
  absl::Status Deflate(int flush) {
    char buf[1 << 16];
    while (true) {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof(buf);
      const int rc = deflate(&z, flush);
      if (rc == Z_STREAM_ERROR) {
        return absl::InternalError(absl::StrCat(tmp, ": gzip: deflate failed"));
      }
      const size_t made = sizeof(buf) - z.avail_out;
      if (made > 0) {
        LATENTD_RETURN_IF_ERROR(file->Append(std::string_view(buf, made)));
      }
      if (flush == Z_FINISH ? rc == Z_STREAM_END : z.avail_out != 0) {
        return absl::OkStatus();
      }
    }
  }
};

ExportFile::ExportFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ExportFile::~ExportFile() {
  if (impl_ != nullptr && !impl_->done) {
    impl_->file.reset();
    (void)FileSystem::Default()->Remove(impl_->tmp);
  }
}

absl::StatusOr<std::unique_ptr<ExportFile>> ExportFile::Create(
    const std::string& path, bool gzip) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->tmp = path + ".tmp";
  impl->gzip = gzip;
  LATENTD_ASSIGN_OR_RETURN(impl->file, FileSystem::Default()->OpenForWrite(
                                           impl->tmp, WriteMode::kTruncate));
  if (gzip) {
    // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
    if (deflateInit2(&impl->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK) {
      impl->file.reset();
      (void)FileSystem::Default()->Remove(impl->tmp);
      return absl::ResourceExhaustedError(
          absl::StrCat(impl->tmp, ": gzip: cannot start a deflate stream"));
    }
    impl->deflating = true;
  }
  return std::unique_ptr<ExportFile>(new ExportFile(std::move(impl)));
}

absl::Status ExportFile::Append(std::string_view data) {
  if (impl_->done) {
    return absl::FailedPreconditionError(
        absl::StrCat(impl_->path, ": written after Commit"));
  }
  if (!impl_->gzip) return impl_->file->Append(data);
  impl_->z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  impl_->z.avail_in = static_cast<uInt>(data.size());
  return impl_->Deflate(Z_NO_FLUSH);
}

absl::Status ExportFile::Commit() {
  if (impl_->done) {
    return absl::FailedPreconditionError(
        absl::StrCat(impl_->path, ": committed twice"));
  }
  if (impl_->gzip) {
    impl_->z.next_in = nullptr;
    impl_->z.avail_in = 0;
    LATENTD_RETURN_IF_ERROR(impl_->Deflate(Z_FINISH));
  }
  LATENTD_RETURN_IF_ERROR(impl_->file->Sync());
  LATENTD_RETURN_IF_ERROR(impl_->file->Close());
  LATENTD_RETURN_IF_ERROR(RenameDurably(impl_->tmp, impl_->path));
  impl_->done = true;
  return absl::OkStatus();
}

}  // namespace latentd::internal
