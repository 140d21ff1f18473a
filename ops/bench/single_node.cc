#include "ops/bench/single_node.h"

#include <string>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "corpora/corpus_builder.h"
#include "ops/bench/elastic_timeline.h"

namespace latentd::bench {

absl::StatusOr<std::unique_ptr<Trainer>> MakeBenchTrainer(
    DocumentReader& reader, TopicId k, uint64_t seed, int threads,
    int eval_every) {
  std::unique_ptr<TokenStore> store = CreateInMemoryTokenStore({});
  CorpusBuilderOptions build;
  build.num_topics = k;
  build.seed = seed;
  LATENTD_RETURN_IF_ERROR(BuildCorpus(reader, build, store.get()).status());
  TrainerOptions o;
  o.num_topics = k;
  o.alpha = 50.0 / k;
  o.optimize_alpha = false;
  o.seed = seed;
  o.eval_every = eval_every;
  o.pipeline.threads = threads;
  return Trainer::Create(o, std::move(store));
}

absl::StatusOr<SingleNodeFigures> RunSingleNode(const ReaderOptions& corpus,
                                                const SingleNodeOptions& o) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<DocumentReader> reader,
                           OpenDocumentReader(corpus));
  if (o.max_docs != 0) {
    std::vector<std::vector<std::string>> docs;
    RawDocument doc;
    while (docs.size() < o.max_docs) {
      LATENTD_ASSIGN_OR_RETURN(bool more, reader->Next(&doc));
      if (!more) break;
      docs.push_back(std::move(doc.words));
    }
    reader = NewInMemoryDocumentReader(std::move(docs));
  }
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer,
                           MakeBenchTrainer(*reader, o.topics, 7, o.threads,
                                            o.evaluate ? o.sweeps : 0));
  SingleNodeFigures f;
  double tokens = 0, seconds = 0;
  const double cpu_start = ProcessCpuSeconds();
  for (int s = 0; s < o.sweeps; ++s) {
    LATENTD_ASSIGN_OR_RETURN(SweepReport r, trainer->Sweep());
    tokens += r.result.tokens;
    seconds += r.result.seconds;
    if (r.evaluated) f.ll_per_token = r.log_likelihood_per_token;
  }
  f.tokens_per_s = tokens / seconds;
  f.cpu_seconds_per_token = (ProcessCpuSeconds() - cpu_start) / tokens;
  return f;
}

}  // namespace latentd::bench
