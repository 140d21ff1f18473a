// DirWatcher: ingests the files dropped into a directory, one document per
// file (doc id = file name; a first line "user: <id>" makes it that user's
// event). Writers should create a file under a name starting with '.' or
// ending in ".tmp" and rename it when complete; such names are skipped.
// Once durable, a file is moved to <dir>/done/; a file without words goes to
// <dir>/rejected/. A crash between the fsync and the move is harmless: the
// record's source "file:<name>" is in the ingest log, so the file is only
// moved, not ingested twice.
//
// Thread-safety: Start/Stop from one thread; polling runs on its own thread.
#ifndef LATENTD_SERVICE_DIR_WATCHER_H_
#define LATENTD_SERVICE_DIR_WATCHER_H_

#include <atomic>
#include <string>
#include <thread>

#include "service/latentd_service.h"
#include "service/metrics.h"

namespace latentd::service {

struct DirWatchOptions {
  std::string dir;
  int poll_ms = 500;
};

class DirWatcher {
 public:
  DirWatcher(const DirWatchOptions& options, LatentdService* service,
             MetricsRegistry* metrics);
  ~DirWatcher();  // Stop()
  void Start();
  void Stop();

 private:
  void Run();
  void Poll();
  DirWatchOptions options_;
  LatentdService* service_;
  Counter* files_;
  Counter* rejected_;
  std::atomic<bool> stop_{false};  // relaxed: a polled flag
  std::thread thread_;
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_DIR_WATCHER_H_
