#include "service/dir_watcher.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/file_system.h"
#include "base/file_util.h"
#include "base/log.h"

namespace latentd::service {

namespace fs = std::filesystem;

DirWatcher::DirWatcher(const DirWatchOptions& options, LatentdService* service,
                       MetricsRegistry* metrics)
    : options_(options),
      service_(service),
      files_(metrics->AddCounter("latentd_watch_files_total",
                                 "Files ingested from the watched directory")),
      rejected_(metrics->AddCounter(
          "latentd_watch_rejected_total",
          "Watched files rejected: no words, over max-body-bytes, a "
          "symbolic link or not a regular file")) {}

DirWatcher::~DirWatcher() {
  Stop();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void DirWatcher::Start() {
  std::error_code ec;
  fs::create_directories(fs::path(options_.dir) / "done", ec);
  fs::create_directories(fs::path(options_.dir) / "rejected", ec);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  thread_ = std::thread([this] { Run(); });
}

void DirWatcher::Stop() {
  stop_.store(true, std::memory_order_relaxed);
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
  }
  if (thread_.joinable()) thread_.join();
}

void DirWatcher::Run() {
  // Only complete files: closed after writing, or renamed in.
  int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd >= 0 && ::inotify_add_watch(fd, options_.dir.c_str(),
                                     IN_CLOSE_WRITE | IN_MOVED_TO) < 0) {
    ::close(fd);
    fd = -1;
  }
  if (fd < 0) {
    log::Warning(
        "latentd watch",
        absl::StrCat("no inotify on ", options_.dir, " (", std::strerror(errno),
                     "): rescanning every ", options_.poll_ms, " ms only"));
  }
  while (!stop_.load(std::memory_order_relaxed)) {
    Poll();
    Wait(fd);
  }
  if (fd >= 0) ::close(fd);
}

void DirWatcher::Wait(int inotify_fd) {
  pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {inotify_fd, POLLIN, 0}};
  const int n = ::poll(fds, inotify_fd >= 0 ? 2 : 1, options_.poll_ms);
  if (n > 0 && (fds[1].revents & POLLIN)) {
    // The events only say "look now"; Poll() reads the directory itself.
    alignas(inotify_event) char buf[4096];
    while (::read(inotify_fd, buf, sizeof(buf)) > 0) {
    }
  }
}

namespace {

// What became of one directory entry's bytes.
struct WatchedFile {
  absl::Status status;  // !ok: retry later (the file could not be read)
  std::string reject;   // non-empty: move it to rejected/ for this reason
  std::string text;
};

// Reads the regular file `path` (never through a symbolic link), checking
// its size on the open file before reading: at most `max_bytes`.
WatchedFile ReadWatched(const std::string& path, size_t max_bytes) {
  WatchedFile out;
  const int fd =
      ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) {
      out.reject =
          "a symbolic link (only regular files in the directory "
          "are read)";
    } else {
      out.status = ErrnoError(errno, "cannot open", path);
    }
    return out;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    out.status = ErrnoError(errno, "cannot stat", path);
  } else if (!S_ISREG(st.st_mode)) {
    out.reject = "not a regular file";
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    out.reject = absl::StrCat(st.st_size, " bytes, over the limit of ",
                              max_bytes, " (max-body-bytes)");
  } else {
    out.text.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < out.text.size()) {
      const ssize_t n =
          ::pread(fd, out.text.data() + got, out.text.size() - got, got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        out.status = ErrnoError(errno, "cannot read", path);
        break;
      }
      if (n == 0) break;  // shrunk since fstat: take what is there
      got += static_cast<size_t>(n);
    }
    out.text.resize(got);
  }
  ::close(fd);
  return out;
}

}  // namespace

void DirWatcher::Poll() {
  std::error_code ec;
  const fs::path dir(options_.dir);
  // The text limit, and room for a "user: <id>" line before it.
  const size_t max_bytes = service_->max_text_bytes() + 4096;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (stop_.load(std::memory_order_relaxed)) return;
    const fs::file_type type = e.symlink_status(ec).type();
    if (type == fs::file_type::directory) continue;  // done/, rejected/
    const std::string name = e.path().filename().string();
    if (absl::StartsWith(name, ".") || absl::EndsWith(name, ".tmp")) continue;
    // A file that cannot be read (EIO, say) is neither ingested in part
    // nor rejected: it stays for the next poll.
    WatchedFile read = ReadWatched(e.path().string(), max_bytes);
    if (!read.status.ok()) {
      log::Warning(
          "latentd watch",
          absl::StrCat(name, ": ", read.status.message(), " (will retry)"));
      continue;
    }
    if (!read.reject.empty()) {
      rejected_->Add();
      log::Warning("latentd watch",
                   absl::StrCat(name, " rejected: ", read.reject));
      absl::Status moved = FileSystem::Default()->Rename(
          e.path().string(), (dir / "rejected" / name).string());
      if (!moved.ok()) log::Warning("latentd watch", moved.message());
      continue;
    }
    std::string text = std::move(read.text);
    std::string user;
    if (absl::StartsWith(text, "user:")) {
      const size_t nl = text.find('\n');
      user = std::string(absl::StripAsciiWhitespace(text.substr(
          5, nl == std::string::npos ? std::string::npos : nl - 5)));
      text = nl == std::string::npos ? "" : text.substr(nl + 1);
    }
    absl::StatusOr<std::vector<std::string>> words =
        service_->TokenizeDocument(text);
    fs::path target = dir / "done" / name;
    if (!words.ok()) {
      rejected_->Add();
      log::Warning("latentd watch",
                   absl::StrCat(name, " rejected: ", words.status().message()));
      target = dir / "rejected" / name;
    } else {
      std::vector<IngestRecord> records(1);
      records[0].source = absl::StrCat("file:", name);
      records[0].doc_id = name;
      records[0].user = user;
      records[0].words = std::move(*words);
      if (absl::Status limits = service_->CheckDocumentLimits(records[0]);
          !limits.ok()) {
        rejected_->Add();
        log::Warning("latentd watch",
                     absl::StrCat(name, " rejected: ", limits.message()));
        absl::Status moved = FileSystem::Default()->Rename(
            e.path().string(), (dir / "rejected" / name).string());
        if (!moved.ok()) log::Warning("latentd watch", moved.message());
        continue;
      }
      absl::StatusOr<uint64_t> n = service_->IngestRecords(std::move(records));
      if (!n.ok()) {
        log::Warning(
            "latentd watch",
            absl::StrCat(name, ": ", n.status().message(), " (will retry)"));
        return;
      }
      files_->Add();
    }
    // Ingested (or rejected) already; if the move fails, the next poll
    // finds the file again and its source ("file:NAME") drops the repeat.
    absl::Status moved =
        FileSystem::Default()->Rename(e.path().string(), target.string());
    if (!moved.ok()) log::Warning("latentd watch", moved.message());
  }
}

}  // namespace latentd::service
