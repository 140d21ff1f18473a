// A cluster answers from every node's documents: two latentd nodes on
// 127.0.0.1 with a private Redis, documents ingested (with ids) through A
// only. Asked at B, GetDocumentTopics finds A's documents, TopicDocuments
// merges both nodes' top documents (sorted, each id once: both train the
// same corpus, so every training document is on both), SimilarDocuments
// ranks documents that live only on A, and SimilarUsers finds users on
// either node. With A killed, B still answers, partial, naming A.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/service/daemon_cluster_util.h"
#include "tests/service/daemon_harness.h"
#include "tests/testdata/test_corpus.h"

namespace latentd::testing {
namespace {

using service::Method;
using service::Protocol;

constexpr int kOnA = 5;  // documents ingested through A

std::string OnA(int i) { return absl::StrCat("only-on-a-", i); }

// A text of three words of the corpus's vocabulary, 60 tokens: its
// mixture is concentrated, so its copies are each other's nearest.
std::string PlantedText() {
  std::ifstream vocab(TestCorpusFile("vocab.txt"));
  std::vector<std::string> words;
  std::string w;
  while (words.size() < 3 && std::getline(vocab, w)) words.push_back(w);
  std::string text;
  for (int i = 0; i < 20; ++i)
    absl::StrAppend(&text, absl::StrJoin(words, " "), " ");
  return text;
}

// Waits (up to `seconds`) until `call` answers OK; its last status.
template <typename Call>
absl::Status Eventually(Call call, double seconds) {
  absl::Status s;
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(static_cast<int>(seconds * 1000));
  do {
    s = call();
    if (s.ok()) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  } while (std::chrono::steady_clock::now() < end);
  return s;
}

std::vector<std::string> Ids(const api::TopicDocumentsResponse& r) {
  std::vector<std::string> ids;
  for (const api::DocumentWeight& d : r.documents())
    ids.push_back(d.document());
  return ids;
}

TEST(DaemonScatter, BAnswersFromADocumentsAndPartiallyWithoutA) {
  TestCluster cluster({.name = "scatter"});
  ASSERT_TRUE(cluster.ok());
  std::vector<std::string> args = TrainingArgs("10", "10");
  for (const char* f :
       {"--replicas", "1", "--similarity-refresh-seconds", "1"}) {
    args.push_back(f);
  }
  ASSERT_TRUE(cluster.Start(2, args));
  Daemon* a = cluster.node(0);
  Daemon* b = cluster.node(1);
  auto ca = a->Client(Protocol::kTcp);
  auto cb = b->Client(Protocol::kTcp);

  api::IngestRequest ingest;
  const std::string text = PlantedText();
  for (int i = 0; i < kOnA; ++i) {
    api::Document* d = ingest.add_documents();
    d->set_id(OnA(i));
    d->set_text(text);
  }
  ingest.add_documents()->set_user("reader-a");
  ingest.mutable_documents(kOnA)->set_text(text);
  api::IngestResponse ack;
  ASSERT_TRUE(ca->Call(Method::kIngest, ingest, &ack).ok()) << a->Log();
  ASSERT_EQ(ack.accepted(), static_cast<uint64_t>(kOnA + 1));
  auto done = [](const api::StatusResponse& s) {
    return !s.training() && s.pending() == 0;
  };
  ASSERT_TRUE(WaitStatus(ca.get(), done, 180).ok()) << a->Log();
  ASSERT_TRUE(WaitStatus(cb.get(), done, 180).ok()) << b->Log();
  // A's document table and similarity index hold them (asked locally).
  api::GetDocumentTopicsRequest doc;
  doc.set_document(OnA(0));
  doc.set_local(true);
  api::GetDocumentTopicsResponse at_a;
  ASSERT_TRUE(
      Eventually(
          [&] { return ca->Call(Method::kGetDocumentTopics, doc, &at_a); }, 60)
          .ok())
      << a->Log();
  api::SimilarDocumentsRequest similar_local;
  similar_local.set_document(OnA(0));
  similar_local.set_local(true);
  api::SimilarDocumentsResponse sim;
  ASSERT_TRUE(Eventually(
                  [&] {
                    return ca->Call(Method::kSimilarDocuments, similar_local,
                                    &sim);
                  },
                  60)
                  .ok())
      << a->Log();

  // GetDocumentTopics at B: not B's own (local), found on A otherwise.
  api::GetDocumentTopicsResponse at_b;
  EXPECT_EQ(cb->Call(Method::kGetDocumentTopics, doc, &at_b).code(),
            absl::StatusCode::kNotFound);
  doc.set_local(false);
  absl::Status s = cb->Call(Method::kGetDocumentTopics, doc, &at_b);
  ASSERT_TRUE(s.ok()) << s << b->Log();
  EXPECT_EQ(at_b.document(), OnA(0));
  EXPECT_EQ(at_b.tokens(), at_a.tokens());
  EXPECT_GT(at_b.tokens(), 0u);
  EXPECT_EQ(at_b.topics_size(), 10);
  EXPECT_EQ(at_b.missing_members_size(), 0);
  doc.set_document("on-no-node");
  s = cb->Call(Method::kGetDocumentTopics, doc, &at_b);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "none of the 2")) << s;

  // TopicDocuments at B: both nodes' lists merged by weight, each id once.
  const uint32_t topic = at_a.topics(0).topic();
  api::TopicDocumentsRequest td;
  td.set_topic(topic);
  td.set_top(100);
  td.set_local(true);
  api::TopicDocumentsResponse la, lb, merged;
  ASSERT_TRUE(ca->Call(Method::kTopicDocuments, td, &la).ok());
  ASSERT_TRUE(cb->Call(Method::kTopicDocuments, td, &lb).ok());
  td.set_local(false);
  ASSERT_TRUE(cb->Call(Method::kTopicDocuments, td, &merged).ok());
  EXPECT_EQ(merged.missing_members_size(), 0);
  std::map<std::string, double> best;  // the expected merge, by hand
  for (const auto* r : {&la, &lb}) {
    for (const api::DocumentWeight& d : r->documents()) {
      best[d.document()] = std::max(best[d.document()], d.weight());
    }
  }
  std::set<std::string> seen;
  for (int i = 0; i < merged.documents_size(); ++i) {
    const api::DocumentWeight& d = merged.documents(i);
    EXPECT_TRUE(seen.insert(d.document()).second) << d.document() << " twice";
    EXPECT_EQ(d.weight(), best[d.document()]) << d.document();
    if (i > 0) {
      EXPECT_LE(d.weight(), merged.documents(i - 1).weight());
    }
  }
  EXPECT_EQ(merged.documents_size(),
            std::min<int>(100, static_cast<int>(best.size())));
  const std::vector<std::string> ids = Ids(merged);
  EXPECT_NE(std::find(ids.begin(), ids.end(), OnA(0)), ids.end())
      << "A's planted document is not among topic " << topic << "'s top 100 "
      << "at B: " << absl::StrJoin(ids, " ");
  for (const std::string& id : Ids(lb)) {
    EXPECT_FALSE(absl::StartsWith(id, "only-on-a-")) << id << " on B";
  }

  // SimilarDocuments at B: by A's document, and by its text, A's copies
  // rank first; the queried document is left out.
  api::SimilarDocumentsRequest sq;
  sq.set_document(OnA(0));
  sq.set_top(kOnA - 1);
  api::SimilarDocumentsResponse near;
  s = cb->Call(Method::kSimilarDocuments, sq, &near);
  ASSERT_TRUE(s.ok()) << s << b->Log();
  EXPECT_EQ(near.missing_members_size(), 0);
  ASSERT_EQ(near.neighbors_size(), kOnA - 1);
  for (int i = 0; i < near.neighbors_size(); ++i) {
    EXPECT_TRUE(absl::StartsWith(near.neighbors(i).id(), "only-on-a-"))
        << i << ": " << near.ShortDebugString();
    EXPECT_NE(near.neighbors(i).id(), OnA(0));
    if (i > 0) {
      EXPECT_LE(near.neighbors(i - 1).distance(), near.neighbors(i).distance());
    }
  }
  sq.clear_document();
  sq.set_text(text);
  s = cb->Call(Method::kSimilarDocuments, sq, &near);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_GT(near.neighbors_size(), 0);
  EXPECT_TRUE(absl::StartsWith(near.neighbors(0).id(), "only-on-a-"))
      << near.ShortDebugString();
  EXPECT_GT(near.staleness().indexed(), 2 * TestCorpusSize().documents - 1);

  // SimilarUsers at B of a user that lives on either node: answered.
  api::SimilarUsersRequest su;
  su.set_user("reader-a");
  api::SimilarUsersResponse users;
  s = Eventually([&] { return cb->Call(Method::kSimilarUsers, su, &users); },
                 30);
  EXPECT_TRUE(s.ok()) << s << b->Log();
  EXPECT_EQ(users.missing_members_size(), 0);

  // A is killed: B answers from its own documents, partial, naming A.
  ASSERT_EQ(a->Stop(SIGKILL, 10), SIGKILL);
  td.set_top(10);
  api::TopicDocumentsResponse partial;
  s = cb->Call(Method::kTopicDocuments, td, &partial);
  ASSERT_TRUE(s.ok()) << s << b->Log();
  ASSERT_EQ(partial.missing_members_size(), 1);
  EXPECT_EQ(partial.missing_members(0), a->tcp());
  EXPECT_EQ(partial.documents_size(), 10);
  sq.set_top(3);
  s = cb->Call(Method::kSimilarDocuments, sq, &near);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(near.missing_members_size(), 1);
  EXPECT_EQ(near.missing_members(0), a->tcp());
  for (const api::Neighbor& n : near.neighbors()) {
    EXPECT_FALSE(absl::StartsWith(n.id(), "only-on-a-")) << n.id();
  }
  doc.set_document(OnA(0));
  s = cb->Call(Method::kGetDocumentTopics, doc, &at_b);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), a->tcp())) << s;
  auto [rc, out] = Latentctl({"topic-documents", absl::StrCat(topic), "--addr",
                              b->tcp(), "--protocol", "tcp"});
  EXPECT_EQ(rc, 0) << out;
  EXPECT_TRUE(absl::StrContains(
      out, absl::StrCat("# partial answer: no answer from cluster member ",
                        a->tcp())))
      << out;
  std::tie(rc, out) =
      Latentctl({"topic-documents", absl::StrCat(topic), "--addr", b->http(),
                 "--protocol", "json", "--json"});
  EXPECT_EQ(rc, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "\"missingMembers\"")) << out;
  EXPECT_EQ(b->Stop(), 0) << b->Log();
}

}  // namespace
}  // namespace latentd::testing
