// libFuzzer harness: the edge-list parser (corpora/edge_list.h), directed
// and undirected, strict and skipping. What it accepts keeps its rules: no
// self-loop, a positive finite weight, src <= dst when undirected, and the
// counts add up.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "corpora/edge_list.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace latentd;
  if (size < 1) return 0;
  EdgeListOptions o;
  o.undirected = (data[0] & 1) != 0;
  o.skip_malformed = (data[0] & 2) != 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1,
                              size - 1);
  absl::StatusOr<EdgeList> list = ParseEdgeList(text, "edges", o);
  if (!list.ok()) {
    LATENTD_FUZZ_CHECK(!o.skip_malformed);
    return 0;
  }
  LATENTD_FUZZ_CHECK(list->edges.size() == list->stats.edges);
  for (const Edge& e : list->edges) {
    LATENTD_FUZZ_CHECK(e.src != e.dst);
    LATENTD_FUZZ_CHECK(std::isfinite(e.weight) && e.weight > 0);
    if (o.undirected) LATENTD_FUZZ_CHECK(e.src < e.dst);
  }
  (void)list->stats.Summary();
  return 0;
}
