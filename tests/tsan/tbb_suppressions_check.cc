// Checks ops/tsan.supp (run by ops/tsan.sh, TSan builds only). Debian's
// oneTBB is not instrumented, so the suppressions hide what its inlined
// templates do on their own objects (a token's hand-off between stages,
// parallel_reduce's task tree). They must hide nothing else:
//
//   tbb_suppressions_check           a pipeline (serial read, two parallel
//                                    stages, a serial stage) and a
//                                    parallel_reduce, their hand-offs
//                                    annotated as latentd's are: no report;
//   tbb_suppressions_check pipeline  a parallel stage also increments a
//                                    plain counter: reported;
//   tbb_suppressions_check reduce    a reduce body also increments a plain
//                                    counter: reported.
//
// Each runs on a two-thread arena with many small items, so that both
// threads run the stages.
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "base/tsan.h"
#include "oneapi/tbb/blocked_range.h"
#include "oneapi/tbb/parallel_pipeline.h"
#include "oneapi/tbb/parallel_reduce.h"
#include "oneapi/tbb/task_arena.h"

namespace {

constexpr int kItems = 4000;

struct Item {
  int value = 0;
  std::vector<int> work;
};
// A plain pointer between the stages, as latentd's sweep pipeline passes
// (sampler/sweep_pipeline.cc): oneTBB hands it over as is.
using ItemPtr = Item*;

int racy = 0;  // written without ordering in the racing modes

// Spends a little time so that items overlap on the two threads.
int Spin(int seed) {
  volatile unsigned x = static_cast<unsigned>(seed);
  for (int i = 0; i < 2000; ++i) x = x * 1103515245u + 12345u;
  return static_cast<int>(x & 0xff);
}

long Pipeline(bool race) {
  const char start = 0, done = 0;
  int next = 0;
  long sum = 0;
  std::vector<std::unique_ptr<Item>> items;  // made by the serial read
  auto read = [&](tbb::flow_control& fc) -> ItemPtr {
    latentd::tsan::Acquire(&start);
    Item* item = nullptr;
    if (next == kItems) {
      fc.stop();
    } else {
      item = items.emplace_back(std::make_unique<Item>()).get();
      item->value = next++;
      latentd::tsan::Release(item);
    }
    latentd::tsan::Release(&start);
    return item;
  };
  auto square = [&](ItemPtr item) -> ItemPtr {
    latentd::tsan::Acquire(item);
    item->work.assign(4, Spin(item->value));
    if (race) ++racy;
    latentd::tsan::Release(item);
    return item;
  };
  auto halve = [&](ItemPtr item) -> ItemPtr {
    latentd::tsan::Acquire(item);
    item->value += item->work[0] & 1;
    latentd::tsan::Release(item);
    return item;
  };
  auto total = [&](ItemPtr item) {
    latentd::tsan::Acquire(&done);
    latentd::tsan::Acquire(item);
    sum += item->value;
    latentd::tsan::Release(&done);
  };
  latentd::tsan::Release(&start);
  tbb::parallel_pipeline(8, tbb::make_filter<void, ItemPtr>(
                                tbb::filter_mode::serial_in_order, read) &
                                tbb::make_filter<ItemPtr, ItemPtr>(
                                    tbb::filter_mode::parallel, square) &
                                tbb::make_filter<ItemPtr, ItemPtr>(
                                    tbb::filter_mode::parallel, halve) &
                                tbb::make_filter<ItemPtr, void>(
                                    tbb::filter_mode::serial_in_order, total));
  // Every item went through `total`; the last read saw the end.
  latentd::tsan::Acquire(&done);
  latentd::tsan::Acquire(&start);
  return sum;
}

double Reduce(bool race, const std::vector<double>& values) {
  const char before = 0, after = 0;
  latentd::tsan::Release(&before);
  const double sum = tbb::parallel_reduce(
      tbb::blocked_range<size_t>(0, values.size(), 16), 0.0,
      [&](const tbb::blocked_range<size_t>& r, double s) {
        latentd::tsan::Acquire(&before);
        for (size_t i = r.begin(); i < r.end(); ++i) {
          s += values[i] + 0 * Spin(static_cast<int>(i));
        }
        if (race) ++racy;
        latentd::tsan::Release(&after);
        return s;
      },
      [](double a, double b) { return a + b; });
  latentd::tsan::Acquire(&after);
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  const bool race_pipeline = std::strcmp(mode, "pipeline") == 0;
  const bool race_reduce = std::strcmp(mode, "reduce") == 0;
  tbb::task_arena arena(2);
  long piped = 0;
  double reduced = 0;
  const std::vector<double> values(kItems, 0.5);
  arena.execute([&] {
    for (int round = 0; round < 3; ++round) {
      piped = Pipeline(race_pipeline);
      reduced = Reduce(race_reduce, values);
    }
  });
  std::printf("pipeline %ld, reduce %.1f\n", piped, reduced);
  const long want = static_cast<long>(kItems) * (kItems - 1) / 2;
  return piped >= want && reduced == kItems * 0.5 ? 0 : 1;
}
