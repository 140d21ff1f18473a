// Every decoder of outside bytes survives arbitrary bytes (issue 16,
// "Fuzzing"): seeded mutations of a valid input (bit flips, random bytes,
// cut, inserted and duplicated stretches, all random) go through the sync
// frame and handshake decoders, the owner shard's DeltaBatch handler, the
// ring config parser, the tokens-file parser, the API's JSON request
// parsing, the model snapshot reader (with its checksum fixed up, so the
// decoder behind it is reached), the ingest log reader and every corpus
// reader. Each must answer OK or an error, never crash, hang or allocate
// without bound (ASan/UBSan builds catch more), and what it accepts must
// still hold its invariants. Deterministic (fixed seeds and iteration
// counts), a few seconds in all.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "corpora/document_reader.h"
#include "google/protobuf/stubs/logging.h"
#include "gtest/gtest.h"
#include "hashring/ring.h"
#include "hashring/ring_config.h"
#include "sampler/model_snapshot.h"
#include "service/api.pb.h"
#include "service/api_auth.h"
#include "service/api_dispatch.h"
#include "service/ingest_log.h"
#include "sync/owner_shard.h"
#include "sync/sync.pb.h"
#include "sync/transport/frame.h"
#include "sync/transport/peer_auth.h"
#include "xxhash.h"

namespace latentd {
namespace {

// Seeded mutations of a valid input.
class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  std::string Mutate(const std::string& valid) {
    std::string s = valid;
    const int edits = 1 + static_cast<int>(Below(4));
    for (int e = 0; e < edits; ++e) {
      switch (Below(7)) {
        case 0:  // flip a bit
          if (!s.empty())
            s[Below(s.size())] ^= static_cast<char>(1 << Below(8));
          break;
        case 1:  // a random byte
          if (!s.empty()) s[Below(s.size())] = static_cast<char>(rng_());
          break;
        case 2:  // an extreme byte (lengths, counts)
          if (!s.empty()) s[Below(s.size())] = Below(2) ? '\xff' : '\0';
          break;
        case 3:  // cut the tail
          s.resize(Below(s.size() + 1));
          break;
        case 4: {  // delete a stretch
          const size_t at = Below(s.size() + 1);
          s.erase(at, Below(s.size() - at + 1));
          break;
        }
        case 5: {  // insert random bytes
          std::string junk(Below(16), '\0');
          for (char& c : junk) c = static_cast<char>(rng_());
          s.insert(Below(s.size() + 1), junk);
          break;
        }
        default: {  // duplicate a stretch
          const size_t at = Below(s.size() + 1);
          const std::string piece = s.substr(at, Below(32));
          s.insert(Below(s.size() + 1), piece);
          break;
        }
      }
    }
    return s;
  }

  uint64_t Below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }

 private:
  std::mt19937_64 rng_;
};

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/latentd_random_bytes_XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  std::string File(const std::string& name, const std::string& bytes) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(RandomBytes, FrameAndHandshakeDecoders) {
  const std::string frame = sync::EncodeFrame(7, 42, "payload bytes");
  const std::string error = sync::EncodeStatus(absl::NotFoundError("gone"));
  const std::string hello = sync::EncodeHandshakeMessage(
      sync::kHello, std::string(sync::kNonceBytes, 'n') + "node-1");
  const sync::PeerAuth auth{"0123456789abcdef-key", "node-0"};
  Mutator m(1);
  for (int i = 0; i < 20000; ++i) {
    std::string f = m.Mutate(frame);
    f.resize(std::max(f.size(), sync::kFrameHeaderSize));
    auto h = sync::DecodeFrameHeader(f.data(), 1024);
    if (h.ok()) {
      EXPECT_NE(h->type, 0u);
      EXPECT_LE(h->payload_size, 1024u);
    }
    EXPECT_FALSE(sync::DecodeStatus(m.Mutate(error)).ok());
    std::string hs = m.Mutate(hello);
    hs.resize(std::max(hs.size(), sync::kHandshakeHeaderSize));
    auto hh = sync::DecodeHandshakeHeader(hs.data());
    if (hh.ok()) {
      EXPECT_LE(hh->body_size, sync::kMaxHandshakeBody);
    }
    sync::PeerHandshake server(sync::PeerHandshake::Role::kServer, &auth);
    auto reply = server.OnMessage(
        hh.ok() ? hh->kind : sync::kHello,
        std::string_view(hs).substr(sync::kHandshakeHeaderSize));
    EXPECT_FALSE(server.done());  // no proof was ever made with the key
    (void)reply;
  }
}

TEST(RandomBytes, OwnerShardDeltaBatches) {
  google::protobuf::LogSilencer quiet;
  sync::DeltaBatch valid;
  valid.set_node_id("node1");
  valid.set_incarnation(5);
  valid.set_sequence(1);
  valid.set_dimension(8);
  valid.set_changes_only(true);
  for (uint64_t k = 1; k <= 4; ++k) {
    valid.add_keys(k * 977);
    valid.mutable_deltas()->add_sizes(2);
    valid.mutable_deltas()->add_topics(static_cast<uint32_t>(k % 8));
    valid.mutable_deltas()->add_counts(3);
    valid.mutable_deltas()->add_topics(static_cast<uint32_t>((k + 3) % 8));
    valid.mutable_deltas()->add_counts(1);
  }
  const std::string bytes = valid.SerializeAsString();
  sync::OwnerShard owner(8);
  sync::DeltaReply reply;
  ASSERT_TRUE(owner.Apply(valid, &reply).ok());
  Mutator m(2);
  int parsed = 0;
  for (int i = 0; i < 5000; ++i) {
    sync::DeltaBatch b;
    if (!b.ParseFromString(m.Mutate(bytes))) continue;
    ++parsed;
    b.set_sequence(2 + static_cast<uint64_t>(i));  // not a duplicate
    (void)owner.Apply(b, &reply);
  }
  EXPECT_GT(parsed, 100);
  // Whatever was applied, the owner still answers a well-formed batch (from
  // an incarnation no mutant's can supersede).
  valid.set_incarnation(std::numeric_limits<uint64_t>::max());
  valid.set_sequence(1000000);
  absl::Status s = owner.Apply(valid, &reply);
  EXPECT_TRUE(s.ok()) << s;
}

TEST(RandomBytes, RingConfigs) {
  // Invalid UTF-8 in a string field is refused with a protobuf log line
  // each time: thousands of them here.
  google::protobuf::LogSilencer quiet;
  hashring::RingConfig config;
  config.members = {{"node0", "127.0.0.1:1", 1}, {"node1", "127.0.0.1:2", 2}};
  config.replication = 2;
  config.version = 3;
  const std::string bytes = hashring::SerializeRingConfig(config);
  ASSERT_TRUE(hashring::ParseRingConfig(bytes).ok());
  Mutator m(3);
  for (int i = 0; i < 5000; ++i) {
    auto parsed = hashring::ParseRingConfig(m.Mutate(bytes));
    // What the parser accepts, Ring::Build must take (it validates).
    if (parsed.ok()) {
      EXPECT_TRUE(hashring::Ring::Build(*parsed).ok());
    }
  }
}

TEST(RandomBytes, TokensFiles) {
  const std::string text =
      "# tokens\nread read-token-0123456789\nwrite write-token-0123456789\n"
      "admin admin-token-0123456789\n";
  ASSERT_TRUE(service::ApiTokens::Parse(text, "tokens").ok());
  Mutator m(4);
  for (int i = 0; i < 10000; ++i) {
    (void)service::ApiTokens::Parse(m.Mutate(text), "tokens");
  }
}

TEST(RandomBytes, JsonRequests) {
  google::protobuf::LogSilencer quiet;
  const std::string infer =
      R"({"text": "oil prices rose", "top": 5, "seed": "7", "iterations": 20})";
  const std::string ingest =
      R"({"documents": [{"text": "a b c", "id": "d1", "user": "u"}]})";
  api::InferDocumentRequest q;
  ASSERT_TRUE(service::ParseJson(infer, &q).ok());
  Mutator m(5);
  for (int i = 0; i < 5000; ++i) {
    api::InferDocumentRequest a;
    (void)service::ParseJson(m.Mutate(infer), &a);
    api::IngestRequest b;
    (void)service::ParseJson(m.Mutate(ingest), &b);
  }
}

// The snapshot file with its trailing XXH64 (seed "snap", little-endian)
// recomputed, so that the decoder behind the checksum sees the mutation.
std::string FixChecksum(std::string bytes) {
  if (bytes.size() < 8) return bytes;
  const size_t body = bytes.size() - 8;
  uint64_t sum = XXH64(bytes.data(), body, 0x736e6170);
  for (int i = 0; i < 8; ++i) {
    bytes[body + static_cast<size_t>(i)] = static_cast<char>(sum & 0xff);
    sum >>= 8;
  }
  return bytes;
}

TEST(RandomBytes, ModelSnapshots) {
  ModelSnapshot s;
  s.num_topics = 4;
  s.vocab_size = 3;
  s.alpha = {0.1, 0.1, 0.1, 0.1};
  s.sweep = 9;
  s.word_offsets = {0, 2, 3, 5};
  s.entries = {{0, 3}, {2, 1}, {1, 4}, {0, 1}, {3, 2}};
  s.tokens = 11;
  const std::string bytes = s.Serialize();
  TempDir dir;
  ASSERT_TRUE(ModelSnapshot::Load(dir.File("model.bin", bytes)).ok());
  Mutator m(6);
  for (int i = 0; i < 600; ++i) {
    std::string b = m.Mutate(bytes);
    if (i % 2 == 0) b = FixChecksum(std::move(b));
    auto loaded = ModelSnapshot::Load(dir.File("model.bin", b));
    if (!loaded.ok()) continue;
    ASSERT_EQ(loaded->word_offsets.size(), loaded->vocab_size + 1u);
    ASSERT_EQ(loaded->alpha.size(), loaded->num_topics);
    ASSERT_EQ(loaded->word_offsets.back(), loaded->entries.size());
    for (const auto& e : loaded->entries)
      EXPECT_LT(e.topic, loaded->num_topics);
  }
}

TEST(RandomBytes, IngestLogs) {
  TempDir dir;
  const std::string path = dir.path() + "/ingest.log";
  {
    std::vector<service::IngestRecord> none;
    auto log = service::IngestLog::Open(path, &none);
    ASSERT_TRUE(log.ok()) << log.status();
    std::vector<service::IngestRecord> records(3);
    for (int i = 0; i < 3; ++i) {
      records[i].source = "file:d" + std::to_string(i);
      records[i].doc_id = "d" + std::to_string(i);
      records[i].words = {"oil", "price", "word" + std::to_string(i)};
    }
    ASSERT_TRUE((*log)->Append(&records).ok());
  }
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 0u);
  Mutator m(7);
  for (int i = 0; i < 400; ++i) {
    dir.File("ingest.log", m.Mutate(bytes));
    std::vector<service::IngestRecord> records;
    service::IngestLogOpenOptions o;
    o.repair = i % 2 == 1;
    auto log = service::IngestLog::Open(path, &records, o);
    if (!log.ok()) continue;
    for (size_t r = 1; r < records.size(); ++r) {
      EXPECT_GT(records[r].sequence, records[r - 1].sequence);
    }
  }
}

TEST(RandomBytes, CorpusReaders) {
  TempDir dir;
  struct Case {
    CorpusFormat format;
    std::string text;
    std::string vocab;
  };
  const std::vector<Case> cases = {
      {CorpusFormat::kLines, "oil prices rose\nfootball team won\n", ""},
      {CorpusFormat::kYahoo, "d1 u1 oil prices rose\nd2 u2 team won\n", ""},
      {CorpusFormat::kUci, "2\n3\n4\n1 1 2\n1 2 1\n2 3 1\n2 1 1\n",
       "oil\nprice\nteam\n"},
      {CorpusFormat::kLdaC, "2 0:2 1:1\n1 2:3\n", "oil\nprice\nteam\n"},
  };
  Mutator m(8);
  for (const Case& c : cases) {
    for (int i = 0; i < 250; ++i) {
      ReaderOptions o;
      o.format = c.format;
      o.path = dir.File("corpus", i == 0 ? c.text : m.Mutate(c.text));
      if (!c.vocab.empty()) {
        o.vocab_path =
            dir.File("vocab", i % 3 == 2 ? m.Mutate(c.vocab) : c.vocab);
      }
      o.skip_malformed = i % 2 == 0;
      auto reader = OpenDocumentReader(o);
      if (!reader.ok()) continue;
      RawDocument doc;
      for (int n = 0; n < 1000; ++n) {
        absl::StatusOr<bool> more = (*reader)->Next(&doc);
        if (!more.ok() || !*more) break;
        EXPECT_FALSE(doc.words.empty());
      }
    }
  }
}

}  // namespace
}  // namespace latentd
