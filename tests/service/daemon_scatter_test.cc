// A cluster answers from every node's documents: two latentd nodes on
// 127.0.0.1 with a private Redis, documents ingested (with ids) through A
// only. Asked at B, GetDocumentTopics finds A's documents, TopicDocuments
// merges both nodes' top documents (sorted, each id once: both train the
// same corpus, so every training document is on both), SimilarDocuments
// ranks documents that live only on A, and SimilarUsers finds users on
// either node. With A killed, B still answers, partial, naming A. With
// API tokens on, the peers are asked with the peer token.
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

// A node's flags: 10 topics, `sweeps` sweeps, no replica copies (a
// document is on the node it was ingested at only), and `extra`.
std::vector<std::string> NodeArgs(const char* sweeps,
                                  const std::vector<std::string>& extra) {
  std::vector<std::string> args = TrainingArgs("10", sweeps);
  args.push_back("--replicas");
  args.push_back("1");
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
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
  // Enough sweeps after the ingest for A's copies to settle together.
  ASSERT_TRUE(
      cluster.Start(2, NodeArgs("60", {"--similarity-refresh-seconds", "1"})));
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

  // SimilarDocuments at B by A's document: the nearest of both nodes'
  // documents to its mixture (each node asked locally with that θ, merged
  // here by hand), the queried document left out; A's copies of its text
  // are among them. By its text: A's copies again.
  api::SimilarDocumentsRequest sq;
  sq.set_document(OnA(0));
  sq.set_top(10);
  api::SimilarDocumentsResponse near;
  s = cb->Call(Method::kSimilarDocuments, sq, &near);
  ASSERT_TRUE(s.ok()) << s << b->Log();
  EXPECT_EQ(near.missing_members_size(), 0);
  api::SimilarDocumentsRequest by_theta;
  by_theta.set_local(true);
  by_theta.set_top(10);
  by_theta.set_exclude(OnA(0));
  by_theta.mutable_theta()->Resize(at_a.topics_size(), 0.0f);
  for (const api::TopicWeight& t : at_a.topics()) {
    by_theta.mutable_theta()->Set(static_cast<int>(t.topic()),
                                  static_cast<float>(t.weight()));
  }
  std::vector<std::pair<double, std::string>> expected;
  for (auto* c : {ca.get(), cb.get()}) {
    api::SimilarDocumentsResponse part;
    s = c->Call(Method::kSimilarDocuments, by_theta, &part);
    ASSERT_TRUE(s.ok()) << s;
    for (const api::Neighbor& n : part.neighbors()) {
      expected.emplace_back(n.distance(), n.id());
    }
  }
  std::sort(expected.begin(), expected.end());
  std::vector<std::string> want, got;
  std::set<std::string> taken;
  for (const auto& [distance, id] : expected) {
    if (want.size() < 10 && taken.insert(id).second) want.push_back(id);
  }
  for (const api::Neighbor& n : near.neighbors()) got.push_back(n.id());
  EXPECT_EQ(got, want);
  int copies = 0;
  for (const std::string& id : got) {
    EXPECT_NE(id, OnA(0));
    copies += absl::StartsWith(id, "only-on-a-");
  }
  EXPECT_GT(copies, 0) << near.ShortDebugString();
  sq.clear_document();
  sq.set_text(text);
  s = cb->Call(Method::kSimilarDocuments, sq, &near);
  ASSERT_TRUE(s.ok()) << s;
  copies = 0;
  for (const api::Neighbor& n : near.neighbors()) {
    copies += absl::StartsWith(n.id(), "only-on-a-");
  }
  EXPECT_GT(copies, 0) << near.ShortDebugString();
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

// With API tokens on, a node asks its peers with the peer token: a reader
// at B gets A's documents, and no member is missing from the answers.
TEST(DaemonScatter, PeerCallsCarryThePeerTokenWhenTokensAreOn) {
  TestCluster cluster({.name = "scatter-auth"});
  ASSERT_TRUE(cluster.ok());
  const std::string tokens = cluster.dir() + "/tokens";
  const std::string kRead = "read-token-0123456789abcdef";
  const std::string kWrite = "write-token-0123456789abcdef";
  {
    std::ofstream f(tokens);
    f << "read " << kRead << "\nwrite " << kWrite
      << "\nadmin admin-token-0123456789abcdef\n";
  }
  ASSERT_TRUE(cluster.Start(2, NodeArgs("3", {"--api-tokens", tokens})));
  Daemon* a = cluster.node(0);
  Daemon* b = cluster.node(1);
  auto ca = a->Client(Protocol::kTcp);
  auto cb = b->Client(Protocol::kHttpJson);
  ca->set_token(kWrite);
  cb->set_token(kRead);
  api::IngestRequest ingest;
  api::Document* d = ingest.add_documents();
  d->set_id(OnA(0));
  d->set_text(PlantedText());
  api::IngestResponse ack;
  absl::Status s = ca->Call(Method::kIngest, ingest, &ack);
  ASSERT_TRUE(s.ok()) << s << a->Log();
  auto done = [](const api::StatusResponse& st) {
    return !st.training() && st.pending() == 0;
  };
  ASSERT_TRUE(WaitStatus(ca.get(), done, 180).ok()) << a->Log();
  api::GetDocumentTopicsRequest doc;
  doc.set_document(OnA(0));
  api::GetDocumentTopicsResponse found;
  s = Eventually(
      [&] { return cb->Call(Method::kGetDocumentTopics, doc, &found); }, 60);
  ASSERT_TRUE(s.ok()) << s << a->Log() << b->Log();
  EXPECT_EQ(found.missing_members_size(), 0);
  api::TopicDocumentsRequest td;
  td.set_topic(found.topics(0).topic());
  api::TopicDocumentsResponse top;
  s = cb->Call(Method::kTopicDocuments, td, &top);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(top.missing_members_size(), 0) << top.ShortDebugString();
  cluster.StopAll();
}

}  // namespace
}  // namespace latentd::testing
