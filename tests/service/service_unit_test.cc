// Unit tests of the service's parts that need no process: the ingest log,
// merging into the token store, the settings table and the metrics text.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include "gtest/gtest.h"
#include "service/daemon_settings.h"
#include "service/ingest_log.h"
#include "service/internal/cpu_gate.h"
#include "service/latentd_service.h"
#include "service/metrics.h"
#include "service/store_merge.h"

namespace latentd::service {
namespace {

std::string TempPath(const std::string& name) {
  const std::string dir =
      ::testing::TempDir() + "/service_unit_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  return dir + "/" + name;
}

IngestRecord Rec(std::string user, std::vector<std::string> words,
                 std::string source = "") {
  IngestRecord r;
  r.user = std::move(user);
  r.words = std::move(words);
  r.source = std::move(source);
  r.doc_id.assign(1, 'd');  // not = "d": a GCC 12 -Wrestrict false positive
  return r;
}

// At most `slots` inside at once, admitted in arrival order.
TEST(CpuGate, AdmitsAtMostSlotsInArrivalOrder) {
  internal::CpuGate gate(1);
  auto held = std::make_unique<internal::CpuGate::Pass>(gate.Enter());
  absl::Mutex mu;
  std::vector<int> order;
  std::atomic<int> inside{0}, most{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 5; ++i) {
    threads.emplace_back([&, i] {
      internal::CpuGate::Pass pass = gate.Enter();
      const int now = ++inside;
      int m = most.load();
      while (now > m && !most.compare_exchange_weak(m, now)) {
      }
      {
        absl::MutexLock lock(&mu);
        order.push_back(i);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      --inside;
    });
    // Thread i holds its ticket before thread i + 1 starts.
    while (gate.load() < static_cast<uint64_t>(i) + 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  {
    absl::MutexLock lock(&mu);
    EXPECT_TRUE(order.empty()) << "entered past a held slot";
  }
  held.reset();
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(most.load(), 1);
  EXPECT_EQ(gate.load(), 0u);

  internal::CpuGate two(2);
  internal::CpuGate::Pass a = two.Enter();
  internal::CpuGate::Pass b = two.Enter();  // would block with one slot
  EXPECT_EQ(two.load(), 2u);
}

TEST(IngestLog, AppendsReopensAndCutsATornTail) {
  const std::string path = TempPath("ingest.log");
  ASSERT_TRUE(IngestLog::Remove(path).ok());
  std::vector<IngestRecord> existing;
  {
    auto log = IngestLog::Open(path, &existing);
    ASSERT_TRUE(log.ok()) << log.status();
    EXPECT_TRUE(existing.empty());
    std::vector<IngestRecord> recs = {Rec("", {"a", "b"}, "redis:s/1"),
                                      Rec("u", {"c"})};
    ASSERT_TRUE((*log)->Append(&recs).ok());
    EXPECT_EQ(recs[0].sequence, 1u);
    EXPECT_EQ(recs[1].sequence, 2u);
    std::vector<IngestRecord> more = {Rec("", {"d"})};
    ASSERT_TRUE((*log)->Append(&more).ok());
    EXPECT_EQ((*log)->last_sequence(), 3u);
  }
  // A torn append: half a record at the end.
  {
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, "\x40\x00\x00\x00garbage", 11), 11);
    ::close(fd);
  }
  auto log = IngestLog::Open(path, &existing);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_EQ(existing.size(), 3u);
  EXPECT_EQ(existing[0].source, "redis:s/1");
  EXPECT_EQ(existing[1].user, "u");
  EXPECT_EQ(existing[2].words, std::vector<std::string>{"d"});
  std::vector<IngestRecord> next = {Rec("", {"e"})};
  ASSERT_TRUE((*log)->Append(&next).ok());
  EXPECT_EQ(next[0].sequence, 4u);
}

TEST(IngestLog, DamageBeforeTheEndIsDataLoss) {
  const std::string path = TempPath("damaged.log");
  ASSERT_TRUE(IngestLog::Remove(path).ok());
  std::vector<IngestRecord> existing;
  {
    auto log = IngestLog::Open(path, &existing);
    ASSERT_TRUE(log.ok());
    std::vector<IngestRecord> recs = {Rec("", {"alpha"}), Rec("", {"beta"})};
    ASSERT_TRUE((*log)->Append(&recs).ok());
  }
  const int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_EQ(::pwrite(fd, "X", 1, 20), 1);  // inside the first record
  ::close(fd);
  auto log = IngestLog::Open(path, &existing);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(log.status().message().find(path), std::string::npos);
}

TEST(StoreMerge, MergesUsersAndIsIdempotent) {
  TokenStoreMeta meta;
  meta.num_topics = 4;
  meta.vocab_size = 2;
  auto store = CreateInMemoryTokenStore(meta);
  {
    auto w = store->Rewrite(meta);
    ASSERT_TRUE(w.ok());
    DocBatch b;
    std::vector<WordId> words = {0, 1};
    std::vector<TopicId> topics = {0, 1};
    b.AddDocument("doc0", "", words, topics);
    ASSERT_TRUE((*w)->Append(b).ok());
    ASSERT_TRUE((*w)->Commit().ok());
  }
  Vocabulary vocab;
  vocab.Add("x");
  vocab.Add("y");
  auto scan = ScanStore(store.get());
  ASSERT_TRUE(scan.ok());
  EXPECT_EQ(scan->merged_sequence, 0u);
  std::vector<IngestRecord> recs = {Rec("u", {"x", "new"}), Rec("", {"y"}),
                                    Rec("u", {"new"})};
  for (size_t i = 0; i < recs.size(); ++i) recs[i].sequence = i + 1;
  auto r = MergeIntoStore(recs, 1, store.get(), &vocab, &*scan);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->records, 3u);
  EXPECT_EQ(r->new_docs, 2u);  // the user's document and one of its own
  EXPECT_EQ(r->new_words, 1u);
  EXPECT_EQ(store->meta().num_docs, 3u);
  EXPECT_EQ(store->meta().num_tokens, 6u);
  EXPECT_EQ(store->meta().vocab_size, 3u);
  // Replaying the same records changes nothing.
  auto again = MergeIntoStore(recs, 1, store.get(), &vocab, &*scan);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->records, 0u);
  EXPECT_EQ(store->meta().num_tokens, 6u);
  // A later event of the same user grows its one document.
  std::vector<IngestRecord> later = {Rec("u", {"y", "x"})};
  later[0].sequence = 4;
  TopicTable before(3, 4);
  ASSERT_TRUE(RebuildTable(store.get(), &before).ok());
  auto grown = MergeIntoStore(later, 1, store.get(), &vocab, &*scan,
                              /*count_added=*/true);
  ASSERT_TRUE(grown.ok());
  // added_counts is exactly what the merge added to the table.
  ASSERT_TRUE(before.Apply(grown->added_counts).ok());
  TopicTable after(3, 4);
  ASSERT_TRUE(RebuildTable(store.get(), &after).ok());
  int64_t added = 0;
  for (const WordTopicDelta& d : grown->added_counts) added += d.delta;
  EXPECT_EQ(added, 2);
  for (WordId w = 0; w < 3; ++w) {
    for (TopicId k = 0; k < 4; ++k) {
      EXPECT_EQ(before.Get(w, k), after.Get(w, k)) << w << " " << k;
    }
  }
  EXPECT_EQ(store->meta().num_docs, 3u);
  EXPECT_EQ(store->meta().num_tokens, 8u);
  auto rescan = ScanStore(store.get());
  ASSERT_TRUE(rescan.ok());
  EXPECT_EQ(rescan->merged_sequence, 4u);
  auto users = CollectUsers(store.get());
  ASSERT_TRUE(users.ok());
  ASSERT_EQ(users->size(), 1u);
  EXPECT_EQ(users->at("u").tokens, 5u);
  EXPECT_EQ(users->at("u").events, 3u);
}

// A hand-off's record keeps its topics through the log; a record without
// topics reads back without them.
TEST(IngestLog, KeepsTheTopicsOfAHandedOffRecord) {
  const std::string path = TempPath("handoff.log");
  ASSERT_TRUE(IngestLog::Remove(path).ok());
  std::vector<IngestRecord> existing;
  {
    auto log = IngestLog::Open(path, &existing);
    ASSERT_TRUE(log.ok()) << log.status();
    std::vector<IngestRecord> recs = {Rec("", {"a", "b", "a"}, "handoff:n/0"),
                                      Rec("", {"c"})};
    recs[0].topics = {2, 0, 7};
    ASSERT_TRUE((*log)->Append(&recs).ok());
  }
  auto log = IngestLog::Open(path, &existing);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_EQ(existing.size(), 2u);
  EXPECT_EQ(existing[0].topics, (std::vector<TopicId>{2, 0, 7}));
  EXPECT_EQ(existing[0].source, "handoff:n/0");
  EXPECT_TRUE(existing[1].topics.empty());
  // Compaction leaves a tombstone without words or topics.
  ASSERT_TRUE((*log)->Compact(2, 10).ok());
  log = IngestLog::Open(path, &existing);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_FALSE(existing.empty());
  EXPECT_TRUE(existing[0].words.empty());
  EXPECT_TRUE(existing[0].topics.empty());
}

// A record that carries topics keeps them (even over a TopicAssigner); one
// whose topics do not fit is refused and the store stays as it was.
TEST(StoreMerge, KeepsTheTopicsAHandedOffRecordCarries) {
  TokenStoreMeta meta;
  meta.num_topics = 4;
  auto store = CreateInMemoryTokenStore(meta);
  Vocabulary vocab;
  auto scan = ScanStore(store.get());
  ASSERT_TRUE(scan.ok());
  std::vector<IngestRecord> bad = {Rec("", {"x", "y"})};
  bad[0].sequence = 1;
  bad[0].topics = {1, 4};  // 4 is not below K
  auto refused = MergeIntoStore(bad, 1, store.get(), &vocab, &*scan);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->meta().num_docs, 0u);
  bad[0].topics = {1};  // one topic for two words
  refused = MergeIntoStore(bad, 1, store.get(), &vocab, &*scan);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);

  std::vector<IngestRecord> recs = {Rec("", {"x", "y", "x"})};
  recs[0].sequence = 1;
  recs[0].topics = {3, 1, 3};
  TopicAssigner zeros = [](std::span<const WordId> words, uint64_t) {
    return absl::StatusOr<std::vector<TopicId>>(
        std::vector<TopicId>(words.size(), 0));
  };
  auto r = MergeIntoStore(recs, 1, store.get(), &vocab, &*scan,
                          /*count_added=*/true, zeros);
  ASSERT_TRUE(r.ok()) << r.status();
  const WordId x = vocab.Find("x").value();
  const WordId y = vocab.Find("y").value();
  std::vector<WordTopicDelta> want = {{x, 3, 2}, {y, 1, 1}};
  std::sort(want.begin(), want.end(), [](const auto& a, const auto& b) {
    return std::pair(a.word, a.topic) < std::pair(b.word, b.topic);
  });
  ASSERT_EQ(r->added_counts.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(r->added_counts[i].word, want[i].word);
    EXPECT_EQ(r->added_counts[i].topic, want[i].topic);
    EXPECT_EQ(r->added_counts[i].delta, want[i].delta);
  }
}

// A small raw-text corpus of two obvious themes.
std::string WriteCorpus(const std::string& dir) {
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/corpus.txt";
  FILE* f = std::fopen(path.c_str(), "w");
  const char* themes[] = {"oil prices opec crude barrel energy market",
                          "football match goal team player season coach"};
  for (int d = 0; d < 60; ++d) {
    std::fprintf(f, "%s %s\n", themes[d % 2], themes[d % 2]);
  }
  std::fclose(f);
  return path;
}

ServiceOptions SmallService(const std::string& dir) {
  ServiceOptions o;
  o.data_dir = dir + "/node";
  o.corpus.path = WriteCorpus(dir);
  o.trainer.num_topics = 4;
  o.trainer.eval_every = 0;
  o.max_sweeps = 3;
  o.compact_log_bytes = 1;  // compact after every merge
  return o;
}

// Fields a client sends are bounded (a 1 MB word and a 3 MB user id were
// kept forever): long ids and word lists are refused naming the field and
// the setting; a long word in a text is dropped; a long query word refused.
TEST(LatentdService, IngestedFieldsAreBounded) {
  const std::string dir = TempPath("svc-limits");
  std::filesystem::remove_all(dir);
  ServiceOptions o = SmallService(dir);
  o.max_id_bytes = 16;
  o.max_word_bytes = 8;
  MetricsRegistry metrics;
  auto s = LatentdService::Open(o, &metrics);
  ASSERT_TRUE(s.ok()) << s.status();
  auto ingest = [&](const std::string& text, const std::string& user,
                    const std::string& source) {
    api::IngestRequest r;
    api::Document* d = r.add_documents();
    d->set_text(text);
    d->set_user(user);
    d->set_source(source);
    return (*s)->Ingest(r);
  };
  auto long_user = ingest("oil prices", std::string(17, 'u'), "");
  ASSERT_FALSE(long_user.ok());
  EXPECT_EQ(long_user.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(long_user.status().message().find(
                "document 0: user id of 17 bytes is over the limit of 16 "
                "(max-id-bytes)"),
            std::string::npos)
      << long_user.status();
  auto long_source = ingest("oil prices", "", std::string(3 << 20, 's'));
  ASSERT_FALSE(long_source.ok());
  EXPECT_NE(long_source.status().message().find("source of 3145728 bytes"),
            std::string::npos)
      << long_source.status();
  // "abcdefghijklm" (13 bytes) is dropped; the document keeps "oil".
  auto long_word = ingest("oil abcdefghijklm", "", "");
  ASSERT_TRUE(long_word.ok()) << long_word.status();
  auto only_long = ingest("abcdefghijklm", "", "");
  ASSERT_FALSE(only_long.ok());
  EXPECT_NE(only_long.status().message().find("empty document"),
            std::string::npos)
      << only_long.status();
  api::WordTopicsRequest q;
  q.set_word(std::string(1 << 20, 'w'));
  auto topics = (*s)->WordTopics(q);
  ASSERT_FALSE(topics.ok());
  EXPECT_NE(topics.status().message().find("max-word-bytes"), std::string::npos)
      << topics.status();
  IngestRecord words;
  words.words = {"oil", std::string(9, 'x')};
  EXPECT_NE((*s)->CheckDocumentLimits(words).message().find(
                "word 1 of 9 bytes is over the limit of 8"),
            std::string::npos);
  ASSERT_TRUE((*s)->Stop().ok());
}

TEST(LatentdService, InfersDeterministicallyAndDropsRedeliveries) {
  const std::string dir = TempPath("svc");
  std::filesystem::remove_all(dir);
  const ServiceOptions o = SmallService(dir);
  {
    MetricsRegistry metrics;
    auto s = LatentdService::Open(o, &metrics);
    ASSERT_TRUE(s.ok()) << s.status();
    api::InferDocumentRequest q;
    q.set_text("crude oil and opec");
    q.set_seed(5);
    auto a = (*s)->InferDocument(q);
    auto b = (*s)->InferDocument(q);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(a->SerializeAsString(), b->SerializeAsString());
    EXPECT_EQ(a->known_tokens(), 3u);

    std::vector<IngestRecord> recs = {
        Rec("fan", {"goal", "newword"}, "redis:s/1-0")};
    auto n = (*s)->IngestRecords(recs);
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(*n, 1u);
    n = (*s)->IngestRecords(recs);  // redelivered: dropped
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(*n, 0u);
    EXPECT_TRUE((*s)->SourceIngested("redis:s/1-0"));
    // Not merged yet (training not started): the user is unknown.
    api::GetUserProfileRequest p;
    p.set_user("fan");
    EXPECT_EQ((*s)->GetUserProfile(p).status().code(),
              absl::StatusCode::kNotFound);
    // Stop without merging; the log holds the record.
    ASSERT_TRUE((*s)->Stop().ok());
  }
  MetricsRegistry metrics;
  auto s = LatentdService::Open(o, &metrics);  // replays and merges
  ASSERT_TRUE(s.ok()) << s.status();
  std::vector<IngestRecord> again = {Rec("fan", {"goal"}, "redis:s/1-0")};
  auto n = (*s)->IngestRecords(again);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);
  api::GetUserProfileRequest p;
  p.set_user("fan");
  auto profile = (*s)->GetUserProfile(p);
  ASSERT_TRUE(profile.ok()) << profile.status();
  EXPECT_EQ(profile->tokens(), 2u);
  EXPECT_EQ(profile->events(), 1u);
  auto st = (*s)->Status(api::StatusRequest());
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->documents(), 61u);
  EXPECT_EQ(st->pending(), 0u);
  EXPECT_EQ(st->merged_sequence(), 1u);
  api::WordTopicsRequest w;
  w.set_word("newword");
  EXPECT_TRUE((*s)->WordTopics(w).ok());
  // Training runs to max_sweeps and the view follows.
  (*s)->Start();
  for (int i = 0; i < 200; ++i) {
    st = (*s)->Status(api::StatusRequest());
    if (st->version().sweep() >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(st->version().sweep(), 3u);
  EXPECT_TRUE((*s)->Stop().ok());
  s->reset();
  // The compacted log still knows the source, and the sequence goes on.
  auto third = LatentdService::Open(o, &metrics);
  ASSERT_TRUE(third.ok()) << third.status();
  n = (*third)->IngestRecords(again);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);
  std::vector<IngestRecord> fresh = {Rec("", {"energy"})};
  ASSERT_TRUE((*third)->IngestRecords(fresh).ok());
  api::StatusRequest sr;
  EXPECT_EQ((*third)->Status(sr)->ingested(), 1u);
  EXPECT_TRUE((*third)->Stop().ok());
}

// --sweep-interval-ms spaces the sweeps, and a reload applies at once,
// also to a wait under way. Each sweep commits the token store (an fsync),
// which on a CI host busy with other tests took up to 2 s: so the test
// never asks for sweeps faster than that, only that a long interval holds
// them back and that lifting it lets them go on.
TEST(LatentdService, SweepIntervalSpacesTheSweeps) {
  const std::string dir = TempPath("interval");
  std::filesystem::remove_all(dir);
  ServiceOptions o = SmallService(dir);
  o.max_sweeps = 0;
  o.sweep_interval_ms = 1000;
  MetricsRegistry metrics;
  auto s = LatentdService::Open(o, &metrics);
  ASSERT_TRUE(s.ok()) << s.status();
  auto sweep = [&] {
    return (*s)->Status(api::StatusRequest())->version().sweep();
  };
  // Waits up to `limit` for the published sweep to pass `after`.
  auto wait_past = [&](uint64_t after, std::chrono::seconds limit) {
    const auto start = std::chrono::steady_clock::now();
    while (sweep() <= after &&
           std::chrono::steady_clock::now() - start < limit) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return sweep();
  };
  (*s)->Start();
  // Timed from the first published sweep: the start (the progressive
  // pass, the first publish) took over a second in a loaded ASan build.
  const uint64_t first = wait_past(0, std::chrono::seconds(20));
  ASSERT_GE(first, 1u);
  const auto began = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(3100));
  const uint64_t spaced = sweep();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began)
          .count();
  // One sweep a second at most (and a published view may lag by one).
  EXPECT_LE(spaced - first, uint64_t(seconds) + 2) << seconds << " s";
  // And they go on under the interval.
  EXPECT_GT(wait_past(spaced, std::chrono::seconds(10)), spaced);

  // A minute's interval: once the turn under way has ended, no more.
  o.sweep_interval_ms = 60000;
  ASSERT_TRUE((*s)->Reconfigure(o).ok());
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const uint64_t held = sweep();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const uint64_t still = sweep();
  EXPECT_LE(still, held + 1);

  // Lifted: the minute's wait ends now, and sweeps follow back to back.
  o.sweep_interval_ms = 0;
  ASSERT_TRUE((*s)->Reconfigure(o).ok());
  EXPECT_GT(wait_past(still + 3, std::chrono::seconds(30)), still + 3);
  EXPECT_TRUE((*s)->Stop().ok());
}

// Documents handed off by a leaving cluster node (words and topics): each
// malformed one is refused saying what is wrong, nothing accepted; a good
// one is durable at once and joins the store with its own topics.
TEST(LatentdService, TakesHandedOffDocumentsWithTheirTopics) {
  const std::string dir = TempPath("handoff_svc");
  std::filesystem::remove_all(dir);
  const ServiceOptions o = SmallService(dir);
  auto handed = [](std::vector<std::string> words,
                   std::vector<uint32_t> topics) {
    api::IngestRequest req;
    req.set_local(true);
    api::Document* d = req.add_documents();
    d->set_source("handoff:n/7");
    for (const std::string& w : words) d->add_words(w);
    for (uint32_t k : topics) d->add_topics(k);
    return req;
  };
  {
    MetricsRegistry metrics;
    auto s = LatentdService::Open(o, &metrics);
    ASSERT_TRUE(s.ok()) << s.status();
    struct Bad {
      api::IngestRequest req;
      const char* says;
    };
    std::vector<Bad> bad = {
        {handed({"oil", "zorbleword"}, {1, 2}), "local"},
        {handed({"oil"}, {1}), "not both"},
        {handed({"oil", "crude"}, {1}), "one topic per word"},
        {handed({"oil"}, {4}), "not below K=4"},
        {handed({"oil price"}, {0}), "space"},
        {handed({""}, {0}), "empty"},
    };
    bad[0].req.set_local(false);
    bad[1].req.mutable_documents(0)->set_text("oil");
    for (const Bad& b : bad) {
      auto r = (*s)->Ingest(b.req);
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
          << b.says;
      EXPECT_NE(r.status().message().find(b.says), std::string::npos)
          << r.status();
    }
    auto ok =
        (*s)->Ingest(handed({"zorbleword", "oil", "zorbleword"}, {3, 2, 3}));
    ASSERT_TRUE(ok.ok()) << ok.status();
    EXPECT_EQ(ok->accepted(), 1u);
    auto again = (*s)->Ingest(handed({"zorbleword"}, {3}));  // same source
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->accepted(), 0u);
    ASSERT_TRUE((*s)->Stop().ok());
  }
  MetricsRegistry metrics;
  auto s = LatentdService::Open(o, &metrics);  // replays and merges
  ASSERT_TRUE(s.ok()) << s.status();
  auto st = (*s)->Status(api::StatusRequest());
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->documents(), 61u);
  EXPECT_EQ(st->merged_sequence(), 1u);
  api::WordTopicsRequest w;
  w.set_word("zorbleword");
  auto topics = (*s)->WordTopics(w);
  ASSERT_TRUE(topics.ok()) << topics.status();
  EXPECT_EQ(topics->count(), 2);
  ASSERT_GE(topics->topics_size(), 1);
  EXPECT_EQ(topics->topics(0).topic(), 3u);  // both tokens kept topic 3
  EXPECT_TRUE((*s)->Stop().ok());
}

TEST(LatentdService, ClusterModeRefusesUsersUntilJoined) {
  const std::string dir = TempPath("svc-joining");
  std::filesystem::remove_all(dir);
  ServiceOptions o = SmallService(dir);
  o.cluster_mode = true;
  MetricsRegistry metrics;
  auto s = LatentdService::Open(o, &metrics);
  ASSERT_TRUE(s.ok()) << s.status();
  api::IngestRequest ingest;
  api::Document* d = ingest.add_documents();
  d->set_user("fan");
  d->set_text("goal team season");
  EXPECT_EQ((*s)->Ingest(ingest).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ((*s)->IngestRecords({Rec("fan", {"goal"})}).status().code(),
            absl::StatusCode::kUnavailable);
  api::GetUserProfileRequest p;
  p.set_user("fan");
  EXPECT_EQ((*s)->GetUserProfile(p).status().code(),
            absl::StatusCode::kUnavailable);
  api::InferDocumentRequest q;
  q.set_text("crude oil and opec");
  EXPECT_TRUE((*s)->InferDocument(q).ok());
  std::filesystem::remove_all(dir);
}

TEST(IngestLog, CompactKeepsTombstonesAndSequences) {
  const std::string path = TempPath("compact.log");
  ASSERT_TRUE(IngestLog::Remove(path).ok());
  std::vector<IngestRecord> existing;
  auto log = IngestLog::Open(path, &existing);
  ASSERT_TRUE(log.ok());
  std::vector<IngestRecord> recs = {
      Rec("", {"a"}, "redis:s/1"), Rec("", {"b"}), Rec("", {"c"}, "redis:s/3"),
      Rec("", {"d"}, "redis:s/4"), Rec("", {"e"})};
  ASSERT_TRUE((*log)->Append(&recs).ok());
  const uint64_t before = (*log)->size_bytes();
  // Records 1..4 are merged; keep one source.
  ASSERT_TRUE((*log)->Compact(4, 1).ok());
  EXPECT_LT((*log)->size_bytes(), before);
  std::vector<IngestRecord> more = {Rec("", {"f"})};
  ASSERT_TRUE((*log)->Append(&more).ok());
  EXPECT_EQ(more[0].sequence, 6u);
  log->reset();
  auto reopened = IngestLog::Open(path, &existing);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  ASSERT_EQ(existing.size(), 3u);
  EXPECT_EQ(existing[0].sequence, 4u);  // the newest sourced tombstone
  EXPECT_EQ(existing[0].source, "redis:s/4");
  EXPECT_TRUE(existing[0].words.empty());
  EXPECT_EQ(existing[1].sequence, 5u);  // not merged: whole
  EXPECT_EQ(existing[1].words, std::vector<std::string>{"e"});
  EXPECT_EQ(existing[2].sequence, 6u);
  EXPECT_EQ((*reopened)->last_sequence(), 6u);
}

// --consistency auto (the default) is async for a topic node, and marks the
// config so that a graph-only node joins under bsp; any other value is
// what it says.
TEST(DaemonSettings, ConsistencyAutoIsAsyncAndMarked) {
  auto c = ResolveConfig({}, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->service.consistency_auto);
  EXPECT_FALSE(c->cluster.consistency.bounded);
  c = ResolveConfig({{"consistency", "auto"}}, {{"consistency", "bsp"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->service.consistency_auto);
  EXPECT_TRUE(c->cluster.consistency.bounded);
  EXPECT_EQ(c->cluster.consistency.staleness, 0u);
  c = ResolveConfig({}, {{"consistency", "ssp:auto"}});
  EXPECT_FALSE(c.ok());
}

TEST(DaemonSettings, DefaultsFileAndFlags) {
  auto c = ResolveConfig({{"topics", "50"}, {"http", "127.0.0.1:0"}},
                         {{"topics", "60"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->service.trainer.num_topics, 60u);
  EXPECT_EQ(c->http.port, 0);
  EXPECT_EQ(c->rpc.port, 7071);
  EXPECT_EQ(c->service.checkpoint_every, 100);
  EXPECT_FALSE(ResolveConfig({{"topics", "0"}}, {}).ok());
  EXPECT_FALSE(ResolveConfig({{"no-such", "1"}}, {}).ok());
  EXPECT_FALSE(ResolveConfig({}, {{"http", "nohostport"}}).ok());
  // The example config parses back to the defaults.
  const std::string path = TempPath("latentd.conf");
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(ExampleConfig().c_str(), f);
  std::fclose(f);
  auto values = ReadConfigFile(path);
  ASSERT_TRUE(values.ok()) << values.status();
  size_t with_default = 0;
  for (const SettingSpec& s : DaemonSettings()) {
    with_default += !s.default_value.empty();
  }
  EXPECT_EQ(values->size(), with_default);
  f = std::fopen(path.c_str(), "w");
  std::fputs("topics = 12\nbogus line\n", f);
  std::fclose(f);
  values = ReadConfigFile(path);
  ASSERT_FALSE(values.ok());
  EXPECT_NE(values.status().message().find(":2:"), std::string::npos);
}

TEST(Metrics, RendersPrometheusText) {
  MetricsRegistry m;
  m.AddCounter("x_total", "X things")->Add(3);
  m.AddGauge("y", "Y level")->Set(1.5);
  Histogram* h = m.AddHistogram("z_seconds", "Z latency", "call=\"A\"");
  h->Observe(0.0002);
  h->Observe(3);
  const std::string text = m.RenderText();
  EXPECT_NE(text.find("# TYPE x_total counter\nx_total 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("y 1.5\n"), std::string::npos);
  EXPECT_NE(text.find("z_seconds_bucket{call=\"A\",le=\"0.00025\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("z_seconds_bucket{call=\"A\",le=\"+Inf\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("z_seconds_count{call=\"A\"} 2\n"), std::string::npos);
}

}  // namespace
}  // namespace latentd::service
