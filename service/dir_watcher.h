// DirWatcher: ingests the files dropped into a directory, one document per
// file (doc id = file name; a first line "user: <id>" makes it that user's
// event). Writers should create a file under a name starting with '.' or
// ending in ".tmp" and rename it when complete; such names are skipped.
// Once durable, a file is moved to <dir>/done/. Only regular files directly
// in <dir> are read, never through a symbolic link, and a file larger than
// the service's max_text_bytes (plus 4 KiB for the user line) is refused on
// its size before it is read; those, and a file without words, go to
// <dir>/rejected/ with a warning naming the reason. A crash between the fsync
// and the move is harmless: the record's source "file:<name>" is in the ingest
// log, so the file is only moved, not ingested twice.
//
// New files are seen at once through inotify (a file closed after writing,
// or renamed into the directory); the directory is also rescanned every
// poll_ms, which picks up files that were there before Start(), retries
// ingests that failed, and is all there is where inotify cannot be had
// (logged once).
//
// Thread-safety: Start/Stop from one thread; scanning runs on its own
// thread.
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
  int poll_ms = 5000;  // rescan period (inotify wakes the scan earlier)
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
  // Waits until inotify reports a new file, Stop() is called or poll_ms
  // pass. `inotify_fd` < 0: just the wait.
  void Wait(int inotify_fd);
  DirWatchOptions options_;
  LatentdService* service_;
  Counter* files_;
  Counter* rejected_;
  std::atomic<bool> stop_{false};  // relaxed: a polled flag
  int wake_fd_ = -1;               // eventfd: Stop() wakes Wait()
  std::thread thread_;
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_DIR_WATCHER_H_
