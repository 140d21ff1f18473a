#include "service/topic_queries.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "sampler/fold_in.h"
#include "service/internal/topic_answers.h"

namespace latentd::service {
namespace {

using internal::AddRankedTopics;
using internal::CheckTopWords;
using internal::FillTopic;
using internal::OrDefault;
using internal::Ranked;

constexpr uint32_t kDefaultTopWords = 10;

int InferSlots(int configured) {
  if (configured > 0) return configured;
  return 2 * std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace

TopicQueries::TopicQueries(const ServiceOptions& options,
                           const TrainingLoop* training,
                           const DocumentChecker* checker,
                           const ClusterRouter* router,
                           const IngestPath* ingest)
    : options_(options),
      training_(*training),
      checker_(*checker),
      router_(*router),
      ingest_(*ingest),
      infer_gate_(InferSlots(options.infer_slots)) {}

api::ModelVersion TopicQueries::Version(const ModelView& v) {
  api::ModelVersion out;
  out.set_sweep(v.sweep);
  out.set_view(v.version);
  return out;
}

absl::StatusOr<api::ListTopicsResponse> TopicQueries::ListTopics(
    const api::ListTopicsRequest& request) const {
  LATENTD_RETURN_IF_ERROR(CheckTopWords(request.top_words()));
  std::shared_ptr<const ModelView> v = view();
  api::ListTopicsResponse resp;
  *resp.mutable_version() = Version(*v);
  for (const TopicSummary& t : v->topics) {
    FillTopic(*v, t, OrDefault(request.top_words(), kDefaultTopWords),
              resp.add_topics());
  }
  training_.coherence().AddTo(&resp);
  return resp;
}

absl::StatusOr<api::GetTopicResponse> TopicQueries::GetTopic(
    const api::GetTopicRequest& request) const {
  LATENTD_RETURN_IF_ERROR(CheckTopWords(request.top_words()));
  std::shared_ptr<const ModelView> v = view();
  if (request.topic() >= v->topics.size()) {
    return absl::NotFoundError(absl::StrCat(
        "topic ", request.topic(), " does not exist: the model has ",
        v->topics.size(), " topics (0..", v->topics.size() - 1, ")"));
  }
  api::GetTopicResponse resp;
  *resp.mutable_version() = Version(*v);
  FillTopic(*v, v->topics[request.topic()],
            OrDefault(request.top_words(), kDefaultTopWords),
            resp.mutable_topic());
  training_.coherence().AddTo(resp.mutable_topic());
  return resp;
}

absl::StatusOr<api::WordTopicsResponse> TopicQueries::WordTopics(
    const api::WordTopicsRequest& request) const {
  if (request.word().size() > options_.max_word_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a word of ", request.word().size(), " bytes is over the limit of ",
        options_.max_word_bytes, " (max-word-bytes)"));
  }
  std::vector<std::string> words =
      training_.tokenizer().Tokenize(request.word());
  if (words.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", request.word(), "' is not one word after tokenization (",
        words.size(), " words)"));
  }
  std::shared_ptr<const ModelView> v = view();
  std::optional<WordId> id = v->vocab.Find(words[0]);
  if (!id.has_value() || *id >= v->snapshot.vocab_size) {
    return absl::NotFoundError(
        absl::StrCat("word '", words[0], "' is not in the model"));
  }
  const uint32_t k = v->snapshot.num_topics;
  std::vector<double> p(k);
  double sum = 0;
  for (uint32_t t = 0; t < k; ++t) {
    p[t] = v->Phi(*id, t) * static_cast<double>(v->totals[t]);
    sum += p[t];
  }
  api::WordTopicsResponse resp;
  *resp.mutable_version() = Version(*v);
  resp.set_word(words[0]);
  resp.set_count(v->word_totals[*id]);
  const auto ranked = Ranked(p);
  const size_t n = std::min<size_t>(OrDefault(request.top(), 10), k);
  for (size_t i = 0; i < n; ++i) {
    api::TopicWeight* tw = resp.add_topics();
    tw->set_topic(ranked[i].first);
    tw->set_weight(sum > 0 ? ranked[i].second / sum : 0);
  }
  return resp;
}

absl::StatusOr<api::InferDocumentResponse> TopicQueries::InferDocument(
    const api::InferDocumentRequest& request) const {
  LATENTD_RETURN_IF_ERROR(CheckTopWords(request.top_words()));
  InferOptions o = options_.infer;
  if (request.iterations() != 0) o.iterations = request.iterations();
  if (request.burn_in() != 0) o.burn_in = request.burn_in();
  if (request.seed() != 0) o.seed = request.seed();
  if (o.iterations > static_cast<int>(options_.max_infer_iterations) ||
      o.burn_in >= o.iterations) {
    return absl::InvalidArgumentError(absl::StrCat(
        "iterations must be in 1..", options_.max_infer_iterations,
        " and burn_in below it; got ", o.iterations, " and ", o.burn_in));
  }
  LATENTD_ASSIGN_OR_RETURN(std::vector<std::string> words,
                           checker_.TokenizeDocument(request.text()));
  std::shared_ptr<const ModelView> v = view();
  std::vector<WordId> ids;
  ids.reserve(words.size());
  for (const std::string& w : words) {
    std::optional<WordId> id = v->vocab.Find(w);
    if (id.has_value() && *id < v->snapshot.vocab_size) ids.push_back(*id);
  }
  if (ids.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "none of the document's ", words.size(), " words is in the model"));
  }
  absl::StatusOr<std::vector<double>> inferred;
  {
    internal::CpuGate::Pass pass = infer_gate_.Enter();
    FoldIn fold_in(*v->table, v->snapshot.alpha, v->snapshot.beta);
    inferred = fold_in.Infer(ids, o, /*stream=*/0);
  }
  LATENTD_ASSIGN_OR_RETURN(std::vector<double> theta, std::move(inferred));
  api::InferDocumentResponse resp;
  *resp.mutable_version() = Version(*v);
  resp.set_known_tokens(ids.size());
  resp.set_unknown_tokens(words.size() - ids.size());
  const auto ranked = Ranked(theta);
  // The top asked for, or those at least half the uniform weight.
  const double floor = 1.0 / (2.0 * theta.size());
  size_t n = 0;
  while (n < ranked.size() &&
         (request.top() != 0 ? n < request.top() : ranked[n].second >= floor)) {
    ++n;
  }
  AddRankedTopics(*v, ranked, n, request.top_words(), &resp);
  return resp;
}

absl::StatusOr<api::GetUserProfileResponse> TopicQueries::GetUserProfile(
    const api::GetUserProfileRequest& request) const {
  LATENTD_RETURN_IF_ERROR(CheckTopWords(request.top_words()));
  if (request.user().empty()) {
    return absl::InvalidArgumentError("a user id is needed");
  }
  LATENTD_RETURN_IF_ERROR(router_.CheckJoined());
  if (!request.local()) {
    const std::string owner = router_.UserOwner(request.user());
    if (!owner.empty()) return router_.ForwardProfile(owner, request);
  }
  std::shared_ptr<const ModelView> v = view();
  const std::vector<double>& alpha = v->snapshot.alpha;
  std::vector<double> counts(alpha.size(), 0.0);
  uint64_t tokens = 0, events = 0;
  auto it = v->users.find(request.user());
  if (it != v->users.end()) {
    const UserTopics& u = it->second;
    tokens = u.tokens;
    events = u.events;
    for (const auto& [k, c] : u.topic_counts) {
      if (k < counts.size()) counts[k] = static_cast<double>(c);
    }
  }
  api::GetUserProfileResponse resp;
  *resp.mutable_version() = Version(*v);
  resp.set_user(request.user());
  if (request.part())
    return ProfilePart(request.user(), it != v->users.end(), counts, tokens,
                       events, resp);
  // Events its failed-over owner had acknowledged, from the copies here.
  double copied_tokens = 0;
  uint64_t copied = 0;
  LATENTD_RETURN_IF_ERROR(
      AddCopiedEvents(request.user(), *v, &counts, &copied_tokens, &copied));
  // And the parts the other members hold.
  const bool found_elsewhere =
      AddProfileParts(request.user(), &counts, &tokens, &events, &resp);
  if (it == v->users.end() && copied == 0 && !found_elsewhere) {
    return absl::NotFoundError(absl::StrCat(
        "user '", request.user(),
        "' is not in the model (unknown, or events not merged yet)"));
  }
  const double alpha_sum = std::accumulate(alpha.begin(), alpha.end(), 0.0);
  const double total = static_cast<double>(tokens) + copied_tokens;
  std::vector<double> theta(alpha.size());
  for (uint32_t k = 0; k < alpha.size(); ++k) {
    theta[k] = (counts[k] + alpha[k]) / (total + alpha_sum);
  }
  resp.set_tokens(tokens + static_cast<uint64_t>(std::llround(copied_tokens)));
  resp.set_events(events + copied);
  AddRankedTopics(*v, Ranked(theta), OrDefault(request.top(), 5),
                  OrDefault(request.top_words(), 5), &resp);
  return resp;
}

absl::Status TopicQueries::AddCopiedEvents(const std::string& user,
                                           const ModelView& v,
                                           std::vector<double>* counts,
                                           double* tokens,
                                           uint64_t* events) const {
  LATENTD_ASSIGN_OR_RETURN(std::vector<std::vector<std::string>> docs,
                           ingest_.CopiedEvents(user));
  if (docs.empty()) return absl::OkStatus();
  InferOptions o = options_.infer;
  internal::CpuGate::Pass pass = infer_gate_.Enter();
  FoldIn fold_in(*v.table, v.snapshot.alpha, v.snapshot.beta);
  std::vector<WordId> ids;
  for (const std::vector<std::string>& words : docs) {
    ++*events;
    ids.clear();
    for (const std::string& w : words) {
      std::optional<WordId> id = v.vocab.Find(w);
      if (id.has_value() && *id < v.snapshot.vocab_size) ids.push_back(*id);
    }
    if (ids.empty()) continue;
    LATENTD_ASSIGN_OR_RETURN(std::vector<double> theta,
                             fold_in.Infer(ids, o, /*stream=*/0));
    for (size_t k = 0; k < theta.size() && k < counts->size(); ++k) {
      (*counts)[k] += theta[k] * static_cast<double>(ids.size());
    }
    *tokens += static_cast<double>(ids.size());
  }
  return absl::OkStatus();
}

}  // namespace latentd::service
