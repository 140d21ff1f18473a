// latentctl export's client side against an in-process LatentdService
// (through the API dispatcher, binary and JSON): the files it writes are
// byte-identical to the offline writers' on the served view, a model that
// moves between pages makes it start over and, if it keeps moving, fail
// saying so, and contradictory pages are refused.
#include "cli/export_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "sampler/model_export.h"
#include "service/api_dispatch.h"
#include "service/latentd_service.h"
#include "service/metrics.h"

namespace latentd {
namespace {

using service::ApiClient;
using service::ApiDispatcher;
using service::Encoding;
using service::LatentdService;
using service::Method;

std::string TempDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/export_command_" +
                          std::to_string(::getpid()) + "_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Calls the service in-process through the dispatcher, encoded as a front
// end would.
class InProcessClient : public ApiClient {
 public:
  InProcessClient(LatentdService* s, Encoding encoding)
      : dispatcher_(s, &metrics_, "test"), encoding_(encoding) {}

  absl::Status Call(Method method, const google::protobuf::Message& request,
                    google::protobuf::Message* response) override {
    ++calls;
    const bool json = encoding_ == Encoding::kJson;
    absl::StatusOr<std::string> out = dispatcher_.Call(
        method, json ? service::ToJson(request) : request.SerializeAsString(),
        encoding_, /*admin=*/true);
    if (!out.ok()) return out.status();
    if (json) return service::ParseJson(*out, response);
    return response->ParseFromString(*out)
               ? absl::OkStatus()
               : absl::DataLossError("unparsable answer");
  }
  int calls = 0;

 private:
  service::MetricsRegistry metrics_;
  ApiDispatcher dispatcher_;
  Encoding encoding_;
};

// Passes calls on to `inner`, then lets `edit` change the n-th answer
// (counting from 0).
class EditingClient : public ApiClient {
 public:
  using Edit = std::function<void(int n, api::ExportModelResponse*)>;
  EditingClient(ApiClient* inner, Edit edit)
      : inner_(inner), edit_(std::move(edit)) {}
  absl::Status Call(Method method, const google::protobuf::Message& request,
                    google::protobuf::Message* response) override {
    absl::Status s = inner_->Call(method, request, response);
    if (s.ok()) {
      edit_(n_++, dynamic_cast<api::ExportModelResponse*>(response));
    }
    return s;
  }

 private:
  ApiClient* inner_;
  Edit edit_;
  int n_ = 0;
};

class ExportCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir(
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    const std::string corpus = dir_ + "/corpus.txt";
    FILE* f = std::fopen(corpus.c_str(), "w");
    for (int d = 0; d < 60; ++d) {
      std::fprintf(f, "%s\n",
                   d % 3 == 0   ? "oil prices opec crude barrel energy market"
                   : d % 3 == 1 ? "football match goal team player season"
                                : "court judge trial jury lawyer verdict");
    }
    std::fclose(f);
    service::ServiceOptions o;
    o.data_dir = dir_ + "/node";
    o.corpus.path = corpus;
    o.trainer.num_topics = 5;
    o.trainer.eval_every = 0;
    o.trainer.optimize_alpha = true;  // an asymmetric α, not 50/K
    o.trainer.alpha_burn_in = 2;
    o.trainer.alpha_interval = 2;
    o.max_sweeps = 8;
    auto s = LatentdService::Open(o, &metrics_);
    ASSERT_TRUE(s.ok()) << s.status();
    service_ = std::move(*s);
    service_->Start();
    for (int i = 0; i < 1000; ++i) {
      auto st = service_->Status(api::StatusRequest());
      if (st.ok() && st->version().sweep() == o.max_sweeps && !st->training()) {
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL() << "the service did not stop sampling";
  }
  void TearDown() override {
    if (service_ != nullptr) {
      EXPECT_TRUE(service_->Stop().ok());
    }
    std::filesystem::remove_all(dir_);
  }

  std::string dir_;
  service::MetricsRegistry metrics_;
  std::unique_ptr<LatentdService> service_;
};

constexpr const char* kFiles[] = {"vocab.txt", "word_topic_counts.tsv",
                                  "alpha.txt", "topics.txt"};

TEST_F(ExportCommandTest, FilesAreByteIdenticalToTheOfflineExportOfTheView) {
  std::shared_ptr<const service::ModelView> v = service_->view();
  const std::string offline = dir_ + "/offline";
  std::filesystem::create_directories(offline);
  ASSERT_TRUE(v->vocab.Save(offline + "/vocab.txt").ok());
  ASSERT_TRUE(ExportModelText(v->snapshot, v->vocab, 20, offline).ok());
  ASSERT_NE(v->snapshot.alpha[0], v->snapshot.alpha[1]);  // learned α

  for (Encoding e : {Encoding::kProto, Encoding::kJson}) {
    for (uint32_t page_words : {0u, 1u, 4u}) {
      InProcessClient api(service_.get(), e);
      FetchOptions o;
      o.page_words = page_words;
      auto m = FetchModel(&api, o);
      ASSERT_TRUE(m.ok()) << m.status();
      EXPECT_EQ(m->version.view(), v->version);
      EXPECT_EQ(m->snapshot.alpha, v->snapshot.alpha);  // exact, also as JSON
      EXPECT_EQ(m->snapshot.beta, v->snapshot.beta);
      EXPECT_EQ(m->snapshot.word_offsets, v->snapshot.word_offsets);
      EXPECT_EQ(m->snapshot.tokens, 60u / 3 * (7 + 6 + 6));
      EXPECT_EQ(m->pages,
                page_words == 0 ? 1 : (19 + page_words - 1) / page_words);
      const std::string online = dir_ + "/online_" +
                                 std::to_string(static_cast<int>(e)) + "_" +
                                 std::to_string(page_words);
      std::filesystem::create_directories(online);
      ASSERT_TRUE(WriteModelText(*m, 20, online).ok());
      for (const char* f : kFiles) {
        const std::string want = ReadFile(offline + "/" + f);
        ASSERT_FALSE(want.empty()) << f;
        EXPECT_EQ(ReadFile(online + "/" + f), want) << f << " " << online;
      }
    }
  }
}

TEST_F(ExportCommandTest, StartsOverWhenTheModelMovesBetweenPages) {
  InProcessClient inner(service_.get(), Encoding::kProto);
  // The second page of the first fetch comes from a later view.
  EditingClient api(&inner, [](int n, api::ExportModelResponse* r) {
    if (n == 1) r->mutable_version()->set_view(r->version().view() + 1);
  });
  char* text = nullptr;
  size_t size = 0;
  FILE* progress = open_memstream(&text, &size);
  FetchOptions o;
  o.page_words = 5;
  o.progress = progress;
  auto m = FetchModel(&api, o);
  std::fclose(progress);
  const std::string said(text, size);
  std::free(text);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->pages, 4);         // 19 words, 5 a page
  EXPECT_EQ(inner.calls, 2 + 4);  // the abandoned fetch's 2, then 4
  EXPECT_NE(said.find("the model changed"), std::string::npos) << said;
  EXPECT_NE(said.find("starting over"), std::string::npos) << said;
}

TEST_F(ExportCommandTest, FailsWhenTheModelKeepsMoving) {
  InProcessClient inner(service_.get(), Encoding::kProto);
  EditingClient api(&inner, [](int n, api::ExportModelResponse* r) {
    r->mutable_version()->set_view(r->version().view() + n);
  });
  FetchOptions o;
  o.page_words = 5;
  o.attempts = 3;
  auto m = FetchModel(&api, o);
  ASSERT_EQ(m.status().code(), absl::StatusCode::kAborted) << m.status();
  EXPECT_NE(m.status().message().find("3 times running"), std::string::npos)
      << m.status();
  EXPECT_NE(m.status().message().find("training is moving the model"),
            std::string::npos)
      << m.status();
  EXPECT_NE(m.status().message().find("--max-sweeps"), std::string::npos)
      << m.status();
  EXPECT_EQ(inner.calls, 3 * 2);
}

TEST_F(ExportCommandTest, RefusesContradictoryPages) {
  InProcessClient inner(service_.get(), Encoding::kProto);
  const std::function<void(api::ExportModelResponse*)> breakages[] = {
      // A word twice.
      [](api::ExportModelResponse* r) {
        r->mutable_words(1)->set_word(r->words(0).word());
      },
      // A topic out of range.
      [](api::ExportModelResponse* r) {
        r->mutable_words(0)->set_topics(0, r->topics());
      },
      // A count the column totals do not include.
      [](api::ExportModelResponse* r) {
        r->mutable_words(0)->set_counts(0, r->words(0).counts(0) + 1);
      },
      // A page that starts elsewhere than asked.
      [](api::ExportModelResponse* r) {
        r->set_first_word(r->first_word() + 1);
      },
  };
  for (const auto& b : breakages) {
    EditingClient api(&inner, [&b](int n, api::ExportModelResponse* r) {
      if (n == 1) b(r);
    });
    FetchOptions o;
    o.page_words = 5;
    auto m = FetchModel(&api, o);
    EXPECT_EQ(m.status().code(), absl::StatusCode::kDataLoss) << m.status();
  }
}

}  // namespace
}  // namespace latentd
