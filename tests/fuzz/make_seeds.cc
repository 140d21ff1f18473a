// make_fuzz_seeds DIR: writes the seed corpora of the harnesses in this
// folder, one small file per valid input, into DIR/<harness>/ (the
// committed seeds in tests/fuzz/corpus/ were written by it; ops/fuzz.sh
// --seeds rewrites them). Each seed is a valid encoding made by latentd's
// own writers, so a fuzzer starts from inputs that reach deep.
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "corpora/token_store.h"
#include "hashring/ring_config.h"
#include "sampler/model_snapshot.h"
#include "service/api.pb.h"
#include "service/api_dispatch.h"
#include "service/ingest_log.h"
#include "sync/owner_shard.h"
#include "sync/sync.pb.h"
#include "sync/transport/frame.h"
#include "sync/transport/peer_auth.h"
#include "tests/fuzz/fuzz_util.h"

namespace latentd {
namespace {

std::string out_dir;

void Seed(const std::string& harness, const std::string& name,
          const std::string& bytes) {
  const std::string dir = out_dir + "/" + harness;
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/" + name, std::ios::binary | std::ios::trunc) << bytes;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

sync::DeltaBatch Batch(const std::string& node, uint64_t sequence) {
  sync::DeltaBatch b;
  b.set_node_id(node);
  b.set_incarnation(5);
  b.set_sequence(sequence);
  b.set_dimension(8);
  b.set_changes_only(true);
  for (uint64_t k = 1; k <= 4; ++k) {
    b.add_keys(k * 977);
    b.mutable_deltas()->add_sizes(2);
    b.mutable_deltas()->add_topics(static_cast<uint32_t>(k % 4));
    b.mutable_deltas()->add_counts(3);
    b.mutable_deltas()->add_topics(static_cast<uint32_t>(k % 4 + 4));
    b.mutable_deltas()->add_counts(1);
  }
  return b;
}

void SyncSeeds() {
  Seed("fuzz_sync_frame", "frame", sync::EncodeFrame(7, 42, "payload"));
  Seed("fuzz_sync_frame", "error_reply",
       sync::EncodeFrame(sync::kErrorReplyType, 42,
                         sync::EncodeStatus(absl::NotFoundError("gone"))));
  Seed("fuzz_sync_frame", "hello",
       std::string("\x01", 1) +
           sync::EncodeHandshakeMessage(
               sync::kHello, std::string(sync::kNonceBytes, 'n') + "node-1"));

  // Owner: batches from two senders, progress, an epoch change and the
  // hand-off it produces, a departing sender.
  sync::OwnerShard shard(8);
  std::string owner;
  sync::DeltaBatch a = Batch("node-1", 1);
  sync::DeltaBatch c = Batch("node-2", 1);
  sync::DeltaReply reply;
  (void)shard.Apply(a, &reply);
  (void)shard.Apply(c, &reply);
  fuzz::AppendMessage(0, a.SerializeAsString(), &owner);
  fuzz::AppendMessage(0, c.SerializeAsString(), &owner);
  sync::Progress p;
  p.set_node_id("node-1");
  p.set_clock(3);
  p.set_ready(true);
  fuzz::AppendMessage(2, p.SerializeAsString(), &owner);
  std::vector<sync::KeyHandoff> moved = shard.AdvanceEpoch(
      1, [](sync::Key k) { return k % 2 == 1 ? "node-0" : ""; }, "node-9", 4);
  for (const sync::KeyHandoff& h : moved) {
    fuzz::AppendMessage(1, h.SerializeAsString(), &owner);
  }
  fuzz::AppendMessage(3, "", &owner);
  fuzz::AppendMessage(4, "node-1", &owner);
  fuzz::AppendMessage(5, "node-2", &owner);
  Seed("fuzz_sync_owner", "session", owner);
  // Op 0 (a DeltaBatch) means the same to fuzz_sync_admission.
  Seed("fuzz_sync_admission", "session", owner);

  // Client: local changes, a pass answered by the real owner, then one
  // answered with a recorded reply, then a flush.
  std::string client;
  fuzz::AppendMessage(2, std::string("\x00\x01\x01\x01\x02\x01\x03\x03\x01", 9),
                      &client);
  fuzz::AppendMessage(1, "", &client);
  fuzz::AppendMessage(3, "", &client);
  fuzz::AppendMessage(2, std::string("\x00\x01\x00\x04\x00\x01", 6), &client);
  sync::DeltaReply recorded;
  sync::OwnerShard other(4);
  sync::DeltaBatch r = Batch("node-1", 1);
  r.set_dimension(4);
  r.mutable_deltas()->Clear();
  r.clear_keys();
  for (uint64_t w = 0; w < 2; ++w) {
    r.add_keys(1000 + 7 * w);
    r.mutable_deltas()->add_sizes(1);
    r.mutable_deltas()->add_topics(1);
    r.mutable_deltas()->add_counts(2);
  }
  (void)other.Apply(r, &recorded);
  fuzz::AppendMessage(0, recorded.SerializeAsString(), &client);
  fuzz::AppendMessage(3, "", &client);
  fuzz::AppendMessage(4, "", &client);
  Seed("fuzz_sync_reply", "session", client);
}

void ApiSeeds() {
  const std::vector<std::pair<std::string, std::string>> json = {
      {"ListTopics", R"({"topWords": 3})"},
      {"GetTopic", R"({"topic": 1, "topWords": 5})"},
      {"WordTopics", R"({"word": "oil", "top": 2})"},
      {"InferDocument",
       R"({"text": "crude oil prices", "seed": "7", "iterations": 20, "top": 3})"},
      {"GetUserProfile", R"({"user": "u1", "top": 2})"},
      {"Ingest",
       R"({"documents": [{"text": "oil goal", "id": "d1", "user": "u"}]})"},
      {"Status", R"({"history": 4})"},
      {"Checkpoint", "{}"},
      {"ExportModel", R"({"firstWord": 2, "maxWords": 3})"},
  };
  for (const auto& [method, body] : json) {
    Seed("fuzz_api", "json_" + method,
         std::string(1, '\0') + method + "\n" + body);
  }
  api::InferDocumentRequest infer;
  infer.set_text("opec crude barrel");
  infer.set_iterations(10);
  Seed("fuzz_api", "proto_infer",
       std::string("\x01\x04", 2) + infer.SerializeAsString());
  api::AuthenticatedCall call;
  call.set_token("read-token-0123456789");
  call.set_method(4);
  call.set_request(infer.SerializeAsString());
  Seed("fuzz_api", "frame_authenticated",
       "\x02" + sync::EncodeFrame(service::kAuthenticatedCallType, 9,
                                  call.SerializeAsString()));
  api::GetTopicRequest topic;
  topic.set_topic(2);
  Seed("fuzz_api", "frame_plain",
       "\x02" + sync::EncodeFrame(2, 10, topic.SerializeAsString()));

  Seed("fuzz_api_tokens", "tokens",
       "# tokens\nread read-token-0123456789\nwrite write-token-0123456789\n"
       "admin admin-token-0123456789\n");
}

void CorporaSeeds(const std::string& tmp) {
  Seed("fuzz_document_reader", "lines",
       std::string("\x40", 1) + "Oil prices rose.\nThe football team won!\n");
  Seed("fuzz_document_reader", "yahoo",
       std::string("\x01", 1) + "d1 u1 oil prices rose\nd2 u2 team won\n");
  Seed("fuzz_document_reader", "uci",
       std::string("\x02", 1) + "oil\nprice\nteam\n" + std::string(1, '\0') +
           "2\n3\n4\n1 1 2\n1 2 1\n2 3 1\n2 1 1\n");
  Seed("fuzz_document_reader", "ldac",
       std::string("\x13", 1) + "oil\nprice\nteam\n" + std::string(1, '\0') +
           "2 0:2 1:1\n1 2:3\n");
  Seed("fuzz_document_reader", "dir",
       std::string("\x24", 1) + "Fulton/np-tl County/nn-tl Grand/jj-tl\n");
  Seed("fuzz_edge_list", "edges",
       "\x01# a graph\n1 2\n2\t3 0.5\n3 1 2e0\r\n\n4 4\n");
  Seed(
      "fuzz_tokenizer", "text",
      "Straße café ΑΘΗΝΑ Москва naïve Fulton/np-tl don't 42 日本 \xff\xfe end");

  // A token store of two batches.
  TokenStoreMeta meta;
  meta.num_topics = 4;
  meta.vocab_size = 5;
  const std::string store_path = tmp + "/store.lts";
  auto store = CreateFileTokenStore(store_path, meta);
  if (store.ok()) {
    auto writer = (*store)->Rewrite(meta);
    if (writer.ok()) {
      DocBatch b;
      const std::vector<WordId> w1 = {0, 1, 2}, w2 = {3, 4};
      const std::vector<TopicId> t1 = {0, 1, 2}, t2 = {3, 0};
      b.AddDocument("d1", "u1", w1, t1);
      b.AddDocument("d2", "", w2, t2);
      (void)(*writer)->Append(b);
      b.Clear();
      b.AddDocument("d3", "u2", w2, t2);
      (void)(*writer)->Append(b);
      (void)(*writer)->Append(DocBatch());
      (void)(*writer)->Commit();
    }
  }
  const std::string store_bytes = ReadFile(store_path);
  Seed("fuzz_token_store", "store", std::string(1, '\0') + store_bytes);
  Seed("fuzz_token_store", "store_fixsum",
       std::string(1, '\x01') + store_bytes);

  // An ingest log of three records.
  const std::string log_path = tmp + "/ingest.log";
  {
    std::vector<service::IngestRecord> none;
    auto log = service::IngestLog::Open(log_path, &none);
    if (log.ok()) {
      std::vector<service::IngestRecord> records(3);
      for (int i = 0; i < 3; ++i) {
        records[i].source = absl::StrCat("file:d", i);
        records[i].doc_id = absl::StrCat("d", i);
        records[i].user = i == 1 ? "u" : "";
        records[i].words = {"oil", "price", absl::StrCat("word", i)};
      }
      (void)(*log)->Append(&records);
    }
  }
  const std::string log = ReadFile(log_path);
  Seed("fuzz_ingest_log", "strict", std::string(1, '\0') + log);
  Seed("fuzz_ingest_log", "repair", std::string(1, '\x03') + log);
}

void ModelSeeds() {
  ModelSnapshot s;
  s.num_topics = 4;
  s.vocab_size = 3;
  s.alpha = {0.1, 0.1, 0.1, 0.1};
  s.sweep = 9;
  s.word_offsets = {0, 2, 3, 5};
  s.entries = {{0, 3}, {2, 1}, {1, 4}, {0, 1}, {3, 2}};
  s.tokens = 11;
  Seed("fuzz_model_snapshot", "model", std::string(1, '\0') + s.Serialize());
  Seed("fuzz_model_snapshot", "model_fixsum",
       std::string(1, '\x01') + s.Serialize());

  hashring::RingConfig config;
  config.members = {{"node0", "127.0.0.1:7000", 1},
                    {"node1", "127.0.0.1:7001", 2}};
  config.virtual_points_per_weight = 16;
  config.replication = 2;
  config.version = 3;
  Seed("fuzz_ring_config", "ring", hashring::SerializeRingConfig(config));
}

}  // namespace
}  // namespace latentd

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_fuzz_seeds DIR\n");
    return 2;
  }
  latentd::out_dir = argv[1];
  const std::string tmp = latentd::fuzz::ScratchDir();
  latentd::SyncSeeds();
  latentd::ApiSeeds();
  latentd::CorporaSeeds(tmp);
  latentd::ModelSeeds();
  return 0;
}
