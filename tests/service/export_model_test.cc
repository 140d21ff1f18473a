// ExportModel: the published view's counts, page by page, through the API
// dispatcher in both encodings: pages cover every word once in WordId
// order, α and n_k come with the first page, a page past the end is
// INVALID_ARGUMENT, pages stop at about 1 MiB, and words merged from
// ingested documents appear in the next view's export.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "service/api_dispatch.h"
#include "service/latentd_service.h"
#include "service/metrics.h"

namespace latentd::service {
namespace {

std::string TempDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/export_model_" +
                          std::to_string(::getpid()) + "_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// `lines` documents of `line` each, into dir/corpus.txt.
std::string WriteCorpus(const std::string& dir,
                        const std::vector<std::string>& lines) {
  const std::string path = dir + "/corpus.txt";
  FILE* f = std::fopen(path.c_str(), "w");
  for (const std::string& line : lines) std::fprintf(f, "%s\n", line.c_str());
  std::fclose(f);
  return path;
}

std::vector<std::string> Themes() {
  std::vector<std::string> lines;
  for (int d = 0; d < 60; ++d) {
    lines.push_back(d % 2 == 0 ? "oil prices opec crude barrel energy market"
                               : "football match goal team player season");
  }
  return lines;
}

// A service over `lines` that has sampled `sweeps` sweeps and stopped.
std::unique_ptr<LatentdService> OpenStopped(
    const std::string& dir, const std::vector<std::string>& lines,
    uint32_t topics, uint64_t sweeps, MetricsRegistry* metrics) {
  ServiceOptions o;
  o.data_dir = dir + "/node";
  o.corpus.path = WriteCorpus(dir, lines);
  o.trainer.num_topics = topics;
  o.trainer.eval_every = 0;
  o.max_sweeps = sweeps;
  auto s = LatentdService::Open(o, metrics);
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok()) return nullptr;
  (*s)->Start();
  for (int i = 0; i < 1000; ++i) {
    auto st = (*s)->Status(api::StatusRequest());
    if (st.ok() && st->version().sweep() >= sweeps && !st->training() &&
        st->pending() == 0) {
      return std::move(*s);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "the service did not stop after " << sweeps << " sweeps";
  return std::move(*s);
}

// ExportModel through the dispatcher, as the front ends call it.
absl::StatusOr<api::ExportModelResponse> Page(ApiDispatcher* d,
                                              Encoding encoding,
                                              uint32_t first_word,
                                              uint32_t max_words) {
  api::ExportModelRequest q;
  q.set_first_word(first_word);
  q.set_max_words(max_words);
  const std::string body =
      encoding == Encoding::kJson ? ToJson(q) : q.SerializeAsString();
  absl::StatusOr<std::string> out =
      d->Call(*MethodFromName("ExportModel"), body, encoding, /*admin=*/true);
  if (!out.ok()) return out.status();
  api::ExportModelResponse r;
  if (encoding == Encoding::kJson) {
    absl::Status parsed = ParseJson(*out, &r);
    if (!parsed.ok()) return parsed;
  } else if (!r.ParseFromString(*out)) {
    return absl::DataLossError("not an ExportModelResponse");
  }
  return r;
}

TEST(ExportModel, HasTheNextMethodNumber) {
  // Numbers are the framed transport's request types: the old ones stay.
  EXPECT_EQ(MethodFromName("ListTopics"), Method::kListTopics);
  EXPECT_EQ(static_cast<uint32_t>(Method::kListTopics), 1u);
  EXPECT_EQ(static_cast<uint32_t>(Method::kCheckpoint), 8u);
  EXPECT_EQ(MethodFromName("ExportModel"), Method::kExportModel);
  EXPECT_EQ(MethodFromType(9), Method::kExportModel);
  EXPECT_EQ(MethodName(Method::kExportModel), "ExportModel");
  EXPECT_FALSE(MayBlock(Method::kExportModel));
  EXPECT_EQ(MethodFromType(kNumMethods + 1), std::nullopt);
}

TEST(ExportModel, PagesCoverTheViewInWordOrder) {
  const std::string dir = TempDir("pages");
  MetricsRegistry metrics;
  std::unique_ptr<LatentdService> s =
      OpenStopped(dir, Themes(), 4, 5, &metrics);
  ASSERT_NE(s, nullptr);
  std::shared_ptr<const ModelView> v = s->view();
  const ModelSnapshot& m = v->snapshot;
  ASSERT_EQ(m.vocab_size, 13u);
  ApiDispatcher dispatcher(s.get(), &metrics, "test");
  for (Encoding e : {Encoding::kProto, Encoding::kJson}) {
    uint32_t next = 0;
    int pages = 0;
    do {
      auto page = Page(&dispatcher, e, next, 3);
      ASSERT_TRUE(page.ok()) << page.status();
      ++pages;
      EXPECT_EQ(page->version().view(), v->version);
      EXPECT_EQ(page->version().sweep(), 5u);
      EXPECT_EQ(page->topics(), 4u);
      EXPECT_EQ(page->beta(), m.beta);
      EXPECT_EQ(page->vocabulary(), m.vocab_size);
      EXPECT_EQ(page->first_word(), next);
      if (next == 0) {
        ASSERT_EQ(page->alpha_size(), 4);
        ASSERT_EQ(page->topic_tokens_size(), 4);
        int64_t tokens = 0;
        for (int k = 0; k < 4; ++k) {
          EXPECT_EQ(page->alpha(k), m.alpha[k]);  // exact, also as JSON
          EXPECT_EQ(page->topic_tokens(k), v->totals[k]);
          tokens += page->topic_tokens(k);
        }
        EXPECT_EQ(tokens, 60 / 2 * 7 + 60 / 2 * 6);
      } else {
        EXPECT_EQ(page->alpha_size(), 0);
        EXPECT_EQ(page->topic_tokens_size(), 0);
      }
      ASSERT_EQ(page->words_size(),
                static_cast<int>(std::min<uint32_t>(3, m.vocab_size - next)));
      for (const api::WordTopicCounts& w : page->words()) {
        EXPECT_EQ(w.word(), v->vocab.word(next));
        ASSERT_EQ(w.topics_size(), w.counts_size());
        const uint64_t begin = m.word_offsets[next];
        ASSERT_EQ(static_cast<uint64_t>(w.topics_size()),
                  m.word_offsets[next + 1] - begin);
        for (int i = 0; i < w.topics_size(); ++i) {
          EXPECT_EQ(w.topics(i), m.entries[begin + i].topic);
          EXPECT_EQ(w.counts(i), m.entries[begin + i].count);
        }
        ++next;
      }
    } while (next < m.vocab_size);
    EXPECT_EQ(pages, 5);  // 13 words, 3 a page
  }
  // Without max_words, one page holds this small model.
  auto whole = Page(&dispatcher, Encoding::kProto, 0, 0);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->words_size(), 13);
  ASSERT_TRUE(s->Stop().ok());
  std::filesystem::remove_all(dir);
}

TEST(ExportModel, FirstWordPastTheEndIsInvalidArgument) {
  const std::string dir = TempDir("bad");
  MetricsRegistry metrics;
  std::unique_ptr<LatentdService> s =
      OpenStopped(dir, Themes(), 4, 1, &metrics);
  ASSERT_NE(s, nullptr);
  // At the end: an empty page.
  api::ExportModelRequest q;
  q.set_first_word(13);
  auto end = s->ExportModel(q);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->words_size(), 0);
  EXPECT_EQ(end->vocabulary(), 13u);
  // Past it: refused, in both encodings, as HTTP 400.
  ApiDispatcher dispatcher(s.get(), &metrics, "test");
  for (Encoding e : {Encoding::kProto, Encoding::kJson}) {
    for (uint32_t first : {14u, 4000000000u}) {
      auto page = Page(&dispatcher, e, first, 0);
      ASSERT_EQ(page.status().code(), absl::StatusCode::kInvalidArgument)
          << page.status();
      EXPECT_NE(page.status().message().find("past the end of the model's "
                                             "vocabulary of 13 words"),
                std::string::npos)
          << page.status();
      EXPECT_EQ(HttpStatusFor(page.status().code()), 400);
    }
  }
  ASSERT_TRUE(s->Stop().ok());
  std::filesystem::remove_all(dir);
}

// A word per (letter, letter, letter, letter) combination: "zqaaaa"...
std::string ManyWord(int i) {
  std::string w = "zq";
  for (int d = 0; d < 4; ++d) {
    w += static_cast<char>('a' + i % 26);
    i /= 26;
  }
  return w;
}

TEST(ExportModel, PagesStopAtAboutOneMebibyte) {
  const std::string dir = TempDir("big");
  // 40000 words, each in one document of 10, so rows have one topic:
  // about 40000 × 70 bytes of JSON, 3 pages of at most 1 MiB.
  std::vector<std::string> lines;
  for (int d = 0; d < 4000; ++d) {
    std::string line;
    for (int i = 0; i < 10; ++i) line += ManyWord(d * 10 + i) + " ";
    lines.push_back(line);
  }
  MetricsRegistry metrics;
  std::unique_ptr<LatentdService> s = OpenStopped(dir, lines, 2, 1, &metrics);
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->view()->snapshot.vocab_size, 40000u);
  ApiDispatcher dispatcher(s.get(), &metrics, "test");
  uint32_t next = 0;
  int pages = 0;
  while (next < 40000) {
    auto page = Page(&dispatcher, Encoding::kJson, next, 1000000);
    ASSERT_TRUE(page.ok()) << page.status();
    ASSERT_GT(page->words_size(), 0);
    EXPECT_LE(ToJson(*page).size(), size_t{1} << 20);
    EXPECT_EQ(page->words(0).word(), ManyWord(static_cast<int>(next)));
    next += page->words_size();
    ++pages;
  }
  EXPECT_EQ(next, 40000u);
  EXPECT_GE(pages, 2);
  EXPECT_LE(pages, 4);
  ASSERT_TRUE(s->Stop().ok());
  std::filesystem::remove_all(dir);
}

TEST(ExportModel, MergedWordsAppearInTheNextView) {
  const std::string dir = TempDir("merged");
  MetricsRegistry metrics;
  std::unique_ptr<LatentdService> s =
      OpenStopped(dir, Themes(), 4, 3, &metrics);
  ASSERT_NE(s, nullptr);
  auto before = s->ExportModel(api::ExportModelRequest());
  ASSERT_TRUE(before.ok()) << before.status();
  IngestRecord r;
  r.words = {"petrodollar", "oil", "petrodollar"};
  ASSERT_TRUE(s->IngestRecords({r}).ok());
  absl::StatusOr<api::ExportModelResponse> after;
  for (int i = 0; i < 500; ++i) {
    after = s->ExportModel(api::ExportModelRequest());
    ASSERT_TRUE(after.ok()) << after.status();
    if (after->vocabulary() == 14) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(after->vocabulary(), 14u);
  EXPECT_NE(after->version().view(), before->version().view());
  const api::WordTopicCounts& fresh = after->words(13);
  EXPECT_EQ(fresh.word(), "petrodollar");
  int64_t n = 0;
  for (int32_t c : fresh.counts()) n += c;
  EXPECT_EQ(n, 2);
  ASSERT_TRUE(s->Stop().ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace latentd::service
