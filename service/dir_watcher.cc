#include "service/dir_watcher.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/log.h"

namespace latentd::service {

namespace fs = std::filesystem;

DirWatcher::DirWatcher(const DirWatchOptions& options, LatentdService* service,
                       MetricsRegistry* metrics)
    : options_(options),
      service_(service),
      files_(metrics->AddCounter("latentd_watch_files_total",
                                 "Files ingested from the watched directory")),
      rejected_(metrics->AddCounter("latentd_watch_rejected_total",
                                    "Watched files without words")) {}

DirWatcher::~DirWatcher() { Stop(); }

void DirWatcher::Start() {
  std::error_code ec;
  fs::create_directories(fs::path(options_.dir) / "done", ec);
  fs::create_directories(fs::path(options_.dir) / "rejected", ec);
  thread_ = std::thread([this] { Run(); });
}

void DirWatcher::Stop() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

void DirWatcher::Run() {
  while (!stop_.load(std::memory_order_relaxed)) {
    Poll();
    absl::SleepFor(absl::Milliseconds(options_.poll_ms));
  }
}

void DirWatcher::Poll() {
  std::error_code ec;
  const fs::path dir(options_.dir);
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (stop_.load(std::memory_order_relaxed)) return;
    if (!e.is_regular_file(ec)) continue;
    const std::string name = e.path().filename().string();
    if (absl::StartsWith(name, ".") || absl::EndsWith(name, ".tmp")) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream buf;
    buf << in.rdbuf();
    std::string text = buf.str();
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
      absl::StatusOr<uint64_t> n = service_->IngestRecords(std::move(records));
      if (!n.ok()) {
        log::Warning(
            "latentd watch",
            absl::StrCat(name, ": ", n.status().message(), " (will retry)"));
        return;
      }
      files_->Add();
    }
    fs::rename(e.path(), target, ec);
  }
}

}  // namespace latentd::service
