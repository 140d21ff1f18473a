// latentctl graph train / score / neighbors, driven through their Run
// functions: a model directory is written and resumed, bad input (malformed
// edge lines, an empty graph, dim 0, unknown vertices) gives clear errors
// and never a crash, and score goes on past a bad line.
#include "cli/graph_commands.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "sampler/graph/graph_model.h"
#include "tests/corpora/test_util.h"

namespace latentd {
namespace {

// Captures what a command writes to a FILE*.
class Capture {
 public:
  Capture() : f_(open_memstream(&buf_, &size_)) {}
  ~Capture() {
    std::fclose(f_);
    std::free(buf_);
  }
  FILE* f() { return f_; }
  std::string str() {
    std::fflush(f_);
    return std::string(buf_, size_);
  }

 private:
  char* buf_ = nullptr;
  size_t size_ = 0;
  FILE* f_;
};

std::string Ring(int n) {
  std::string s = "# a ring with chords\n";
  for (int i = 0; i < n; ++i) {
    s += std::to_string(i + 100) + "\t" + std::to_string((i + 1) % n + 100) +
         "\n";
    s += std::to_string(i + 100) + " " + std::to_string((i + 5) % n + 100) +
         "\n";
  }
  return s;
}

GraphTrainCommand Train(const testing::TempDir& dir) {
  GraphTrainCommand c;
  c.edges = dir.File("g.txt");
  c.out_dir = dir.File("model");
  c.trainer.dim = 4;
  c.epochs = 3;
  c.checkpoint_every = 1;
  return c;
}

TEST(GraphCommands, TrainsScoresAndResumes) {
  testing::TempDir dir;
  testing::WriteFile(dir.File("g.txt"), Ring(60));
  GraphTrainCommand c = Train(dir);
  c.holdout = 0.1;
  c.json = true;
  Capture out, err;
  ASSERT_TRUE(RunGraphTrain(c, out.f(), err.f()).ok()) << err.str();
  EXPECT_NE(err.str().find("epoch 3 (3/3): objective"), std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find("held-out AUC"), std::string::npos);
  EXPECT_NE(out.str().find("\"epoch\":3"), std::string::npos) << out.str();
  absl::StatusOr<GraphModel> m = GraphModel::Load(GraphModelPath(c.out_dir));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->num_vertices(), 60u);
  EXPECT_EQ(m->header().epoch, 3u);
  EXPECT_TRUE(GraphModel::Load(GraphPrevModelPath(c.out_dir)).ok());

  // A second train without --resume or --overwrite is refused.
  Capture out2, err2;
  absl::Status again = RunGraphTrain(c, out2.f(), err2.f());
  EXPECT_EQ(again.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(again.message().find("--resume"), std::string::npos);
  c.resume = true;
  ASSERT_TRUE(RunGraphTrain(c, out2.f(), err2.f()).ok()) << err2.str();
  EXPECT_NE(err2.str().find("resuming at epoch 3"), std::string::npos);
  EXPECT_EQ(GraphModel::Load(GraphModelPath(c.out_dir))->header().epoch, 6u);

  // score: the good lines are scored, the bad ones say why by line number.
  const std::string pairs = "100 101\n\n100 999\n# c\nx y\n101 100\n";
  FILE* in = fmemopen(const_cast<char*>(pairs.data()), pairs.size(), "r");
  Capture sout, serr;
  absl::Status s = RunGraphScore(c.out_dir, in, sout.f(), serr.f());
  std::fclose(in);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("2 of the input lines"), std::string::npos);
  const std::string lines = sout.str();
  const double first = std::atof(lines.c_str());
  EXPECT_EQ(lines.substr(lines.find('\n') + 1, 8), "nan\nnan\n");
  EXPECT_EQ(
      std::atof(lines.substr(lines.rfind('\n', lines.size() - 2)).c_str()),
      first);  // symmetric
  EXPECT_NE(serr.str().find("stdin:3: unknown vertex 999"), std::string::npos)
      << serr.str();
  EXPECT_NE(serr.str().find("stdin:5: expected two vertex ids"),
            std::string::npos);

  Capture nout;
  ASSERT_TRUE(RunGraphNeighbors(c.out_dir, 100, 3, nout.f()).ok());
  int rows = 0;
  for (char ch : nout.str()) rows += ch == '\n';
  EXPECT_EQ(rows, 3);
  EXPECT_EQ(RunGraphNeighbors(c.out_dir, 7, 3, nout.f()).code(),
            absl::StatusCode::kNotFound);
}

// --negative-dims: the model file keeps the signature, score uses it, and
// resuming with another signature is refused with the reason.
TEST(GraphCommands, TrainsWithASignature) {
  testing::TempDir dir;
  testing::WriteFile(dir.File("g.txt"), Ring(60));
  GraphTrainCommand c = Train(dir);
  c.trainer.negative_dims = 2;
  Capture out, err;
  ASSERT_TRUE(RunGraphTrain(c, out.f(), err.f()).ok()) << err.str();
  EXPECT_NE(err.str().find("dim 4 (2 negative)"), std::string::npos)
      << err.str();
  absl::StatusOr<GraphModel> m = GraphModel::Load(GraphModelPath(c.out_dir));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->negative_dims(), 2u);
  const float* a = &m->vectors()[*m->Find(100) * 4];
  const float* b = &m->vectors()[*m->Find(101) * 4];
  const double expected = a[0] * b[0] + a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
  const std::string pairs = "100 101\n";
  FILE* in = fmemopen(const_cast<char*>(pairs.data()), pairs.size(), "r");
  Capture sout, serr;
  ASSERT_TRUE(RunGraphScore(c.out_dir, in, sout.f(), serr.f()).ok());
  std::fclose(in);
  EXPECT_NEAR(std::atof(sout.str().c_str()), expected, 1e-4) << sout.str();

  c.resume = true;
  c.trainer.negative_dims = 0;
  absl::Status s = RunGraphTrain(c, out.f(), err.f());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("2 negative dims"), std::string::npos) << s;
  c.resume = false;
  c.overwrite = true;
  c.trainer.negative_dims = 4;  // not below dim
  s = RunGraphTrain(c, out.f(), err.f());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("negative dims 4"), std::string::npos) << s;
}

// --nodes: in-process nodes agree by consensus; the model written is their
// consensus, and --mu 0 (no pull) or --resume is refused with the reason.
TEST(GraphCommands, TrainsOnSeveralNodesWithMu) {
  testing::TempDir dir;
  testing::WriteFile(dir.File("g.txt"), Ring(60));
  GraphTrainCommand c = Train(dir);
  c.nodes = 3;
  c.json = true;
  c.trainer.mu = 0.05;
  Capture out, err;
  ASSERT_TRUE(RunGraphTrain(c, out.f(), err.f()).ok()) << err.str();
  EXPECT_NE(err.str().find("on 3 nodes"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("mu 0.05"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("epoch 3/3: objective"), std::string::npos);
  EXPECT_NE(out.str().find("\"nodes\":3"), std::string::npos) << out.str();
  absl::StatusOr<GraphModel> m = GraphModel::Load(GraphModelPath(c.out_dir));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->num_vertices(), 60u);
  EXPECT_EQ(m->header().epoch, 3u);

  c.overwrite = true;
  c.trainer.mu = 0;
  absl::Status s = RunGraphTrain(c, out.f(), err.f());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("mu > 0"), std::string::npos) << s;
  c.trainer.mu = 0.01;
  c.resume = true;
  s = RunGraphTrain(c, out.f(), err.f());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--resume"), std::string::npos) << s;
  c.resume = false;
  c.nodes = 0;
  EXPECT_EQ(RunGraphTrain(c, out.f(), err.f()).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GraphCommands, BadInputIsAClearError) {
  testing::TempDir dir;
  Capture out, err;
  // A malformed line: file and line named; with skip, counted.
  testing::WriteFile(dir.File("g.txt"), "1 2\n2 3\n3 four\n");
  GraphTrainCommand c = Train(dir);
  absl::Status s = RunGraphTrain(c, out.f(), err.f());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("g.txt:3: to id 'four'"), std::string::npos) << s;
  c.on_malformed = "skip";
  EXPECT_TRUE(RunGraphTrain(c, out.f(), err.f()).ok());
  EXPECT_NE(err.str().find("1 malformed"), std::string::npos) << err.str();
  // An empty graph (only a self-loop).
  testing::WriteFile(dir.File("g.txt"), "# nothing\n5 5\n");
  c = Train(dir);
  c.out_dir = dir.File("m2");
  s = RunGraphTrain(c, out.f(), err.f());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("no edges"), std::string::npos) << s;
  // dim 0.
  testing::WriteFile(dir.File("g.txt"), Ring(10));
  c.trainer.dim = 0;
  s = RunGraphTrain(c, out.f(), err.f());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("dim 0"), std::string::npos) << s;
  // A missing edge file; a missing model.
  c = Train(dir);
  c.edges = dir.File("none.txt");
  c.out_dir = dir.File("m3");
  EXPECT_EQ(RunGraphTrain(c, out.f(), err.f()).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(RunGraphNeighbors(dir.File("nomodel"), 1, 3, out.f()).code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace latentd
