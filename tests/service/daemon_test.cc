// Multi-process tests of latentd (issue 5 "Must show"): each starts its own
// redis-server (Unix socket only) and latentd (127.0.0.1, ports picked by
// the daemon) and stops them at the end.
#include <google/protobuf/util/message_differencer.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "corpora/token_store.h"
#include "corpora/tokenizer.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "sampler/model_snapshot.h"
#include "service/store_merge.h"
#include "sync/transport/frame.h"
#include "sync/transport/transport.h"
#include "tests/service/daemon_harness.h"

namespace latentd::testing {
namespace {

using service::Method;
using service::Protocol;

constexpr Protocol kAll[] = {Protocol::kHttpJson, Protocol::kHttpProto,
                             Protocol::kTcp};

const char* Name(Protocol p) {
  return p == Protocol::kHttpJson    ? "http-json"
         : p == Protocol::kHttpProto ? "http-proto"
                                     : "tcp";
}

bool Same(const google::protobuf::Message& a,
          const google::protobuf::Message& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

// Every document of the store: doc id -> (user, tokens).
std::map<std::string, std::pair<std::string, size_t>> StoreDocs(
    const std::string& path) {
  std::map<std::string, std::pair<std::string, size_t>> docs;
  auto store = OpenFileTokenStore(path);
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return docs;
  auto reader = (*store)->Read();
  EXPECT_TRUE(reader.ok());
  DocBatch b;
  while (true) {
    auto more = (*reader)->Next(&b);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    for (size_t d = 0; d < b.num_docs(); ++d) {
      uint64_t seq, events;
      if (!service::ParseIngestDocId(b.doc_ids[d], &seq, &events)) continue;
      // Key by the client's id: "~seq~events~<id>".
      const std::string id = b.doc_ids[d].substr(
          b.doc_ids[d].find('~', b.doc_ids[d].find('~', 1) + 1) + 1);
      const std::string key = b.users[d].empty() ? id : "user:" + b.users[d];
      EXPECT_EQ(docs.count(key), 0u) << "document twice: " << key;
      docs[key] = {b.users[d], b.doc_length(d)};
    }
  }
  return docs;
}

api::IngestRequest OneDoc(const std::string& id, const std::string& user,
                          const std::string& text) {
  api::IngestRequest r;
  api::Document* d = r.add_documents();
  d->set_id(id);
  d->set_user(user);
  d->set_text(text);
  return r;
}

const char* kTexts[] = {
    "oil prices rose as opec ministers met in vienna",
    "the soviet union and the united states signed an arms treaty",
    "the stock market fell sharply on wall street today",
    "police arrested two men after a shooting in the city",
    "the president told congress the budget deficit must fall",
};

TEST(EndToEnd, IngestEverywhereAndAnswersAgree) {
  TempDir tmp;
  RedisServer redis(tmp.path());
  ASSERT_TRUE(redis.ok());
  std::vector<std::string> args = TestCorpusArgs();
  const std::string address = redis.address();
  const std::string watch = tmp.path() + "/watch";
  for (std::string a :
       {"--topics", "20", "--max-sweeps", "30", "--redis", address.c_str(),
        "--redis-stream", "docs", "--watch-dir", watch.c_str()}) {
    args.push_back(a);
  }
  Daemon d(tmp.path() + "/node", args);
  ASSERT_TRUE(d.ok()) << d.Log();
  auto json = d.Client(Protocol::kHttpJson);
  auto proto = d.Client(Protocol::kHttpProto);
  auto tcp = d.Client(Protocol::kTcp);

  // Ingest: HTTP/JSON, HTTP/protobuf, TCP/protobuf, and a Redis stream.
  api::IngestResponse ir;
  ASSERT_TRUE(
      json->Call(Method::kIngest, OneDoc("j1", "u-json", kTexts[0]), &ir).ok());
  EXPECT_EQ(ir.accepted(), 1u);
  ASSERT_TRUE(
      proto->Call(Method::kIngest, OneDoc("p1", "", kTexts[1]), &ir).ok());
  ASSERT_TRUE(
      tcp->Call(Method::kIngest, OneDoc("t1", "u-tcp", kTexts[2]), &ir).ok());
  ASSERT_TRUE(
      tcp->Call(Method::kIngest, OneDoc("t2", "u-tcp", kTexts[3]), &ir).ok());
  redisContext* rc = redis.Connect();
  ASSERT_NE(rc, nullptr);
  XAdd(rc, "docs", "r1", "u-redis", kTexts[4]);
  XAdd(rc, "docs", "r2", "u-json", "a brand new word zyxqwv for the model");
  // And a file dropped into the watched directory (written, then renamed).
  {
    std::FILE* f = std::fopen((watch + "/.w1.tmp").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fprintf(f, "user: u-file\n%s\n", kTexts[3]);
    std::fclose(f);
    ASSERT_EQ(
        std::rename((watch + "/.w1.tmp").c_str(), (watch + "/w1.txt").c_str()),
        0);
  }

  auto st = WaitStatus(
      json.get(),
      [](const api::StatusResponse& s) {
        // (Coherence is scored once more when sampling stops, apart from
        // the view: until then ListTopics' coherence may change.)
        return s.ingested() == 7 && s.pending() == 0 &&
               s.version().sweep() >= 30 && s.users() == 4 && !s.training() &&
               s.coherence_view() == s.version().view();
      },
      60);
  ASSERT_TRUE(st.ok()) << st.status() << d.Log();
  EXPECT_EQ(RedisPending(rc, "docs"), 0);
  redisFree(rc);

  // Every query over every protocol gives the same answer.
  api::InferDocumentRequest infer;
  infer.set_text("opec oil ministers and crude prices in vienna");
  infer.set_seed(7);
  api::GetUserProfileRequest profile;
  profile.set_user("u-tcp");
  api::GetUserProfileRequest profile2;
  profile2.set_user("u-json");
  api::WordTopicsRequest word;
  word.set_word("zyxqwv");  // a word that only ingestion added
  api::ListTopicsRequest topics;
  topics.set_top_words(5);
  api::GetTopicRequest topic;
  topic.set_topic(3);
  struct Query {
    Method method;
    const google::protobuf::Message* request;
    std::unique_ptr<google::protobuf::Message> proto;
  };
  std::vector<Query> queries;
  queries.push_back({Method::kInferDocument, &infer,
                     std::make_unique<api::InferDocumentResponse>()});
  queries.push_back({Method::kGetUserProfile, &profile,
                     std::make_unique<api::GetUserProfileResponse>()});
  queries.push_back({Method::kGetUserProfile, &profile2,
                     std::make_unique<api::GetUserProfileResponse>()});
  queries.push_back({Method::kWordTopics, &word,
                     std::make_unique<api::WordTopicsResponse>()});
  queries.push_back({Method::kListTopics, &topics,
                     std::make_unique<api::ListTopicsResponse>()});
  queries.push_back(
      {Method::kGetTopic, &topic, std::make_unique<api::GetTopicResponse>()});
  for (const Query& q : queries) {
    std::unique_ptr<google::protobuf::Message> first;
    for (Protocol p : kAll) {
      auto c = d.Client(p);
      std::unique_ptr<google::protobuf::Message> r(q.proto->New());
      absl::Status s = c->Call(q.method, *q.request, r.get());
      ASSERT_TRUE(s.ok()) << service::MethodName(q.method) << " over "
                          << Name(p) << ": " << s;
      if (first == nullptr) {
        first = std::move(r);
      } else {
        EXPECT_TRUE(Same(*first, *r)) << service::MethodName(q.method)
                                      << " over " << Name(p) << " differs:\n"
                                      << first->DebugString() << "\nvs\n"
                                      << r->DebugString();
      }
    }
  }
  // The profiles hold what was ingested for each user.
  api::GetUserProfileResponse pr;
  ASSERT_TRUE(tcp->Call(Method::kGetUserProfile, profile, &pr).ok());
  EXPECT_EQ(pr.events(), 2u);
  EXPECT_GT(pr.topics_size(), 0);
  ASSERT_TRUE(tcp->Call(Method::kGetUserProfile, profile2, &pr).ok());
  EXPECT_EQ(pr.events(), 2u);  // one over HTTP, one over Redis

  EXPECT_EQ(d.Stop(SIGTERM), 0) << d.Log();
  const auto docs = StoreDocs(tmp.path() + "/node/tokens.lts");
  EXPECT_EQ(docs.size(), 5u);  // p1 and four user documents
  EXPECT_EQ(docs.count("p1"), 1u);
  EXPECT_EQ(docs.count("user:u-redis"), 1u);
  EXPECT_EQ(docs.count("user:u-file"), 1u);
  EXPECT_EQ(::access((watch + "/done/w1.txt").c_str(), F_OK), 0);
}

TEST(Durability, KillNineAfterAcknowledgedIngest) {
  TempDir tmp;
  RedisServer redis(tmp.path());
  ASSERT_TRUE(redis.ok());
  std::vector<std::string> args = TestCorpusArgs();
  const std::string address = redis.address();
  // A tiny compaction threshold: the log is compacted under the ingest.
  for (std::string a :
       {"--topics", "20", "--checkpoint-every", "5", "--redis", address.c_str(),
        "--ingest-log-compact-bytes", "2000"}) {
    args.push_back(a);
  }
  const std::string dir = tmp.path() + "/node";
  std::map<std::string, std::string> acked;  // id -> user
  uint64_t checkpoint_sweep = 0;
  {
    Daemon d(dir, args);
    ASSERT_TRUE(d.ok()) << d.Log();
    auto http = d.Client(Protocol::kHttpJson);
    auto tcp = d.Client(Protocol::kTcp);
    auto st = WaitStatus(
        http.get(),
        [](const api::StatusResponse& s) { return s.checkpoint_sweep() >= 5; },
        60);
    ASSERT_TRUE(st.ok()) << st.status();
    // Stream entries go in meanwhile; some will be acked before the kill,
    // some read and logged but not acked, some not yet read.
    redisContext* rc = redis.Connect();
    ASSERT_NE(rc, nullptr);
    for (int i = 0; i < 30; ++i) {
      XAdd(rc, "latentd:ingest", absl::StrCat("r", i), i % 3 ? "" : "ru",
           kTexts[i % 5]);
    }
    redisFree(rc);
    for (int i = 0; i < 20; ++i) {
      const std::string id = absl::StrCat("h", i);
      const std::string user = i % 4 == 0 ? "hu" : "";
      api::IngestResponse ir;
      auto* c = i % 2 ? tcp.get() : http.get();
      ASSERT_TRUE(
          c->Call(Method::kIngest, OneDoc(id, user, kTexts[i % 5]), &ir).ok());
      acked[id] = user;
      if (i == 9) {
        // Half of it merged before the crash: the replay must skip those.
        auto merged = WaitStatus(
            http.get(),
            [](const api::StatusResponse& s) {
              return s.merged_sequence() >= 10 && s.pending() == 0;
            },
            60);
        ASSERT_TRUE(merged.ok()) << merged.status();
      }
    }
    // kill -9 right after the last acknowledgement.
    ::kill(d.pid(), SIGKILL);
    d.Stop(SIGKILL);
  }
  {
    auto snap = ModelSnapshot::Load(dir + "/model.bin");
    ASSERT_TRUE(snap.ok()) << snap.status();
    checkpoint_sweep = snap->sweep;
  }
  Daemon d(dir, args);
  ASSERT_TRUE(d.ok()) << d.Log();
  EXPECT_NE(d.Log().find(absl::StrCat("resuming from checkpoint at sweep ",
                                      checkpoint_sweep)),
            std::string::npos)
      << d.Log();
  auto http = d.Client(Protocol::kHttpJson);
  redisContext* rc = redis.Connect();
  ASSERT_NE(rc, nullptr);
  const uint64_t corpus = TestCorpusSize().documents;
  auto st = WaitStatus(
      http.get(),
      [&](const api::StatusResponse& s) {
        return s.pending() == 0 && s.merged_sequence() >= 20 &&
               s.version().sweep() > checkpoint_sweep &&
               RedisPending(rc, "latentd:ingest") == 0 && s.users() == 2 &&
               s.documents() == corpus + 20 - 5 + 20 + 1 + 1;  // see below
      },
      60);
  // Documents: the corpus, 15 HTTP/TCP documents without a user plus the
  // "hu" user document, 20 Redis documents without a user plus "ru".
  EXPECT_TRUE(st.ok()) << st.status() << d.Log();
  redisFree(rc);
  EXPECT_EQ(d.Stop(SIGTERM), 0);
  const auto docs = StoreDocs(dir + "/tokens.lts");  // fails on duplicates
  for (const auto& [id, user] : acked) {
    if (user.empty()) {
      EXPECT_EQ(docs.count(id), 1u) << id;
    }
  }
  for (int i = 0; i < 30; ++i) {
    if (i % 3) {
      EXPECT_EQ(docs.count(absl::StrCat("r", i)), 1u) << i;
    }
  }
  // Users' documents hold every event exactly once: tokens add up.
  ASSERT_EQ(docs.count("user:hu"), 1u);
  ASSERT_EQ(docs.count("user:ru"), 1u);
  auto sizes = [&](int n, int step) {
    size_t t = 0;
    Tokenizer tok;
    for (int i = 0; i < n; i += step) t += tok.Tokenize(kTexts[i % 5]).size();
    return t;
  };
  EXPECT_EQ(docs.at("user:hu").second, sizes(20, 4));
  EXPECT_EQ(docs.at("user:ru").second, sizes(30, 3));
}

TEST(BadRequests, GetErrorsAndDaemonGoesOn) {
  TempDir tmp;
  // Settings from a config file this time (flags would override it).
  const std::string config = tmp.path() + "/latentd.conf";
  {
    std::FILE* f = std::fopen(config.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("# test\ntopics = 10\nmax-sweeps = 5\nmax-body-bytes = 65536\n",
               f);
    std::fclose(f);
  }
  std::vector<std::string> args = TestCorpusArgs();
  args.push_back("--config");
  args.push_back(config);
  Daemon d(tmp.path() + "/node", args);
  ASSERT_TRUE(d.ok()) << d.Log();
  std::string host;
  uint16_t port = 0;
  ASSERT_TRUE(service::SplitHostPort(d.http(), &host, &port).ok());
  httplib::Client h(host, port);
  auto post = [&](const std::string& path, const std::string& body,
                  const char* type = "application/json") {
    auto r = h.Post(path.c_str(), body, type);
    EXPECT_TRUE(r) << path;
    return r ? std::make_pair(r->status, r->body)
             : std::make_pair(0, std::string());
  };
  struct Case {
    const char* what;
    std::string path, body, type;
    int status;
    const char* message;  // part of the error message
  };
  const Case cases[] = {
      {"malformed JSON", "/v1/Ingest", "{\"documents\": [", "application/json",
       400, "malformed JSON"},
      {"unknown field", "/v1/GetTopic", "{\"topik\": 3}", "application/json",
       400, "topik"},
      {"invalid protobuf", "/v1/InferDocument",
       std::string("\x0a\xff\xff\xff\xff\x0f", 6), "application/x-protobuf",
       400, "invalid protobuf"},
      {"unknown topic", "/v1/GetTopic", "{\"topic\": 10}", "application/json",
       404, "topic 10 does not exist"},
      {"empty document", "/v1/Ingest",
       "{\"documents\": [{\"text\": \"  the of, and !\"}]}", "application/json",
       400, "empty document"},
      {"empty infer", "/v1/InferDocument", "{\"text\": \"\"}",
       "application/json", 400, "empty document"},
      {"over-size body", "/v1/Ingest", std::string(100000, 'x'),
       "application/json", 413, "over the limit"},
      {"unknown user", "/v1/GetUserProfile", "{\"user\": \"nobody\"}",
       "application/json", 404, "user 'nobody'"},
      {"unknown word", "/v1/WordTopics", "{\"word\": \"qqqzzzyyy\"}",
       "application/json", 404, "not in the model"},
      {"unknown call", "/v1/Frobnicate", "{}", "application/json", 404,
       "Frobnicate"},
  };
  for (const Case& c : cases) {
    auto [status, body] = post(c.path, c.body, c.type.c_str());
    EXPECT_EQ(status, c.status) << c.what << ": " << body;
    EXPECT_NE(body.find(c.message), std::string::npos)
        << c.what << ": " << body;
  }
  // TCP: an invalid protobuf payload and an unknown call type.
  {
    sync::EventLoop loop(1);
    sync::ClientOptions o;
    ASSERT_TRUE(service::SplitHostPort(d.tcp(), &o.host, &o.port).ok());
    sync::Client c(&loop, o);
    auto r = c.CallSync(4, std::string("\x0a\xff\xff\xff\xff\x0f", 6),
                        absl::Seconds(10));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("invalid protobuf"),
              absl::string_view::npos);
    r = c.CallSync(99, "", absl::Seconds(10));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    auto tcp = d.Client(Protocol::kTcp);
    api::GetTopicRequest gt;
    gt.set_topic(12345);
    api::GetTopicResponse gr;
    EXPECT_EQ(tcp->Call(Method::kGetTopic, gt, &gr).code(),
              absl::StatusCode::kNotFound);
  }
  // Still serving, and nothing was accepted.
  auto r = h.Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  auto json = d.Client(Protocol::kHttpJson);
  api::StatusResponse s;
  ASSERT_TRUE(json->Call(Method::kStatus, api::StatusRequest(), &s).ok());
  EXPECT_EQ(s.ingested(), 0u);
  EXPECT_EQ(s.documents(), TestCorpusSize().documents);
  r = h.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_NE(r->body.find("latentd_request_errors_total{call=\"GetTopic\","
                         "transport=\"http\"} 2"),
            std::string::npos)
      << r->body;
  EXPECT_EQ(d.Stop(SIGTERM), 0) << d.Log();
}

TEST(Shutdown, GracefulUnderLoadLeavesLoadableCheckpoint) {
  TempDir tmp;
  std::vector<std::string> args = TestCorpusArgs();
  for (std::string a : {"--topics", "20", "--checkpoint-every", "0"}) {
    args.push_back(a);
  }
  const std::string dir = tmp.path() + "/node";
  Daemon d(dir, args);
  ASSERT_TRUE(d.ok()) << d.Log();
  std::atomic<bool> stop{false};
  std::atomic<int> acked{0}, answered{0};
  std::vector<std::thread> load;
  for (int t = 0; t < 4; ++t) {
    load.emplace_back([&, t] {
      auto c = d.Client(t % 2 ? Protocol::kTcp : Protocol::kHttpProto);
      for (int i = 0; !stop.load(); ++i) {
        if (i % 4 == 0) {
          api::IngestResponse ir;
          if (c->Call(Method::kIngest,
                      OneDoc(absl::StrCat("s", t, "-", i), "", kTexts[i % 5]),
                      &ir)
                  .ok()) {
            ++acked;
          }
        } else {
          api::InferDocumentRequest q;
          q.set_text(kTexts[i % 5]);
          api::InferDocumentResponse r;
          if (c->Call(Method::kInferDocument, q, &r).ok()) ++answered;
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const int status = d.Stop(SIGTERM, 60);
  stop = true;
  for (std::thread& t : load) t.join();
  ASSERT_TRUE(WIFEXITED(status)) << d.Log();
  EXPECT_EQ(WEXITSTATUS(status), 0) << d.Log();
  EXPECT_GT(answered.load(), 0);
  EXPECT_GT(acked.load(), 0);
  auto snap = ModelSnapshot::Load(dir + "/model.bin");
  ASSERT_TRUE(snap.ok()) << snap.status();
  EXPECT_GT(snap->sweep, 0u);
  // It resumes from there, with every acknowledged document.
  Daemon again(dir, {});
  ASSERT_TRUE(again.ok()) << again.Log();
  auto http = again.Client(Protocol::kHttpJson);
  // Every acknowledged document is there, none twice (a reply lost in the
  // shutdown may leave a durable document its client did not see acked).
  const uint64_t corpus = TestCorpusSize().documents;
  auto st = WaitStatus(
      http.get(),
      [&](const api::StatusResponse& s) {
        return s.pending() == 0 &&
               s.documents() >= corpus + static_cast<uint64_t>(acked.load()) &&
               s.documents() == corpus + s.merged_sequence();
      },
      60);
  ASSERT_TRUE(st.ok()) << st.status() << again.Log();
  EXPECT_GE(st->version().sweep(), snap->sweep);
  EXPECT_EQ(again.Stop(SIGTERM), 0);
}

}  // namespace
}  // namespace latentd::testing
