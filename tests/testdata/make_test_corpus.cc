// Writes the corpora the service, cluster and command-line tests train on,
// in place of real ones: make_test_corpus DIR writes DIR/corpus.ldac
// (LDA-C, `N id:count ...` per document, 0-based ids), DIR/vocab.txt (its
// words, one a line), DIR/other.lines (raw text, one document a line) and
// DIR/graph.txt (an edge list, "a<TAB>b" a line).
// The build runs it (tests/testdata/CMakeLists.txt); every run writes the
// same bytes.
//
// The documents are drawn from the LDA generative model
// (corpora/synthetic_corpus.h) in the shape of the AP corpus of lda-c that
// the tests were written against: 2,246 documents of about 194 tokens
// (Poisson; 436,185 in all), 20 topics, 11,588 distinct words. Every word
// of vocab.txt occurs. The priors (α = 1, β = 0.02) mix topics in a
// document and share words among topics about as much as AP does, so that
// it costs about as much to sample: trained with K = 20, about 20% of the
// tokens still change topic each sweep after 100 sweeps (AP: 26%; with
// α = 0.1, β = 0.01, 6%), and a cluster of latentd daemons samples it at
// AP's speed (3.4 against 3.8 M tokens/s; 5.4 with the sparser priors,
// fast enough to change what the cluster tests see mid-training). The first
// words are English news words, so that the texts the tests ingest ("oil prices
// rose ...") hold known words as well as new ones; the rest are made-up words
// of letters (e.g. "bakemo"), each one the Tokenizer keeps as it is.
//
// other.lines is another corpus in another format: 300 documents of about
// 100 words from 10 other topics, over 3,000 words of which about half are
// in vocab.txt and the rest in no other file (made-up words that start
// with a vowel, e.g. "abekol").
//
// graph.txt is a graph in the shape of SNAP ca-GrQc that the graph tests
// were written against: vertices 0 to 5241 in communities of 20 (vertex v
// in community perm(v) / 20, perm a fixed shuffle), each pair inside a
// community an edge with probability 0.3 and one edge per five vertices
// across communities: 16,044 edges, each listed once, after a "#" line.
// It holds the edge 3466-937 that the tests name. Trained as the tests do
// (d = 32, 10% held out, 30 epochs) its held-out AUC is 0.970 (ca-GrQc:
// 0.967).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/random.h"
#include "corpora/synthetic_corpus.h"
#include "corpora/tokenizer.h"

namespace latentd {
namespace {

constexpr const char* kNewsWords[] = {
    "oil",      "prices",    "rose",       "opec",     "ministers", "met",
    "vienna",   "soviet",    "union",      "united",   "states",    "signed",
    "arms",     "treaty",    "stock",      "market",   "fell",      "sharply",
    "wall",     "street",    "today",      "police",   "arrested",  "men",
    "shooting", "city",      "president",  "told",     "congress",  "budget",
    "deficit",  "crude",     "government", "percent",  "million",   "billion",
    "company",  "officials", "people",     "year",     "trade",     "bank",
    "court",    "war",       "party",      "election", "report",    "world",
    "price",    "national",  "dollar",     "workers",  "military",  "house",
    "senate",   "economy",   "minister",   "talks",    "business",  "american",
};

// `n` made-up words, in order: three consonant-vowel syllables ("bakemo"),
// or with vowel_first three vowel-consonant ones ("abekol").
std::vector<std::string> MadeUpWords(
    size_t n, bool vowel_first, const absl::flat_hash_set<std::string>& taken) {
  static constexpr char kConsonants[] = "bdfgklmnprstvz";
  static constexpr char kVowels[] = "aeiou";
  constexpr int kC = sizeof(kConsonants) - 1, kV = sizeof(kVowels) - 1;
  const Tokenizer tokenizer;
  std::vector<std::string> words;
  for (int i = 0; words.size() < n; ++i) {
    std::string w;
    for (int s = 0, x = i; s < 3; ++s, x /= kC * kV) {
      const char c = kConsonants[x % (kC * kV) / kV], v = kVowels[x % kV];
      w += vowel_first ? v : c;
      w += vowel_first ? c : v;
    }
    const std::vector<std::string> kept = tokenizer.Tokenize(w);
    if (kept.size() == 1 && kept[0] == w && !taken.contains(w)) {
      words.push_back(std::move(w));
    }
  }
  return words;
}

// graph.txt (see the header).
bool WriteGraph(const std::string& path) {
  constexpr uint32_t kVertices = 5242, kGroup = 20;
  constexpr double kInside = 0.3, kAcrossPerVertex = 0.2;
  Rng rng(3);
  std::vector<uint32_t> perm(kVertices);
  for (uint32_t v = 0; v < kVertices; ++v) perm[v] = v;
  for (uint32_t v = kVertices - 1; v > 0; --v) {
    std::swap(perm[v], perm[rng.UniformInt(v + 1)]);
  }
  std::vector<uint32_t> by_slot(kVertices);  // the vertex at each slot
  for (uint32_t v = 0; v < kVertices; ++v) by_slot[perm[v]] = v;
  absl::flat_hash_set<uint64_t> seen;
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  auto add = [&](uint32_t a, uint32_t b) {
    if (a == b) return;
    if (a > b) std::swap(a, b);
    if (seen.insert(uint64_t{a} << 32 | b).second) edges.push_back({a, b});
  };
  add(3466, 937);
  for (uint32_t first = 0; first < kVertices; first += kGroup) {
    const uint32_t end = std::min(first + kGroup, kVertices);
    for (uint32_t i = first; i < end; ++i) {
      for (uint32_t j = i + 1; j < end; ++j) {
        if (rng.Uniform() < kInside) add(by_slot[i], by_slot[j]);
      }
    }
  }
  const auto across = static_cast<uint32_t>(kVertices * kAcrossPerVertex);
  for (uint32_t n = 0; n < across; ++n) {
    add(static_cast<uint32_t>(rng.UniformInt(kVertices)),
        static_cast<uint32_t>(rng.UniformInt(kVertices)));
  }
  std::ofstream out(path, std::ios::trunc);
  out << "# planted partition: " << kVertices << " vertices, communities of "
      << kGroup << ", " << edges.size() << " edges (make_test_corpus)\n";
  for (const auto& [a, b] : edges) out << a << "\t" << b << "\n";
  out.close();
  return static_cast<bool>(out);
}

int Main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  SyntheticCorpusOptions o;
  o.num_topics = 20;
  o.vocab_size = 14000;  // 11,588 of them occur
  o.num_docs = 2246;
  o.mean_doc_length = 194;
  o.alpha = 1.0;
  o.beta = 0.02;
  o.seed = 1;
  absl::StatusOr<SyntheticCorpus> corpus = GenerateSyntheticCorpus(o);
  if (!corpus.ok()) {
    std::fprintf(stderr, "%s\n", corpus.status().ToString().c_str());
    return 1;
  }
  // Number the words that occur in order of first occurrence.
  std::vector<int64_t> id(o.vocab_size, -1);
  size_t used = 0;
  for (const auto& doc : corpus->docs) {
    for (WordId w : doc) {
      if (id[w] < 0) id[w] = static_cast<int64_t>(used++);
    }
  }
  absl::flat_hash_set<std::string> taken(std::begin(kNewsWords),
                                         std::end(kNewsWords));
  std::vector<std::string> names(std::begin(kNewsWords), std::end(kNewsWords));
  for (std::string& w : MadeUpWords(used - names.size(), false, taken)) {
    names.push_back(std::move(w));
  }
  std::ofstream vocab(dir + "/vocab.txt", std::ios::trunc);
  for (size_t i = 0; i < used; ++i) vocab << names[i] << "\n";
  std::ofstream docs(dir + "/corpus.ldac", std::ios::trunc);
  for (const auto& doc : corpus->docs) {
    std::vector<uint32_t> count(used, 0);
    std::vector<uint32_t> order;  // word ids in order of first occurrence
    for (WordId w : doc) {
      if (count[id[w]]++ == 0) order.push_back(static_cast<uint32_t>(id[w]));
    }
    std::string line = absl::StrCat(order.size());
    for (uint32_t w : order) absl::StrAppend(&line, " ", w, ":", count[w]);
    docs << line << "\n";
  }
  // other.lines: its word w is names[w / 2] for even w, else a word of its
  // own.
  SyntheticCorpusOptions oo;
  oo.num_topics = 10;
  oo.vocab_size = 3000;
  oo.num_docs = 300;
  oo.mean_doc_length = 100;
  oo.alpha = 0.1;
  oo.beta = 0.01;
  oo.seed = 2;
  absl::StatusOr<SyntheticCorpus> other = GenerateSyntheticCorpus(oo);
  if (!other.ok()) {
    std::fprintf(stderr, "%s\n", other.status().ToString().c_str());
    return 1;
  }
  const std::vector<std::string> own =
      MadeUpWords(oo.vocab_size / 2, true, taken);
  std::ofstream lines(dir + "/other.lines", std::ios::trunc);
  for (const auto& doc : other->docs) {
    std::string line;
    for (WordId w : doc) {
      absl::StrAppend(&line, line.empty() ? "" : " ",
                      w % 2 == 0 ? names[w / 2] : own[w / 2]);
    }
    lines << line << "\n";
  }
  vocab.close();
  docs.close();
  lines.close();
  if (!vocab || !docs || !lines || !WriteGraph(dir + "/graph.txt")) {
    std::fprintf(stderr, "make_test_corpus: cannot write into %s\n",
                 dir.c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace latentd

int main(int argc, char** argv) { return latentd::Main(argc, argv); }
