// CollectingReporter: Google Benchmark's console output as usual, plus each
// run's adjusted real and CPU time (in the benchmark's own unit) by name,
// so that a micro-benchmark can print its workloads against their baseline
// after the table. Header-only; for benchmark programs.
//
// Thread-safety: used by the benchmark runner's thread only.
#ifndef LATENTD_BASE_BENCH_COLLECTING_REPORTER_H_
#define LATENTD_BASE_BENCH_COLLECTING_REPORTER_H_

#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

namespace latentd::bench {

class CollectingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.run_type == Run::RT_Iteration && !run.error_occurred) {
        times_[run.benchmark_name()] = run.GetAdjustedRealTime();
        cpu_times_[run.benchmark_name()] = run.GetAdjustedCPUTime();
      }
    }
  }
  // Run name ("BM_X/arg") -> real time per iteration, in the run's unit.
  const std::map<std::string, double>& times() const { return times_; }
  // The same in CPU time: on a shared machine the real time also counts
  // the time other work held the core.
  const std::map<std::string, double>& cpu_times() const { return cpu_times_; }

 private:
  std::map<std::string, double> times_;
  std::map<std::string, double> cpu_times_;
};

// A benchmark program's run: Initialize, the benchmarks registered so far
// into `reporter`, Shutdown. False if an argument was not recognized
// (reported).
inline bool RunBenchmarks(int* argc, char** argv,
                          CollectingReporter* reporter) {
  benchmark::Initialize(argc, argv);
  if (benchmark::ReportUnrecognizedArguments(*argc, argv)) return false;
  benchmark::RunSpecifiedBenchmarks(reporter);
  benchmark::Shutdown();
  return true;
}

}  // namespace latentd::bench

#endif  // LATENTD_BASE_BENCH_COLLECTING_REPORTER_H_
