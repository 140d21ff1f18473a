// big_corpus: writes an LDA corpus of any size with known topics and a
// Zipf vocabulary, streaming, for the large-corpus benchmark
// (ops/bench/big_corpus.sh). Memory is the topics' alias tables (K × V
// slots), whatever the number of documents.
//
// The model: word w's base weight is (w + 1)^-zipf; topic k draws
// phi_k(w) ∝ base(w) · g_kw with g_kw ~ Gamma(topic_shape) (small shapes:
// each topic favours its own few words among the frequent ones), so the
// corpus's word frequencies follow the Zipf law while each topic is
// distinct. Document d: theta_d ~ Dirichlet(alpha), length ~
// Poisson(doc_length) (at least 1), each token z ~ theta_d, w ~ phi_z,
// all from Rng::ForStream(seed, 3, d): the first n documents of a larger
// run are the same n documents, so `head -n N` of one file gives the
// smaller corpora.
//
// Writes OUT/corpus.ldac (LDA-C: `N id:count ...` a line, ids 0-based),
// OUT/vocab.txt (word w is "w<w>"; every word is listed whether or not it
// occurs) and OUT/topics.txt (each true topic's 10 most probable words).
//
// Usage: big_corpus --out DIR [--docs 1000000] [--vocab 200000]
//        [--topics 100] [--doc-length 200] [--alpha 0.1] [--zipf 1.0]
//        [--topic-shape 0.1] [--seed 1]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "base/random.h"
#include "corpora/synthetic_corpus.h"
#include "sampler/internal/alias_table.h"

namespace {

using latentd::Rng;
using latentd::internal::AliasTable;

struct Options {
  std::string out;
  uint64_t docs = 1000000;
  uint32_t vocab = 200000;
  uint32_t topics = 100;
  double doc_length = 200;
  double alpha = 0.1;
  double zipf = 1.0;
  double topic_shape = 0.1;
  uint64_t seed = 1;
};

// phi_k for every topic, as alias tables; topics.txt from the same weights.
std::vector<AliasTable> DrawTopics(const Options& o, FILE* topics_txt) {
  std::vector<AliasTable> tables(o.topics);
  std::vector<double> weights(o.vocab);
  std::vector<uint32_t> order(o.vocab);
  for (uint32_t k = 0; k < o.topics; ++k) {
    Rng rng = Rng::ForStream(o.seed, 1, k);
    for (uint32_t w = 0; w < o.vocab; ++w) {
      weights[w] = std::pow(w + 1.0, -o.zipf) * rng.Gamma(o.topic_shape);
    }
    tables[k].Build(weights);
    std::iota(order.begin(), order.end(), 0u);
    std::partial_sort(
        order.begin(), order.begin() + std::min<uint32_t>(10, o.vocab),
        order.end(),
        [&weights](uint32_t a, uint32_t b) { return weights[a] > weights[b]; });
    std::fprintf(topics_txt, "%u", k);
    for (uint32_t i = 0; i < std::min<uint32_t>(10, o.vocab); ++i) {
      std::fprintf(topics_txt, " w%u:%.4f", order[i],
                   weights[order[i]] / tables[k].total());
    }
    std::fputc('\n', topics_txt);
  }
  return tables;
}

FILE* OpenOrDie(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::perror(path.c_str());
    std::exit(1);
  }
  return f;
}

void CloseOrDie(FILE* f, const std::string& path) {
  if (std::ferror(f) != 0 || std::fclose(f) != 0) {
    std::fprintf(stderr, "big_corpus: writing %s failed\n", path.c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"big_corpus: an LDA-C corpus with known topics, streamed"};
  app.add_option("--out", o.out, "Output directory (must exist)")->required();
  app.add_option("--docs", o.docs, "Documents")->check(CLI::PositiveNumber);
  app.add_option("--vocab", o.vocab, "Vocabulary size")
      ->check(CLI::Range(1u, 1u << 26));
  app.add_option("--topics", o.topics, "True topics")
      ->check(CLI::Range(1u, 65536u));
  app.add_option("--doc-length", o.doc_length, "Mean document length")
      ->check(CLI::PositiveNumber);
  app.add_option("--alpha", o.alpha, "Document-topic Dirichlet prior")
      ->check(CLI::PositiveNumber);
  app.add_option("--zipf", o.zipf, "Zipf exponent of the word frequencies")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--topic-shape", o.topic_shape,
                 "Gamma shape of each topic's word emphasis")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", o.seed, "Random seed");
  CLI11_PARSE(app, argc, argv);

  const auto start = std::chrono::steady_clock::now();
  const std::string corpus_path = o.out + "/corpus.ldac";
  const std::string vocab_path = o.out + "/vocab.txt";
  const std::string topics_path = o.out + "/topics.txt";
  FILE* topics_txt = OpenOrDie(topics_path);
  const std::vector<AliasTable> phi = DrawTopics(o, topics_txt);
  CloseOrDie(topics_txt, topics_path);
  FILE* vocab_txt = OpenOrDie(vocab_path);
  for (uint32_t w = 0; w < o.vocab; ++w) std::fprintf(vocab_txt, "w%u\n", w);
  CloseOrDie(vocab_txt, vocab_path);

  FILE* corpus = OpenOrDie(corpus_path);
  std::vector<double> theta_weights(o.topics);
  AliasTable theta;
  std::vector<uint32_t> words;
  uint64_t tokens = 0;
  for (uint64_t d = 0; d < o.docs; ++d) {
    Rng rng = Rng::ForStream(o.seed, 3, d);
    latentd::SampleDirichlet(rng, o.alpha, theta_weights);
    theta.Build(theta_weights);
    const uint64_t length = std::max<uint64_t>(1, rng.Poisson(o.doc_length));
    words.resize(length);
    for (uint32_t& w : words) w = phi[theta.Draw(&rng)].Draw(&rng);
    std::sort(words.begin(), words.end());
    size_t distinct = 0;
    for (size_t i = 0; i < words.size(); ++i) {
      distinct += i == 0 || words[i] != words[i - 1];
    }
    std::fprintf(corpus, "%zu", distinct);
    for (size_t i = 0; i < words.size();) {
      size_t j = i;
      while (j < words.size() && words[j] == words[i]) ++j;
      std::fprintf(corpus, " %u:%zu", words[i], j - i);
      i = j;
    }
    std::fputc('\n', corpus);
    tokens += length;
    if ((d + 1) % 100000 == 0) {
      std::fprintf(stderr, "big_corpus: %lu documents, %lu tokens\n",
                   static_cast<unsigned long>(d + 1),
                   static_cast<unsigned long>(tokens));
    }
  }
  CloseOrDie(corpus, corpus_path);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf(
      "big_corpus: %lu documents, %lu tokens, vocabulary %u, %u "
      "topics, in %.1f s: %s\n",
      static_cast<unsigned long>(o.docs), static_cast<unsigned long>(tokens),
      o.vocab, o.topics, seconds, corpus_path.c_str());
  return 0;
}
