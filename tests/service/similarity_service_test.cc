// SimilarityService inside a running LatentdService: queries from several
// threads while the training thread publishes views, the similarity thread
// refreshes the indexes (the HNSW graph too: exact_threshold 0) and
// ingested documents are merged. ops/tsan.sh runs it under ThreadSanitizer;
// here it checks that every answer is well formed and that an ingested
// document, once merged, is found with its theme's documents nearest.
#include "service/similarity_service.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "service/latentd_service.h"
#include "service/metrics.h"

namespace latentd::service {
namespace {

constexpr const char* kThemes[] = {
    "oil prices opec crude barrel energy market",
    "football match goal team player season coach"};

// 60 lines, alternating themes: line n (from 1) is oil when n is odd.
std::string WriteCorpus(const std::string& dir) {
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/corpus.txt";
  FILE* f = std::fopen(path.c_str(), "w");
  for (int d = 0; d < 60; ++d) {
    std::fprintf(f, "%s %s\n", kThemes[d % 2], kThemes[d % 2]);
  }
  std::fclose(f);
  return path;
}

bool IsFootballLine(const std::string& id) {
  return !id.empty() &&
         id.find_first_not_of("0123456789") == std::string::npos &&
         std::stoi(id) % 2 == 0;
}

// An answer's neighbours: at most `top`, the query left out, distances in
// [0, 1] and ascending.
template <typename Response>
void ExpectWellFormed(const Response& r, uint32_t top,
                      const std::string& query) {
  ASSERT_LE(r.neighbors_size(), static_cast<int>(top));
  double last = 0;
  for (const api::Neighbor& n : r.neighbors()) {
    EXPECT_NE(n.id(), query);
    EXPECT_GE(n.distance(), last) << n.id();
    EXPECT_LE(n.distance(), 1.0 + 1e-9) << n.id();
    last = n.distance();
  }
}

// A node over WriteCorpus in a fresh `dir`, K topics, `sweeps` sweeps,
// every sweep published.
ServiceOptions NodeOptions(const std::string& dir, uint32_t topics,
                           uint64_t sweeps) {
  std::filesystem::remove_all(dir);
  ServiceOptions o;
  o.data_dir = dir + "/node";
  o.corpus.path = WriteCorpus(dir);
  o.trainer.num_topics = topics;
  o.trainer.eval_every = 0;
  o.max_sweeps = sweeps;
  o.publish_interval_ms = 0;
  return o;
}

TEST(SimilarityService, QueriesWhileTheModelMovesAndDocumentsArrive) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "similarity_svc_", ::getpid());
  ServiceOptions o = NodeOptions(dir, 4, 40);
  o.similarity.refresh_seconds = 0;  // a full refresh at every publication
  o.similarity.exact_threshold = 0;  // and an HNSW graph built each time
  MetricsRegistry metrics;
  auto s = LatentdService::Open(o, &metrics);
  ASSERT_TRUE(s.ok()) << s.status();
  SimilarityService* similarity = (*s)->similarity();
  ASSERT_NE(similarity, nullptr);
  (*s)->Start();

  std::atomic<bool> done{false};
  std::atomic<int> answered{0};
  auto query = [&](int seed) {
    int i = seed;
    while (!done.load()) {
      api::SimilarDocumentsRequest d;
      d.set_document(std::to_string(1 + i % 60));
      d.set_top(5);
      auto docs = similarity->SimilarDocuments(d);
      if (docs.ok()) {
        ExpectWellFormed(*docs, 5, d.document());
        ++answered;
      } else {
        // Before the first refresh only.
        EXPECT_EQ(docs.status().code(), absl::StatusCode::kUnavailable)
            << docs.status();
      }
      api::SimilarUsersRequest u;
      u.set_user(absl::StrCat("user", i % 3));
      auto users = similarity->SimilarUsers(u);
      if (users.ok()) {
        ExpectWellFormed(*users, 10, u.user());
      } else {
        EXPECT_TRUE(absl::IsUnavailable(users.status()) ||
                    absl::IsNotFound(users.status()))
            << users.status();
      }
      (void)similarity->Sizes();
      ++i;
    }
  };
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) readers.emplace_back(query, t * 7);

  // Documents arrive while training runs: football texts, every other one
  // a document of its own with an id, the others users' events (a user's
  // events are one document of the model, the user's).
  for (int i = 0; i < 20; ++i) {
    api::IngestRequest req;
    api::Document* doc = req.add_documents();
    if (i % 2 == 1) {
      doc->set_id(absl::StrCat("ingested-", i));
    } else {
      doc->set_user(absl::StrCat("user", i % 3));
    }
    doc->set_text(kThemes[1]);
    auto accepted = (*s)->Ingest(req);
    ASSERT_TRUE(accepted.ok()) << accepted.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  // Once sampling has stopped and everything is merged, the index takes
  // the last publication (documents merged after the stop are folded in:
  // the others' θ no longer change, so their items may keep an earlier
  // view): then the last ingested document is found with football
  // documents nearest (corpus lines, ingested ones or the users', whose
  // events are football too).
  absl::StatusOr<api::SimilarDocumentsResponse> found;
  bool settled = false;
  for (int t = 0; t < 3000 && !settled; ++t) {
    auto status = (*s)->Status(api::StatusRequest());
    ASSERT_TRUE(status.ok()) << status.status();
    api::SimilarDocumentsRequest d;
    d.set_document("ingested-19");
    d.set_top(10);
    found = similarity->SimilarDocuments(d);
    settled = !status->training() && status->pending() == 0 && found.ok() &&
              found->staleness().index_newest_view() ==
                  found->staleness().current().view();
    if (!settled) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  done = true;
  for (std::thread& r : readers) r.join();
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(settled) << found->DebugString();
  ASSERT_EQ(found->neighbors_size(), 10);
  for (const api::Neighbor& n : found->neighbors()) {
    EXPECT_TRUE(IsFootballLine(n.id()) || n.id().rfind("ingested-", 0) == 0 ||
                n.id().rfind("user", 0) == 0)
        << n.id() << " at " << n.distance() << "\n"
        << found->DebugString();
  }
  EXPECT_GT(answered.load(), 0);
  // /metrics: the index's items, its refreshes, and no lag once settled.
  const std::string text = metrics.RenderText();
  const auto [documents, users] = similarity->Sizes();
  EXPECT_NE(
      text.find(absl::StrCat("latentd_similarity_items{kind=\"documents\"} ",
                             documents, "\n")),
      std::string::npos)
      << text;
  EXPECT_NE(text.find(absl::StrCat("latentd_similarity_items{kind=\"users\"} ",
                                   users, "\n")),
            std::string::npos)
      << text;
  EXPECT_GE(documents, 70u);
  EXPECT_EQ(users, 3u);
  EXPECT_NE(text.find("latentd_similarity_view_lag 0\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("latentd_similarity_refreshes_total{kind=\"full\"} 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("latentd_similarity_refresh_failures_total 0\n"),
            std::string::npos)
      << text;
  std::printf("%d document answers while training and ingesting\n",
              answered.load());
  EXPECT_TRUE((*s)->Stop().ok());
  std::filesystem::remove_all(dir);
}

// Above max_topics the indexes keep counts (SparseMixtureIndex): the same
// model, trained once with a dense index and once with a sparse one (one
// sampler thread: the same sweeps), answers the same neighbours at the
// same distances, for documents and users, by id and by mixture.
TEST(SimilarityService, SparseAboveMaxTopicsAnswersAsTheDenseIndex) {
  struct Node {
    std::unique_ptr<LatentdService> service;
    MetricsRegistry metrics;
  };
  Node nodes[2];
  for (int i = 0; i < 2; ++i) {
    const std::string dir = absl::StrCat(
        ::testing::TempDir(), "similarity_sparse_", i, "_", ::getpid());
    ServiceOptions o = NodeOptions(dir, 8, 5);
    o.similarity.max_topics = i == 0 ? 0 : 4;  // dense, then sparse
    auto s = LatentdService::Open(o, &nodes[i].metrics);
    ASSERT_TRUE(s.ok()) << s.status();
    nodes[i].service = std::move(*s);
    api::IngestRequest req;
    api::Document* doc = req.add_documents();
    doc->set_user("fan");
    doc->set_text(kThemes[1]);
    ASSERT_TRUE(nodes[i].service->Ingest(req).ok());
    nodes[i].service->Start();
  }
  // Settled: sampling stopped and the index at the last publication.
  auto settled = [](LatentdService* s) {
    api::SimilarDocumentsRequest d;
    d.set_document("1");
    for (int t = 0; t < 2000; ++t) {
      auto status = s->Status(api::StatusRequest());
      auto r = s->similarity()->SimilarDocuments(d);
      if (status.ok() && !status->training() && status->pending() == 0 &&
          r.ok() &&
          r->staleness().index_newest_view() ==
              r->staleness().current().view()) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  ASSERT_TRUE(settled(nodes[0].service.get()));
  ASSERT_TRUE(settled(nodes[1].service.get()));
  auto same = [](const auto& dense, const auto& sparse) {
    ASSERT_EQ(dense.neighbors_size(), sparse.neighbors_size());
    ASSERT_GT(dense.neighbors_size(), 0);
    EXPECT_TRUE(sparse.staleness().exact());
    for (int j = 0; j < dense.neighbors_size(); ++j) {
      EXPECT_NEAR(dense.neighbors(j).distance(), sparse.neighbors(j).distance(),
                  1e-4)
          << j;
    }
    // The nearest is the same item (the test corpus repeats its lines, so
    // ties further down may order differently).
    EXPECT_NEAR(dense.neighbors(0).distance(), sparse.neighbors(0).distance(),
                1e-4);
  };
  api::SimilarDocumentsRequest by_id;
  by_id.set_document("1");
  by_id.set_top(20);
  auto dense_docs = nodes[0].service->similarity()->SimilarDocuments(by_id);
  auto sparse_docs = nodes[1].service->similarity()->SimilarDocuments(by_id);
  ASSERT_TRUE(dense_docs.ok()) << dense_docs.status();
  ASSERT_TRUE(sparse_docs.ok()) << sparse_docs.status();
  same(*dense_docs, *sparse_docs);
  api::SimilarDocumentsRequest by_text;
  by_text.set_text(kThemes[0]);
  by_text.set_seed(3);
  auto dense_text = nodes[0].service->similarity()->SimilarDocuments(by_text);
  auto sparse_text = nodes[1].service->similarity()->SimilarDocuments(by_text);
  ASSERT_TRUE(dense_text.ok()) << dense_text.status();
  ASSERT_TRUE(sparse_text.ok()) << sparse_text.status();
  same(*dense_text, *sparse_text);
  for (const api::Neighbor& n : sparse_text->neighbors()) {
    EXPECT_FALSE(IsFootballLine(n.id())) << n.id();  // oil finds oil
  }
  api::SimilarUsersRequest user;
  user.set_user("fan");
  EXPECT_EQ(nodes[1].service->similarity()->SimilarUsers(user).status().code(),
            absl::StatusCode::kOk);
  api::SimilarDocumentsRequest wrong;
  wrong.add_theta(1.0f);  // one entry for a model of 8 topics
  auto refused = nodes[1].service->similarity()->SimilarDocuments(wrong);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("1 entries, not 8"),
            std::string::npos)
      << refused.status();
  EXPECT_EQ(nodes[0].service->similarity()->Sizes(),
            nodes[1].service->similarity()->Sizes());
  for (Node& n : nodes) EXPECT_TRUE(n.service->Stop().ok());
}

}  // namespace
}  // namespace latentd::service
