// Edge-list reader: SNAP text with comments, weights, self-loops and
// duplicates, compressed files, malformed lines, and the real SNAP graphs
// under $LATENTD_DATA_DIR against the counts in their SOURCE.md.
#include "corpora/edge_list.h"

#include <string>

#include "gtest/gtest.h"
#include "tests/corpora/compress_util.h"
#include "tests/corpora/test_util.h"
#include "tests/data_dir.h"

namespace latentd {
namespace {

using testing::TempDir;
using testing::WriteFile;

TEST(EdgeList, ParsesSnapTextWithCommentsWeightsLoopsAndDuplicates) {
  const std::string text =
      "# Directed graph: test\r\n"
      "  # indented comment\n"
      "1\t2\r\n"
      "2 1\n"  // the same undirected edge
      "\n"
      "3   3\n"  // self-loop
      "18446744073709551615 0 2.5\n"
      "5 4 0.25\n"
      "4 5 7\n";  // duplicate: keeps the first weight
  absl::StatusOr<EdgeList> list = ParseEdgeList(text, "mem");
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->edges.size(), 3u);
  EXPECT_EQ(list->edges[0], (Edge{1, 2, 1.0f}));
  EXPECT_EQ(list->edges[1], (Edge{0, 18446744073709551615ULL, 2.5f}));
  EXPECT_EQ(list->edges[2], (Edge{4, 5, 0.25f}));
  const EdgeListStats& s = list->stats;
  EXPECT_EQ(s.lines, 9u);
  EXPECT_EQ(s.comment_lines, 2u);
  EXPECT_EQ(s.edges, 3u);
  EXPECT_EQ(s.self_loops, 1u);
  EXPECT_EQ(s.duplicates, 2u);
  EXPECT_EQ(s.malformed, 0u);
  EXPECT_TRUE(s.weighted);
  EXPECT_EQ(s.Summary(),
            "6 edge lines: 3 edges kept, 1 self-loops and 2 duplicates "
            "dropped, 0 malformed");
}

TEST(EdgeList, DirectedKeepsBothDirections) {
  EdgeListOptions options;
  options.undirected = false;
  absl::StatusOr<EdgeList> list =
      ParseEdgeList("2 1\n1 2\n2 1\n", "mem", options);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->edges.size(), 2u);
  EXPECT_EQ(list->edges[0], (Edge{2, 1, 1.0f}));
  EXPECT_EQ(list->edges[1], (Edge{1, 2, 1.0f}));
  EXPECT_EQ(list->stats.duplicates, 1u);
  EXPECT_FALSE(list->stats.weighted);
}

TEST(EdgeList, MalformedLinesNameFileLineAndWhat) {
  struct Case {
    std::string line;
    std::string what;
  };
  const Case cases[] = {
      {"7", "expected 'FromId ToId [weight]', got 1 field"},
      {"1 2 3 4", "got 4 fields"},
      {"a 2", "from id 'a' is not an unsigned 64-bit decimal number"},
      {"1 -2", "to id '-2' is not"},
      {"18446744073709551616 1", "from id '18446744073709551616' is not"},
      {"1 0x10", "to id '0x10' is not"},
      {"1 2 0", "weight '0' is not a finite number > 0"},
      {"1 2 -1", "weight '-1'"},
      {"1 2 nan", "weight 'nan'"},
      {"1 2 inf", "weight 'inf'"},
      {"1 2 1e400", "weight '1e400'"},
      {"1 2 1e-50", "weight '1e-50' is not a finite number > 0"},
      {"1 2 heavy", "weight 'heavy'"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<EdgeList> list =
        ParseEdgeList("# header\n1 2\n" + c.line + "\n3 4\n", "g.txt");
    ASSERT_FALSE(list.ok()) << c.line;
    EXPECT_EQ(list.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(list.status().message().find("g.txt:3: "), std::string::npos)
        << list.status();
    EXPECT_NE(list.status().message().find(c.what), std::string::npos)
        << c.line << " -> " << list.status();
  }
}

TEST(EdgeList, SkipMalformedCountsAndKeepsTheRest) {
  EdgeListOptions options;
  options.skip_malformed = true;
  absl::StatusOr<EdgeList> list =
      ParseEdgeList("1 2\nx y\n3 4\n5\n", "g.txt", options);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->edges.size(), 2u);
  EXPECT_EQ(list->stats.malformed, 2u);
  ASSERT_EQ(list->stats.messages.size(), 2u);
  EXPECT_EQ(list->stats.messages[0].rfind("g.txt:2: ", 0), 0u);
  EXPECT_EQ(list->stats.messages[1].rfind("g.txt:4: ", 0), 0u);
}

TEST(EdgeList, ReadsPlainZstdAndGzipFilesAlike) {
  TempDir dir;
  const std::string text = "# c\n10 20\n20 30 2\n30 10\n10 10\n";
  WriteFile(dir.File("g.txt"), text);
  WriteFile(dir.File("g.txt.zst"), testing::ZstdCompress(text));
  WriteFile(dir.File("g.txt.gz"), testing::GzipCompress(text));
  for (const char* name : {"g.txt", "g.txt.zst", "g.txt.gz"}) {
    absl::StatusOr<EdgeList> list = ReadEdgeList(dir.File(name));
    ASSERT_TRUE(list.ok()) << name << ": " << list.status();
    ASSERT_EQ(list->edges.size(), 3u) << name;
    EXPECT_EQ(list->edges[1], (Edge{20, 30, 2.0f}));
    EXPECT_EQ(list->edges[2], (Edge{10, 30, 1.0f}));
    EXPECT_EQ(list->stats.self_loops, 1u);
  }
  // A bad line in a compressed file names the file and the line.
  WriteFile(dir.File("bad.txt.zst"), testing::ZstdCompress("1 2\n3 x\n"));
  absl::StatusOr<EdgeList> bad = ReadEdgeList(dir.File("bad.txt.zst"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.txt.zst:2: to id 'x'"),
            std::string::npos)
      << bad.status();
  // A missing file is the file's error; an empty one is an empty list.
  EXPECT_EQ(ReadEdgeList(dir.File("none.txt")).status().code(),
            absl::StatusCode::kNotFound);
  WriteFile(dir.File("empty.txt"), "# nothing\n");
  absl::StatusOr<EdgeList> empty = ReadEdgeList(dir.File("empty.txt"));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->edges.empty());
}

// The counts of the real graphs' SOURCE.md (ctest: the test
// corpora_edge_list_test_real_data, label data): SNAP lists each undirected
// edge in both directions, so half the non-loop lines are duplicates.
TEST(EdgeList, RealSnapGraphsMatchTheirSourceCounts) {
  LATENTD_REQUIRE_DATA("snap-ca-GrQc/CA-GrQc.txt.zst",
                       "snap-ca-HepTh/CA-HepTh.txt.zst",
                       "snap-ego-facebook/facebook_combined.txt.zst");
  struct Graph {
    const char* file;
    uint64_t lines, self_loops, distinct_with_loops;
  };
  const Graph graphs[] = {
      {"snap-ca-GrQc/CA-GrQc.txt.zst", 28980, 12, 14496},
      {"snap-ca-HepTh/CA-HepTh.txt.zst", 51971, 25, 25998},
      {"snap-ego-facebook/facebook_combined.txt.zst", 88234, 0, 88234},
  };
  for (const Graph& g : graphs) {
    const std::string path = testing::RealDataPath(g.file);
    absl::StatusOr<EdgeList> list = ReadEdgeList(path);
    ASSERT_TRUE(list.ok()) << list.status();
    const EdgeListStats& s = list->stats;
    EXPECT_EQ(s.edges + s.self_loops + s.duplicates, g.lines) << g.file;
    EXPECT_EQ(s.self_loops, g.self_loops) << g.file;
    EXPECT_EQ(s.edges, g.distinct_with_loops - g.self_loops) << g.file;
    EXPECT_EQ(s.malformed, 0u);
    for (const Edge& e : list->edges) ASSERT_LT(e.src, e.dst);
  }
}

}  // namespace
}  // namespace latentd
