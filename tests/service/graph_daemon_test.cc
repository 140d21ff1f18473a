// latentd --graph-edges on the test graph (tests/testdata: graph.txt, in
// the shape of SNAP ca-GrQc, with its edge 3466-937): the graph model
// trains in the background with a held-out split; GetEmbedding, ScorePairs
// and NearestVertices answer alike over HTTP/JSON, HTTP/protobuf and TCP,
// with the API tokens' roles; bad requests get clear errors while the
// daemon keeps serving; IngestEdges adds vertices; a restart resumes from
// the checkpoint, and edges acknowledged just before a SIGKILL are kept.
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "base/random.h"
#include "cli/graph_commands.h"
#include "corpora/edge_list.h"
#include "gtest/gtest.h"
#include "service/api.pb.h"
#include "tests/service/daemon_harness.h"
#include "tests/service/gateway_test_util.h"

namespace latentd::testing {
namespace {

using service::ApiClient;
using service::Method;
using service::Protocol;

constexpr char kRead[] = "graph-read-token-0123456789";
constexpr char kWrite[] = "graph-write-token-0123456789";
constexpr char kAdmin[] = "graph-admin-token-0123456789";
constexpr uint64_t kEpochs = 30;

std::string GraphPath() { return TestCorpusFile("graph.txt"); }

// Runs a latentctl graph command's function with `input` as stdin; its
// stdout and stderr into *out and *err.
absl::Status RunCli(const std::function<absl::Status(FILE*, FILE*, FILE*)>& f,
                    const std::string& input, std::string* out,
                    std::string* err) {
  FILE* in = std::tmpfile();
  FILE* o = std::tmpfile();
  FILE* e = std::tmpfile();
  std::fputs(input.c_str(), in);
  std::rewind(in);
  absl::Status s = f(in, o, e);
  for (auto [file, text] : {std::pair{o, out}, std::pair{e, err}}) {
    std::rewind(file);
    text->clear();
    for (int c; (c = std::fgetc(file)) != EOF;) text->push_back(char(c));
    std::fclose(file);
  }
  std::fclose(in);
  return s;
}

// Polls Status until `done` holds (up to `seconds`).
absl::StatusOr<api::GraphStatus> WaitGraph(
    ApiClient* api, const std::function<bool(const api::GraphStatus&)>& done,
    double seconds) {
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  api::StatusResponse s;
  for (;;) {
    absl::Status st = api->Call(Method::kStatus, api::StatusRequest(), &s);
    if (st.ok() && done(s.graph())) return s.graph();
    if (std::chrono::steady_clock::now() > end) {
      return absl::DeadlineExceededError(
          absl::StrCat("graph status never got there: ", st.ToString(), " ",
                       s.graph().ShortDebugString()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::unique_ptr<ApiClient> As(const Daemon& d, Protocol p, const char* token) {
  std::unique_ptr<ApiClient> c = d.Client(p);
  c->set_token(token);
  return c;
}

absl::StatusOr<std::vector<float>> Embedding(ApiClient* api, uint64_t v) {
  api::GetEmbeddingRequest q;
  q.set_vertex(v);
  api::GetEmbeddingResponse r;
  absl::Status s = api->Call(Method::kGetEmbedding, q, &r);
  if (!s.ok()) return s;
  return std::vector<float>(r.vector().begin(), r.vector().end());
}

int HttpPort(const Daemon& d) {
  return std::stoi(d.http().substr(d.http().rfind(':') + 1));
}

class GraphDaemon : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(tmp_.path() + "/tokens")
        << "read " << kRead << "\nwrite " << kWrite << "\nadmin " << kAdmin
        << "\n";
    args_ = SmallCorpusArgs(tmp_.path());
    args_.push_back("--max-sweeps");  // the topic model: done quickly
    args_.push_back("3");
    for (std::string a :
         {std::string("--graph-edges"), GraphPath(), std::string("--graph-dim"),
          std::string("32"), std::string("--graph-holdout"), std::string("0.1"),
          std::string("--graph-max-epochs"), std::to_string(kEpochs),
          std::string("--graph-checkpoint-every"), std::string("10"),
          std::string("--graph-max-top"), std::string("100"),
          std::string("--api-tokens"), tmp_.path() + "/tokens"}) {
      args_.push_back(a);
    }
    absl::StatusOr<EdgeList> list = ReadEdgeList(GraphPath());
    ASSERT_TRUE(list.ok()) << list.status();
    edges_ = std::move(list->edges);
    absl::flat_hash_set<uint64_t> vertices;
    for (const Edge& e : edges_) vertices.insert({e.src, e.dst});
    vertices_ = vertices.size();
  }

  TempDir tmp_;
  std::vector<std::string> args_;
  std::vector<Edge> edges_;
  uint64_t vertices_ = 0;
};

TEST_F(GraphDaemon, TrainsServesIngestsAndRestarts) {
  const std::string dir = tmp_.path() + "/node";
  std::vector<float> z3466;
  uint64_t epoch = 0;
  {
    Daemon d(dir, args_);
    ASSERT_TRUE(d.ok()) << d.Log();
    auto json = As(d, Protocol::kHttpJson, kRead);
    absl::StatusOr<api::GraphStatus> g = WaitGraph(
        json.get(),
        [](const api::GraphStatus& g) {
          return g.epoch() >= kEpochs && !g.training();
        },
        90);
    ASSERT_TRUE(g.ok()) << g.status() << d.Log();
    EXPECT_EQ(g->vertices(), vertices_);
    EXPECT_GT(g->heldout_pairs(), 2000u);  // ~1450 edges + as many non-edges
    EXPECT_GT(g->heldout_auc(), 0.9) << g->ShortDebugString();
    EXPECT_GT(g->heldout_average_precision(), 0.85);
    EXPECT_EQ(g->checkpoint_epoch(), kEpochs);
    epoch = g->epoch();

    // Known edges score above random pairs (most of which are non-edges).
    Rng rng(7);
    api::ScorePairsRequest edges, random;
    for (int i = 0; i < 200; ++i) {
      const Edge& e = edges_[rng.UniformInt(edges_.size())];
      api::VertexPair* p = edges.add_pairs();
      p->set_a(e.src);
      p->set_b(e.dst);
      p = random.add_pairs();
      p->set_a(edges_[rng.UniformInt(edges_.size())].src);
      p->set_b(edges_[rng.UniformInt(edges_.size())].dst);
    }
    // Every call over every protocol, with the same answers.
    std::vector<std::vector<float>> vectors;
    std::vector<std::string> neighbor_text;
    for (Protocol p :
         {Protocol::kHttpJson, Protocol::kHttpProto, Protocol::kTcp}) {
      SCOPED_TRACE(static_cast<int>(p));
      auto api = As(d, p, kRead);
      absl::StatusOr<std::vector<float>> z = Embedding(api.get(), 3466);
      ASSERT_TRUE(z.ok()) << z.status();
      ASSERT_EQ(z->size(), 32u);
      vectors.push_back(*z);
      api::ScorePairsResponse se, sr;
      ASSERT_TRUE(api->Call(Method::kScorePairs, edges, &se).ok());
      ASSERT_TRUE(api->Call(Method::kScorePairs, random, &sr).ok());
      ASSERT_EQ(se.scores_size(), 200);
      double mean_edge = 0, mean_random = 0;
      for (int i = 0; i < 200; ++i) {
        mean_edge += se.scores(i).score() / 200;
        mean_random += sr.scores(i).score() / 200;
      }
      EXPECT_GT(mean_edge, mean_random + 0.3)
          << mean_edge << " " << mean_random;
      api::NearestVerticesRequest nq;
      nq.set_vertex(3466);
      nq.set_top(5);
      api::NearestVerticesResponse nr;
      ASSERT_TRUE(api->Call(Method::kNearestVertices, nq, &nr).ok());
      ASSERT_EQ(nr.neighbors_size(), 5);
      for (int i = 0; i < 5; ++i) {
        EXPECT_NE(nr.neighbors(i).vertex(), 3466u);
        if (i > 0) {
          EXPECT_LE(nr.neighbors(i).score(), nr.neighbors(i - 1).score());
        }
      }
      neighbor_text.push_back(nr.ShortDebugString());
      // The score is the inner product of the embeddings.
      absl::StatusOr<std::vector<float>> zn =
          Embedding(api.get(), nr.neighbors(0).vertex());
      ASSERT_TRUE(zn.ok());
      double dot = 0;
      for (int k = 0; k < 32; ++k) dot += double{(*z)[k]} * (*zn)[k];
      EXPECT_NEAR(dot, nr.neighbors(0).score(), 1e-4);
    }
    EXPECT_EQ(vectors[0], vectors[1]);
    EXPECT_EQ(vectors[0], vectors[2]);
    EXPECT_EQ(neighbor_text[0], neighbor_text[2]);
    z3466 = vectors[0];

    // latentctl graph embedding / neighbors / score without DIR.
    DaemonAddress addr;
    addr.addr = d.tcp();
    addr.protocol = "tcp";
    addr.token = kRead;
    std::string out, err;
    ASSERT_TRUE(
        RunCli([&](FILE*, FILE* o,
                   FILE*) { return RunRemoteGraphEmbedding(addr, 3466, o); },
               "", &out, &err)
            .ok());
    EXPECT_EQ(std::count(out.begin(), out.end(), ' '), 31) << out;
    ASSERT_TRUE(
        RunCli([&](FILE*, FILE* o,
                   FILE*) { return RunRemoteGraphNeighbors(addr, 3466, 3, o); },
               "", &out, &err)
            .ok());
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3) << out;
    absl::Status cli =
        RunCli([&](FILE* i, FILE* o,
                   FILE* e) { return RunRemoteGraphScore(addr, i, o, e); },
               "3466 937\n# comment\n3466 424242\nnot a pair\n", &out, &err);
    EXPECT_EQ(cli.code(), absl::StatusCode::kInvalidArgument) << cli;
    EXPECT_EQ(out.substr(out.find('\n')), "\nnan\nnan\n") << out;
    EXPECT_NE(err.find("stdin:3: vertex 424242 is not in the graph"),
              std::string::npos)
        << err;
    EXPECT_NE(err.find("stdin:4: expected two vertex ids"), std::string::npos)
        << err;

    // Bad input: clear errors, and the daemon goes on serving.
    auto tcp = As(d, Protocol::kTcp, kWrite);
    absl::StatusOr<std::vector<float>> unknown =
        Embedding(tcp.get(), 987654321987ULL);
    EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
    EXPECT_NE(unknown.status().message().find("987654321987"),
              std::string::npos)
        << unknown.status();
    api::ScorePairsRequest bad_pair;
    bad_pair.add_pairs()->set_a(3466);
    bad_pair.mutable_pairs(0)->set_b(937);
    bad_pair.add_pairs()->set_a(3466);
    bad_pair.mutable_pairs(1)->set_b(55555555);
    api::ScorePairsResponse sp;
    absl::Status s = tcp->Call(Method::kScorePairs, bad_pair, &sp);
    EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
    EXPECT_NE(s.message().find("pair 1: vertex 55555555"), std::string::npos)
        << s;
    bad_pair.set_skip_unknown(true);
    ASSERT_TRUE(tcp->Call(Method::kScorePairs, bad_pair, &sp).ok());
    EXPECT_TRUE(sp.scores(0).error().empty());
    EXPECT_NE(sp.scores(1).error().find("55555555"), std::string::npos);
    api::NearestVerticesRequest too_many;
    too_many.set_vertex(3466);
    too_many.set_top(101);
    api::NearestVerticesResponse nr;
    s = tcp->Call(Method::kNearestVertices, too_many, &nr);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("graph-max-top (100)"), std::string::npos) << s;
    api::IngestEdgesRequest loop;
    loop.add_edges()->set_src(5);
    loop.mutable_edges(0)->set_dst(5);
    api::IngestEdgesResponse ir;
    s = tcp->Call(Method::kIngestEdges, loop, &ir);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("edge 0 (5 5) is a self-loop"),
              std::string::npos)
        << s;
    // A malformed pair over HTTP/JSON: 400 naming the problem.
    httplib::Client http("127.0.0.1", HttpPort(d));
    httplib::Headers auth = {{"Authorization", std::string("Bearer ") + kRead}};
    auto res = http.Post("/v1/ScorePairs", auth,
                         R"({"pairs":[{"a":"3466","b":"not-a-vertex"}]})",
                         "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400);
    EXPECT_NE(res->body.find("INVALID_ARGUMENT"), std::string::npos)
        << res->body;
    // Roles: a read token may not ingest.
    auto reader = As(d, Protocol::kHttpJson, kRead);
    api::IngestEdgesRequest add;
    for (auto [a, b] : std::vector<std::pair<uint64_t, uint64_t>>{
             {9000000001, 9000000002}, {9000000001, 3466}, {3466, 937}}) {
      api::GraphEdge* e = add.add_edges();
      e->set_src(a);
      e->set_dst(b);
    }
    EXPECT_EQ(reader->Call(Method::kIngestEdges, add, &ir).code(),
              absl::StatusCode::kPermissionDenied);
    EXPECT_TRUE(Embedding(json.get(), 3466).ok());  // still serving

    // Ingest: two new edges, one already in the graph; trained at the next
    // epoch boundary (one epoch past max-epochs), then the new vertices
    // are known.
    auto writer = As(d, Protocol::kHttpJson, kWrite);
    ASSERT_TRUE(writer->Call(Method::kIngestEdges, add, &ir).ok());
    EXPECT_EQ(ir.accepted(), 2u);
    EXPECT_EQ(ir.duplicates(), 1u);
    g = WaitGraph(
        json.get(),
        [&](const api::GraphStatus& g) {
          return g.pending_edges() == 0 && g.epoch() > epoch && !g.training();
        },
        30);
    ASSERT_TRUE(g.ok()) << g.status() << d.Log();
    EXPECT_EQ(g->vertices(), vertices_ + 2);
    EXPECT_EQ(g->ingested_edges(), 2u);
    EXPECT_TRUE(Embedding(json.get(), 9000000002).ok());
    epoch = g->epoch();
    absl::StatusOr<std::vector<float>> z = Embedding(json.get(), 3466);
    ASSERT_TRUE(z.ok());
    z3466 = *z;
    ASSERT_EQ(d.Stop(), 0) << d.Log();  // writes the graph checkpoint
  }
  {
    // Restart: the checkpoint's vectors, the ingested edges; then an edge
    // acknowledged right before a SIGKILL.
    Daemon d(dir, args_);
    ASSERT_TRUE(d.ok()) << d.Log();
    auto tcp = As(d, Protocol::kTcp, kWrite);
    absl::StatusOr<api::GraphStatus> g = WaitGraph(
        tcp.get(), [](const api::GraphStatus&) { return true; }, 10);
    ASSERT_TRUE(g.ok());
    EXPECT_EQ(g->epoch(), epoch);
    EXPECT_EQ(g->checkpoint_epoch(), epoch);
    EXPECT_EQ(g->vertices(), vertices_ + 2);
    EXPECT_EQ(g->ingested_edges(), 2u);
    EXPECT_EQ(Embedding(tcp.get(), 3466).value(), z3466);
    api::IngestEdgesRequest add;
    add.add_edges()->set_src(9000000003);
    add.mutable_edges(0)->set_dst(937);
    add.mutable_edges(0)->set_weight(2.5f);
    api::IngestEdgesResponse ir;
    ASSERT_TRUE(tcp->Call(Method::kIngestEdges, add, &ir).ok());
    EXPECT_EQ(ir.accepted(), 1u);
    d.Stop(9, 10);
  }
  {
    Daemon d(dir, args_);
    ASSERT_TRUE(d.ok()) << d.Log();
    auto tcp = As(d, Protocol::kTcp, kRead);
    const uint64_t vertices = vertices_;
    absl::StatusOr<api::GraphStatus> g = WaitGraph(
        tcp.get(),
        [vertices](const api::GraphStatus& g) {
          return g.vertices() == vertices + 3 && !g.training();
        },
        30);
    ASSERT_TRUE(g.ok()) << g.status() << d.Log();
    EXPECT_EQ(g->ingested_edges(), 3u);
    EXPECT_TRUE(Embedding(tcp.get(), 9000000003).ok());
  }
}

// No corpus: the node serves the graph only; the topic calls say why not.
TEST_F(GraphDaemon, ServesAGraphWithoutATopicModel) {
  const std::string dir = tmp_.path() + "/graph-only";
  const std::vector<std::string> args = {"--graph-edges",      GraphPath(),
                                         "--graph-dim",        "8",
                                         "--graph-max-epochs", "3"};
  for (int start = 0; start < 2; ++start) {
    Daemon d(dir, args);
    ASSERT_TRUE(d.ok()) << d.Log();
    auto json = d.Client(Protocol::kHttpJson);
    absl::StatusOr<api::GraphStatus> g = WaitGraph(
        json.get(),
        [](const api::GraphStatus& g) {
          return g.epoch() >= 3 && !g.training();
        },
        60);
    ASSERT_TRUE(g.ok()) << g.status() << d.Log();
    EXPECT_EQ(g->epoch(), 3u);  // the second start resumes at epoch 3
    EXPECT_EQ(g->checkpoint_epoch(), 3u);
    absl::StatusOr<std::vector<float>> z = Embedding(json.get(), 3466);
    ASSERT_TRUE(z.ok()) << z.status();
    EXPECT_EQ(z->size(), 8u);
    api::ListTopicsResponse topics;
    absl::Status s =
        json->Call(Method::kListTopics, api::ListTopicsRequest(), &topics);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(s.message().find("ListTopics: this node serves no topic model"),
              std::string::npos)
        << s;
    api::IngestRequest ingest;
    ingest.add_documents()->set_text("oil prices");
    api::IngestResponse ir;
    EXPECT_EQ(
        d.Client(Protocol::kTcp)->Call(Method::kIngest, ingest, &ir).code(),
        absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(HttpGet(HttpPort(d), "/readyz").status, 200);
    ASSERT_EQ(d.Stop(), 0) << d.Log();
  }
}

// A diverged epoch is undone and trained again at half the learning rate
// (--graph-divergence-retries): at η = 4 the test graph diverges in the
// first epoch (one node trains it at 0.6, not at 1), and training goes on
// at 0.5 to the last epoch. With no retries training stops with the error.
TEST_F(GraphDaemon, ADivergedEpochIsTrainedAgainAtHalfTheRate) {
  const std::vector<std::string> base = {
      "--graph-edges",         GraphPath(), "--graph-dim",        "8",
      "--graph-learning-rate", "4",         "--graph-max-epochs", "10"};
  {
    Daemon d(tmp_.path() + "/retried", base);
    ASSERT_TRUE(d.ok()) << d.Log();
    auto api = d.Client(Protocol::kTcp);
    absl::StatusOr<api::GraphStatus> g = WaitGraph(
        api.get(),
        [](const api::GraphStatus& g) {
          return (g.epoch() >= 10 && !g.training()) || !g.error().empty();
        },
        60);
    ASSERT_TRUE(g.ok()) << g.status() << d.Log();
    EXPECT_EQ(g->error(), "") << d.Log();
    EXPECT_EQ(g->epoch(), 10u);
    EXPECT_TRUE(std::isfinite(g->objective()));
    const std::string log = d.Log();
    for (const char* rate : {"at learning rate 2 ", "at learning rate 1 ",
                             "at learning rate 0.5 "}) {
      EXPECT_NE(log.find(absl::StrCat("the epoch's steps were undone; "
                                      "training it again ",
                                      rate)),
                std::string::npos)
          << rate << "\n"
          << log;
    }
    absl::StatusOr<std::vector<float>> z = Embedding(api.get(), 3466);
    ASSERT_TRUE(z.ok()) << z.status();
    for (float x : *z) EXPECT_TRUE(std::isfinite(x));
    ASSERT_EQ(d.Stop(), 0) << d.Log();
  }
  std::vector<std::string> none = base;
  none.insert(none.end(), {"--graph-divergence-retries", "0"});
  Daemon d(tmp_.path() + "/stopped", none);
  ASSERT_TRUE(d.ok()) << d.Log();
  auto api = d.Client(Protocol::kTcp);
  absl::StatusOr<api::GraphStatus> g = WaitGraph(
      api.get(), [](const api::GraphStatus& g) { return !g.error().empty(); },
      60);
  ASSERT_TRUE(g.ok()) << g.status() << d.Log();
  EXPECT_NE(g->error().find("diverged in epoch 1"), std::string::npos)
      << g->error();
  EXPECT_EQ(g->epoch(), 0u);
  ASSERT_EQ(d.Stop(), 0) << d.Log();
}

// --graph-negative-dims: ScorePairs counts the last coordinates negatively;
// a restart with another signature refuses the checkpoint.
TEST_F(GraphDaemon, ScoresWithASignature) {
  const std::string dir = tmp_.path() + "/signed";
  std::vector<std::string> args = {
      "--graph-edges",         GraphPath(), "--graph-dim",        "8",
      "--graph-negative-dims", "3",         "--graph-max-epochs", "2"};
  {
    Daemon d(dir, args);
    ASSERT_TRUE(d.ok()) << d.Log();
    auto tcp = d.Client(Protocol::kTcp);
    ASSERT_TRUE(WaitGraph(
                    tcp.get(),
                    [](const api::GraphStatus& g) {
                      return g.epoch() >= 2 && !g.training();
                    },
                    60)
                    .ok())
        << d.Log();
    const Edge& e = edges_[0];
    absl::StatusOr<std::vector<float>> a = Embedding(tcp.get(), e.src);
    absl::StatusOr<std::vector<float>> b = Embedding(tcp.get(), e.dst);
    ASSERT_TRUE(a.ok() && b.ok());
    double expected = 0;
    for (int k = 0; k < 8; ++k)
      expected += (k < 5 ? 1 : -1) * (*a)[k] * (*b)[k];
    api::ScorePairsRequest q;
    api::VertexPair* p = q.add_pairs();
    p->set_a(e.src);
    p->set_b(e.dst);
    api::ScorePairsResponse r;
    ASSERT_TRUE(tcp->Call(Method::kScorePairs, q, &r).ok());
    ASSERT_EQ(r.scores_size(), 1);
    EXPECT_NEAR(r.scores(0).score(), expected, 1e-5);
    ASSERT_EQ(d.Stop(), 0) << d.Log();
  }
  args[5] = "0";
  Daemon d(dir, args);
  EXPECT_FALSE(d.ok());
  EXPECT_NE(d.Log().find("negative dims"), std::string::npos) << d.Log();
}

}  // namespace
}  // namespace latentd::testing
