#include "service/model_view.h"

namespace latentd::service {

double ModelView::Phi(uint32_t word, uint32_t topic) const {
  const double vbeta = snapshot.beta * snapshot.vocab_size;
  return (table->Get(word, topic) + snapshot.beta) /
         (static_cast<double>(totals[topic]) + vbeta);
}

std::shared_ptr<const ModelView> BuildModelView(
    ModelSnapshot snapshot, const Vocabulary& vocab,
    absl::flat_hash_map<std::string, UserTopics> users,
    const TokenStoreMeta& meta, uint64_t version) {
  auto view = std::make_shared<ModelView>();
  view->sweep = snapshot.sweep;
  view->version = version;
  view->table = snapshot.ToTable();
  view->totals = snapshot.TopicTotals();
  view->word_totals.assign(snapshot.vocab_size, 0);
  for (uint32_t w = 0; w < snapshot.vocab_size; ++w) {
    for (uint64_t i = snapshot.word_offsets[w];
         i < snapshot.word_offsets[w + 1]; ++i) {
      view->word_totals[w] += snapshot.entries[i].count;
    }
  }
  view->topics = SummarizeTopics(snapshot, ModelView::kMaxTopWords);
  if (vocab.size() == snapshot.vocab_size) {
    view->vocab = vocab;
  } else {
    for (uint32_t w = 0; w < snapshot.vocab_size && w < vocab.size(); ++w) {
      view->vocab.Add(vocab.word(w));
    }
  }
  view->snapshot = std::move(snapshot);
  view->users = std::move(users);
  view->store_meta = meta;
  return view;
}

}  // namespace latentd::service
