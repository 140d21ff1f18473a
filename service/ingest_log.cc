#include "service/ingest_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "corpora/posix_file.h"
#include "xxhash.h"

namespace latentd::service {
namespace {

constexpr size_t kHeaderBytes = 12;              // u32 length + u64 hash
constexpr uint32_t kMaxRecordBytes = 64u << 20;  // sanity bound

void PutU32(std::string* out, uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);
  out->append(b, 4);
}
void PutU64(std::string* out, uint64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);
  out->append(b, 8);
}
void PutString(std::string* out, std::string_view s) {
  PutU32(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}

// Reads little-endian fields from a payload, failing on overrun.
class Cursor {
 public:
  explicit Cursor(std::string_view data) : data_(data) {}
  bool U32(uint32_t* v) { return Raw(v, 4); }
  bool U64(uint64_t* v) { return Raw(v, 8); }
  bool String(std::string* s) {
    uint32_t n;
    if (!U32(&n) || n > data_.size() - pos_) return false;
    s->assign(data_.substr(pos_, n));
    pos_ += n;
    return true;
  }
  bool done() const { return pos_ == data_.size(); }

 private:
  bool Raw(void* v, size_t n) {
    if (data_.size() - pos_ < n) return false;
    std::memcpy(v, data_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  std::string_view data_;
  size_t pos_ = 0;
};

std::string Encode(const IngestRecord& r) {
  std::string payload;
  PutU64(&payload, r.sequence);
  PutString(&payload, r.source);
  PutString(&payload, r.doc_id);
  PutString(&payload, r.user);
  PutU32(&payload, static_cast<uint32_t>(r.words.size()));
  for (const std::string& w : r.words) PutString(&payload, w);
  std::string out;
  PutU32(&out, static_cast<uint32_t>(payload.size()));
  PutU64(&out, XXH64(payload.data(), payload.size(), 0));
  out += payload;
  return out;
}

bool Decode(std::string_view payload, IngestRecord* r) {
  Cursor c(payload);
  uint32_t n = 0;
  if (!c.U64(&r->sequence) || !c.String(&r->source) || !c.String(&r->doc_id) ||
      !c.String(&r->user) || !c.U32(&n)) {
    return false;
  }
  if (n > payload.size()) return false;
  r->words.resize(n);
  for (std::string& w : r->words) {
    if (!c.String(&w) || w.empty()) return false;
  }
  return c.done();
}

absl::StatusOr<std::string> ReadAll(int fd, const std::string& path) {
  std::string data;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ::latentd::internal::ErrnoError(errno, "read", path);
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  return data;
}

}  // namespace

IngestLog::IngestLog(std::string path, int fd, uint64_t size,
                     uint64_t last_sequence)
    : path_(std::move(path)),
      fd_(fd),
      size_(size),
      last_sequence_(last_sequence) {}

IngestLog::~IngestLog() {
  absl::MutexLock lock(&mu_);
  if (fd_ >= 0) ::close(fd_);
}

absl::StatusOr<std::unique_ptr<IngestLog>> IngestLog::Open(
    const std::string& path, std::vector<IngestRecord>* records) {
  records->clear();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return ::latentd::internal::ErrnoError(errno, "open ingest log", path);
  absl::StatusOr<std::string> data = ReadAll(fd, path);
  if (!data.ok()) {
    ::close(fd);
    return data.status();
  }
  const std::string_view all(*data);
  size_t pos = 0;
  uint64_t last = 0;
  while (all.size() - pos >= kHeaderBytes) {
    uint32_t len;
    uint64_t hash;
    std::memcpy(&len, all.data() + pos, 4);
    std::memcpy(&hash, all.data() + pos + 4, 8);
    const bool complete =
        len <= kMaxRecordBytes && all.size() - pos - kHeaderBytes >= len;
    if (!complete) break;  // torn tail
    const std::string_view payload = all.substr(pos + kHeaderBytes, len);
    IngestRecord r;
    const bool intact =
        XXH64(payload.data(), payload.size(), 0) == hash && Decode(payload, &r);
    if (!intact || r.sequence <= last) {
      if (pos + kHeaderBytes + len == all.size()) break;  // damaged last one
      ::close(fd);
      return absl::DataLossError(
          absl::StrCat("ingest log ", path, ": damaged record at byte ", pos,
                       " (", all.size(), " bytes in the file)"));
    }
    last = r.sequence;
    records->push_back(std::move(r));
    pos += kHeaderBytes + len;
  }
  if (pos != all.size()) {
    // Never acknowledged: the append did not finish.
    if (::ftruncate(fd, static_cast<off_t>(pos)) != 0 || ::fsync(fd) != 0) {
      const int e = errno;
      ::close(fd);
      return ::latentd::internal::ErrnoError(e, "truncate torn ingest log tail",
                                             path);
    }
  }
  if (::lseek(fd, static_cast<off_t>(pos), SEEK_SET) < 0) {
    const int e = errno;
    ::close(fd);
    return ::latentd::internal::ErrnoError(e, "seek", path);
  }
  absl::Status synced = ::latentd::internal::SyncDirectoryOf(path);
  if (!synced.ok()) {
    ::close(fd);
    return synced;
  }
  return std::unique_ptr<IngestLog>(new IngestLog(path, fd, pos, last));
}

absl::Status IngestLog::Append(std::vector<IngestRecord>* records) {
  absl::MutexLock lock(&mu_);
  std::string data;
  uint64_t seq = last_sequence_;
  for (IngestRecord& r : *records) {
    r.sequence = ++seq;
    data += Encode(r);
  }
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::pwrite(fd_, data.data() + done, data.size() - done,
                         static_cast<off_t>(size_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      (void)::ftruncate(fd_, static_cast<off_t>(size_));
      return absl::UnavailableError(absl::StrCat(
          "ingest log ", path_, ": write failed: ", std::strerror(e)));
    }
    done += static_cast<size_t>(n);
  }
  if (::fdatasync(fd_) != 0) {
    const int e = errno;
    (void)::ftruncate(fd_, static_cast<off_t>(size_));
    return absl::UnavailableError(absl::StrCat(
        "ingest log ", path_, ": fdatasync failed: ", std::strerror(e)));
  }
  size_ += data.size();
  last_sequence_ = seq;
  return absl::OkStatus();
}

uint64_t IngestLog::size_bytes() const {
  absl::MutexLock lock(&mu_);
  return size_;
}

absl::Status IngestLog::Compact(uint64_t merged_through, size_t keep_sources) {
  absl::MutexLock lock(&mu_);
  if (::lseek(fd_, 0, SEEK_SET) < 0) {
    return ::latentd::internal::ErrnoError(errno, "seek", path_);
  }
  absl::StatusOr<std::string> data = ReadAll(fd_, path_);
  if (!data.ok()) return data.status();
  std::vector<IngestRecord> records;
  const std::string_view all(*data);
  for (size_t pos = 0; pos + kHeaderBytes <= all.size();) {
    uint32_t len;
    std::memcpy(&len, all.data() + pos, 4);
    IngestRecord& r = records.emplace_back();
    if (len > all.size() - pos - kHeaderBytes ||
        !Decode(all.substr(pos + kHeaderBytes, len), &r)) {
      return absl::DataLossError(
          absl::StrCat("ingest log ", path_, ": damaged record at byte ", pos));
    }
    pos += kHeaderBytes + len;
  }
  // Which merged records keep a tombstone: the last one, and the
  // keep_sources most recent ones with a source.
  std::vector<bool> keep(records.size(), false);
  size_t sourced = 0;
  for (size_t i = records.size(); i-- > 0;) {
    if (records[i].sequence > merged_through || i + 1 == records.size()) {
      keep[i] = true;
    } else if (!records[i].source.empty() && sourced < keep_sources) {
      keep[i] = true;
      ++sourced;
    }
  }
  std::string out;
  for (size_t i = 0; i < records.size(); ++i) {
    if (!keep[i]) continue;
    if (records[i].sequence <= merged_through) records[i].words.clear();
    out += Encode(records[i]);
  }
  LATENTD_RETURN_IF_ERROR(::latentd::internal::WriteFileAtomically(path_, out));
  const int fd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return ::latentd::internal::ErrnoError(errno, "reopen", path_);
  ::close(fd_);
  fd_ = fd;
  size_ = out.size();
  return absl::OkStatus();
}

uint64_t IngestLog::last_sequence() const {
  absl::MutexLock lock(&mu_);
  return last_sequence_;
}

}  // namespace latentd::service
