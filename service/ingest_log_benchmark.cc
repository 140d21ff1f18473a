// IngestLog::Append (the records' write and fdatasync, then the mark's
// write and fdatasync) against its floor: the same bytes appended to a plain
// file and fdatasync'ed once, the least any durable acknowledgement costs.
// Workload: one record of 200 ten-letter words an append, into a log under
// $TMPDIR (default /tmp) on the file system the daemon's data directory
// would use. After the table the program prints appends per second of both
// and their ratio.
//
//   build/service/ingest_log_benchmark --benchmark_min_time=2
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/bench/collecting_reporter.h"
#include "service/ingest_log.h"

namespace latentd::service {
namespace {

std::string ScratchPath(const char* name) {
  const char* tmp = std::getenv("TMPDIR");
  return absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/ingest_log_bench_",
                      ::getpid(), "_", name);
}

IngestRecord Document() {
  IngestRecord r;
  for (int i = 0; i < 200; ++i)
    r.words.push_back(absl::StrCat("word", 100000 + i));
  return r;
}

void BM_IngestLogAppend(benchmark::State& state) {
  const std::string path = ScratchPath("log");
  (void)IngestLog::Remove(path);
  std::vector<IngestRecord> existing;
  auto log = IngestLog::Open(path, &existing);
  if (!log.ok()) {
    state.SkipWithError(std::string(log.status().message()).c_str());
    return;
  }
  const IngestRecord doc = Document();
  for (auto _ : state) {
    std::vector<IngestRecord> one = {doc};
    if (!(*log)->Append(&one).ok()) state.SkipWithError("append failed");
  }
  log->reset();
  (void)IngestLog::Remove(path);
}

// The floor: write the same number of bytes at the end, one fdatasync.
void BM_PlainAppendDataSync(benchmark::State& state) {
  const std::string path = ScratchPath("plain");
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    state.SkipWithError("cannot open the scratch file");
    return;
  }
  // The encoded record's size: 12 bytes of header, 8 + 3 * 4 + 4 of fields,
  // 200 words of 4 + 10 bytes.
  const std::string bytes(12 + 24 + 200 * 14, 'x');
  off_t end = 0;
  for (auto _ : state) {
    if (::pwrite(fd, bytes.data(), bytes.size(), end) !=
            static_cast<ssize_t>(bytes.size()) ||
        ::fdatasync(fd) != 0) {
      state.SkipWithError("write failed");
    }
    end += static_cast<off_t>(bytes.size());
  }
  ::close(fd);
  ::unlink(path.c_str());
}

BENCHMARK(BM_IngestLogAppend)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PlainAppendDataSync)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace latentd::service

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  latentd::bench::CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const auto& t = reporter.times();
  auto log = t.find("BM_IngestLogAppend");
  auto plain = t.find("BM_PlainAppendDataSync");
  if (log != t.end() && plain != t.end()) {
    std::printf(
        "\n%-28s %10.0f appends/s\n%-28s %10.0f appends/s\n"
        "IngestLog::Append / floor: %.2fx the time\n",
        "IngestLog::Append", 1e6 / log->second, "write + fdatasync (floor)",
        1e6 / plain->second, log->second / plain->second);
  }
  benchmark::Shutdown();
  return 0;
}
