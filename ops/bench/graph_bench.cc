// graph_bench: graph factorization (issue 14), each workload against a
// baseline measured in the same run, ratios printed.
//
// Workloads (--sections, comma separated):
//   throughput  soc-Epinions1 (405,740 edges), d=32, 5 negatives: edges/s of
//               the pipeline with 1 thread and with 2 threads over
//               --throughput-epochs epochs; prints the 2/1 ratio.
//   quality     ca-HepTh and ca-GrQc, the held-out protocol of
//               docs/design.md (10% of edges, as many non-edges): seconds
//               of training until the held-out AUC first reaches --target-auc
//               (checked after each epoch; evaluation not timed), and the
//               AUC / average precision after --epochs, beside common
//               neighbours, Adamic-Adar and a truncated SVD (d=32, subspace
//               iteration, sampler/graph/link_eval.h) of the same split,
//               with their seconds; then the same on a sparse graph
//               without triangles made here (SparseBipartite), where the
//               neighbourhood heuristics have nothing to go on.
//   sparse      what holds SGD back on the sparse SBM (issue 34): held-out
//               AUC after 20 and --epochs epochs of variants of the
//               trainer's settings (start, learning rate and its decay, λ,
//               negatives, an SVD warm start), each on the same split,
//               beside the truncated SVD d=32 and its positive-eigenvalue
//               part (all a Gram matrix ⟨z_a, z_b⟩ can express); on the
//               SBM also by the negatives' side (same side: never an edge
//               in a bipartite graph); then a few of them on ca-GrQc and
//               ca-HepTh. Not in the default sections.
//   signature   the indefinite inner product (sampler/graph/signature.h):
//               the same table as sparse for variants with 8 or 16 of the
//               d=32 coordinates counted negatively (--negative-dims of
//               latentctl graph train) beside the same settings without,
//               on the SBM (two seeds) and then on ca-GrQc and ca-HepTh.
//               Not in the default sections.
//   consensus   ca-HepTh training split on --nodes in-process nodes: the
//               whole-graph objective per epoch of each of --variants
//               (service/cluster/graph_cluster.h; default dual-sync,
//               dual-async, naive-sync, naive-async) with --dim,
//               --learning-rate and --mu, and the single-node objective
//               of the same trainer as the reference.
//
// Usage: graph_bench [--sections throughput,quality,consensus,sparse,signature]
//        [--epochs 20] [--nodes 4] [--target-auc 0.9] [--variants LIST]
//        [--dim 32] [--learning-rate 0.1] [--mu 0.01]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/str_split.h"
#include "sampler/graph/graph_trainer.h"
#include "sampler/graph/link_eval.h"
#include "service/cluster/graph_cluster.h"

namespace {

using latentd::EdgeList;
using latentd::GraphData;
using latentd::GraphTrainer;
using latentd::GraphTrainerOptions;
using latentd::LinkScores;
using latentd::LinkSplit;
using latentd::VertexId;

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string DataDir() {
  const char* d = std::getenv("LATENTD_DATA_DIR");
  return d != nullptr ? d : "../shared/data";
}

GraphData Load(const std::string& file) {
  const std::string path = DataDir() + "/" + file;
  absl::StatusOr<EdgeList> list = latentd::ReadEdgeList(path);
  if (absl::IsNotFound(list.status())) {  // exit 77: ctest's "skipped"
    std::printf("SKIP: real data %s is missing (LATENTD_DATA_DIR)\n",
                path.c_str());
    std::exit(77);
  }
  if (!list.ok()) {
    std::fprintf(stderr, "graph_bench: %s\n",
                 std::string(list.status().message()).c_str());
    std::exit(1);
  }
  absl::StatusOr<GraphData> g = GraphData::FromEdgeList(*list);
  if (!g.ok()) std::exit(1);
  return *std::move(g);
}

// The consensus section's trainer settings (--dim, --learning-rate, --mu).
GraphTrainerOptions consensus_trainer;

std::unique_ptr<GraphTrainer> MakeTrainer(const GraphData& g, int threads,
                                          GraphTrainerOptions o = {}) {
  o.threads = threads;
  absl::StatusOr<std::unique_ptr<GraphTrainer>> t = GraphTrainer::Create(g, o);
  if (!t.ok()) std::exit(1);
  return *std::move(t);
}

void Throughput(int epochs) {
  const GraphData g = Load("snap-soc-Epinions1/soc-Epinions1.txt.zst");
  std::printf(
      "\n== throughput: soc-Epinions1, %zu vertices, %zu edges, d=32, "
      "5 negatives, %d epochs\n",
      g.num_vertices(), g.num_edges(), epochs);
  double eps[3] = {0, 0, 0};
  for (int threads : {1, 2}) {
    std::unique_ptr<GraphTrainer> t = MakeTrainer(g, threads);
    double seconds = 0;
    uint64_t edges = 0, pairs = 0;
    for (int e = 0; e < epochs; ++e) {
      absl::StatusOr<latentd::EpochResult> r = t->RunEpoch();
      if (!r.ok()) std::exit(1);
      seconds += r->seconds;
      edges += r->edges;
      pairs += r->pairs;
    }
    eps[threads] = edges / seconds;
    std::printf(
        "threads %d: %.0f edges/s (%.0f pair terms/s), objective %.1f\n",
        threads, edges / seconds, pairs / seconds, t->Objective().total());
  }
  std::printf("ratio 2 threads / 1 thread: %.2f\n", eps[2] / eps[1]);
}

// A sparse graph without triangles, where the neighbourhood heuristics
// have nothing to go on (issue 14 asks for one beside the collaboration
// graphs): bipartite users × items with planted communities, each user
// with `degree` edges, 90% of them to items of its own community (a
// sparse stochastic block model; locally tree-like). A user and an item
// never share a neighbour, so common neighbours and Adamic-Adar score
// every held-out edge 0, while a user's community shows through the
// items its community's other users chose.
GraphData SparseBipartite(uint32_t users, uint32_t items, uint32_t communities,
                          uint32_t degree, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::set<std::pair<uint32_t, uint32_t>> pairs;  // (user, users + item)
  const uint32_t per = items / communities;
  for (uint32_t u = 0; u < users; ++u) {
    const uint32_t c = u % communities;
    for (uint32_t e = 0; e < degree; ++e) {
      const uint32_t item =
          rng() % 10 < 9 ? c * per + rng() % per : rng() % items;
      pairs.insert({u, users + item});
    }
  }
  EdgeList list;
  for (const auto& [a, b] : pairs) list.edges.push_back({a, b, 1.0f});
  absl::StatusOr<GraphData> g = GraphData::FromEdgeList(list);
  if (!g.ok()) std::exit(1);
  return *std::move(g);
}

void Quality(const std::string& name, const GraphData& g, int epochs,
             double target) {
  absl::StatusOr<LinkSplit> split = latentd::SplitHeldout(g, 0.1, 1);
  if (!split.ok()) std::exit(1);
  std::printf(
      "\n== quality: %s, %zu held-out positives, d=32, 5 negatives, "
      "1 thread\n",
      name.c_str(), split->positives.size());
  std::unique_ptr<GraphTrainer> t = MakeTrainer(split->train, 1);
  auto score = [&](VertexId a, VertexId b) { return t->Score(a, b); };
  double train_seconds = 0, to_target = -1;
  for (int e = 1; e <= epochs; ++e) {
    absl::StatusOr<latentd::EpochResult> r = t->RunEpoch();
    if (!r.ok()) std::exit(1);
    train_seconds += r->seconds;
    if (to_target < 0 && latentd::EvaluateLinks(*split, score).auc >= target) {
      to_target = train_seconds;
      std::printf("factorization reaches AUC %.2f after epoch %d, %.3f s\n",
                  target, e, to_target);
    }
  }
  const LinkScores mf = latentd::EvaluateLinks(*split, score);
  auto start = Clock::now();
  absl::StatusOr<latentd::SpectralEmbedding> svd =
      latentd::TruncatedSvd(split->train, 32, 40, 1);
  if (!svd.ok()) std::exit(1);
  const double svd_seconds = Since(start);
  const LinkScores sv = latentd::EvaluateLinks(
      *split, [&](VertexId a, VertexId b) { return svd->Score(a, b); });
  start = Clock::now();
  latentd::NeighborIndex index(split->train);
  const LinkScores cn = latentd::EvaluateLinks(
      *split,
      [&](VertexId a, VertexId b) { return index.CommonNeighbors(a, b); });
  const LinkScores aa = latentd::EvaluateLinks(
      *split, [&](VertexId a, VertexId b) { return index.AdamicAdar(a, b); });
  const double heuristic_seconds = Since(start);
  std::printf("%-26s %8s %8s %10s\n", "method", "AUC", "AP", "seconds");
  std::printf("%-26s %8.4f %8.4f %10.3f\n",
              ("factorization " + std::to_string(epochs) + " epochs").c_str(),
              mf.auc, mf.average_precision, train_seconds);
  std::printf("%-26s %8.4f %8.4f %10.3f\n", "truncated SVD d=32", sv.auc,
              sv.average_precision, svd_seconds);
  std::printf("%-26s %8.4f %8.4f %10.3f\n", "common neighbours", cn.auc,
              cn.average_precision, heuristic_seconds);
  std::printf("%-26s %8.4f %8.4f %10.3f\n", "Adamic-Adar", aa.auc,
              aa.average_precision, heuristic_seconds);
  std::printf(
      "ratio AUC factorization / SVD: %.3f; / Adamic-Adar: %.3f; "
      "seconds to AUC %.2f: %.3f\n",
      mf.auc / sv.auc, mf.auc / aa.auc, target, to_target);
}

// What holds SGD back on sparse graphs (issue 34): variants of the
// trainer's settings, each on the same split, held-out AUC after 20 and
// --epochs epochs, beside the truncated SVD (d=32) of the same split.
struct Variant {
  std::string name;
  GraphTrainerOptions options;
  bool svd_start = false;
};

// z_i = √(2λ_k) u_ik over the SVD's positive eigenpairs (on a bipartite
// graph, whose eigenvalues come in ± pairs, ⟨z_a, z_b⟩ is then the SVD's
// score between the two sides), the other coordinates as the trainer
// would start them.
std::vector<float> SvdStart(const GraphData& g,
                            const latentd::SpectralEmbedding& svd,
                            const GraphTrainerOptions& o) {
  std::vector<float> z(g.num_vertices() * o.dim);
  for (size_t i = 0; i < g.num_vertices(); ++i) {
    GraphTrainer::InitialRow(o, g.keys()[i], &z[i * o.dim]);
  }
  uint32_t col = 0;
  for (int k = 0; k < svd.rank && col < o.dim; ++k) {
    if (svd.values[k] <= 0) continue;
    const double scale = std::sqrt(2 * svd.values[k]);
    for (size_t i = 0; i < g.num_vertices(); ++i) {
      z[i * o.dim + col] =
          static_cast<float>(scale * svd.vectors[i * svd.rank + k]);
    }
    ++col;
  }
  return z;
}

// The SVD's score from its positive eigenvalues only: what a Gram matrix
// ⟨z_a, z_b⟩, positive semi-definite, can express.
double PositiveSvdScore(const latentd::SpectralEmbedding& svd, VertexId a,
                        VertexId b) {
  double x = 0;
  for (int k = 0; k < svd.rank; ++k) {
    if (svd.values[k] > 0) {
      x += svd.values[k] * svd.vectors[a * svd.rank + k] *
           svd.vectors[b * svd.rank + k];
    }
  }
  return x;
}

// `split` with only the negatives whose ends lie on the same side (`same`)
// or on both sides of the bipartite SBM (users are keys below `users`).
LinkSplit BySide(const LinkSplit& split, uint32_t users, bool same) {
  LinkSplit part;
  part.positives = split.positives;
  for (const auto& [a, b] : split.negatives) {
    const bool same_side =
        (split.train.keys()[a] < users) == (split.train.keys()[b] < users);
    if (same_side == same) part.negatives.push_back({a, b});
  }
  return part;
}

// Prints the table; returns each variant's AUC after `epochs` minus the
// SVD's (NaN where it diverged).
std::vector<double> RunVariants(const std::string& name, const GraphData& g,
                                const std::vector<Variant>& variants,
                                int epochs, uint32_t bipartite_users) {
  absl::StatusOr<LinkSplit> split = latentd::SplitHeldout(g, 0.1, 1);
  if (!split.ok()) std::exit(1);
  absl::StatusOr<latentd::SpectralEmbedding> svd =
      latentd::TruncatedSvd(split->train, 32, 40, 1);
  if (!svd.ok()) std::exit(1);
  auto svd_score = [&](VertexId a, VertexId b) { return svd->Score(a, b); };
  auto svd_plus = [&](VertexId a, VertexId b) {
    return PositiveSvdScore(*svd, a, b);
  };
  const double svd_auc = latentd::EvaluateLinks(*split, svd_score).auc;
  std::printf(
      "\n== sparse: %s, d=32, 1 thread; truncated SVD d=32 AUC %.4f, its "
      "positive eigenvalues only %.4f\n",
      name.c_str(), svd_auc, latentd::EvaluateLinks(*split, svd_plus).auc);
  std::printf("%-26s %8s %8s %9s", "variant", "AUC@20",
              ("AUC@" + std::to_string(epochs)).c_str(), "- SVD");
  if (bipartite_users > 0) std::printf(" %11s %11s", "cross-side", "same-side");
  std::printf("\n");
  std::vector<LinkSplit> sides;
  if (bipartite_users > 0) {
    sides = {BySide(*split, bipartite_users, false),
             BySide(*split, bipartite_users, true)};
    std::printf("%-26s %8s %8s %9s", "truncated SVD", "", "", "");
    for (const LinkSplit& p : sides) {
      std::printf(" %11.4f", latentd::EvaluateLinks(p, svd_score).auc);
    }
    std::printf("\n%-26s %8s %8s %9s", "SVD, positive part", "", "", "");
    for (const LinkSplit& p : sides) {
      std::printf(" %11.4f", latentd::EvaluateLinks(p, svd_plus).auc);
    }
    std::printf("\n");
  }
  std::vector<double> margins;
  for (const Variant& v : variants) {
    margins.push_back(std::nan(""));
    GraphTrainerOptions o = v.options;
    o.threads = 1;
    std::vector<float> initial;
    if (v.svd_start) initial = SvdStart(split->train, *svd, o);
    auto t = GraphTrainer::Create(split->train, o, std::move(initial));
    if (!t.ok()) std::exit(1);
    auto score = [&](VertexId a, VertexId b) { return (*t)->Score(a, b); };
    double at20 = 0;
    bool diverged = false;
    for (int e = 1; e <= epochs && !diverged; ++e) {
      diverged = !(*t)->RunEpoch().ok();
      if (e == 20) at20 = latentd::EvaluateLinks(*split, score).auc;
    }
    if (diverged) {
      std::printf("%-26s diverged\n", v.name.c_str());
      continue;
    }
    const double auc = latentd::EvaluateLinks(*split, score).auc;
    margins.back() = auc - svd_auc;
    std::printf("%-26s %8.4f %8.4f %+9.4f", v.name.c_str(), at20, auc,
                auc - svd_auc);
    for (const LinkSplit& p : sides) {
      std::printf(" %11.4f", latentd::EvaluateLinks(p, score).auc);
    }
    std::printf("\n");
  }
  return margins;
}

// The best AUC − SVD of the variants with a signature, and the verdict
// against `needed`.
void PrintBestSigned(const std::string& name,
                     const std::vector<Variant>& variants,
                     const std::vector<double>& margins, double needed) {
  double best = -1;
  std::string which = "none";
  for (size_t i = 0; i < variants.size(); ++i) {
    if (variants[i].options.negative_dims > 0 && margins[i] > best) {
      best = margins[i];
      which = variants[i].name;
    }
  }
  std::printf("%s: best with a signature %+.4f against SVD (%s), %s %+.2f\n",
              name.c_str(), best, which.c_str(),
              best >= needed ? "passes" : "short of", needed);
}

Variant MakeVariant(std::string name, double learning_rate, double decay,
                    double lambda, double init_scale = 0.1, int negatives = 5,
                    bool svd_start = false, uint32_t negative_dims = 0) {
  GraphTrainerOptions o;
  o.negative_dims = negative_dims;
  o.learning_rate = learning_rate;
  o.learning_rate_decay = decay;
  o.lambda = lambda;
  o.init_scale = init_scale;
  o.negatives = negatives;
  return {std::move(name), o, svd_start};
}

void Sparse(int epochs) {
  // Trainer defaults: η 0.1, decay 0.05, λ 1, init 0.1, 5 negatives.
  const std::vector<Variant> all = {
      MakeVariant("default", 0.1, 0.05, 1),
      MakeVariant("init 0.3", 0.1, 0.05, 1, 0.3),
      MakeVariant("init 1.0", 0.1, 0.05, 1, 1.0),
      MakeVariant("svd start", 0.1, 0.05, 1, 0.1, 5, true),
      MakeVariant("decay 0", 0.1, 0, 1),
      MakeVariant("lr 0.3", 0.3, 0.05, 1),
      MakeVariant("lr 0.3 decay 0", 0.3, 0, 1),
      MakeVariant("lambda 0.1", 0.1, 0.05, 0.1),
      MakeVariant("lambda 3", 0.1, 0.05, 3),
      MakeVariant("negatives 1", 0.1, 0.05, 1, 0.1, 1),
      MakeVariant("negatives 20", 0.1, 0.05, 1, 0.1, 20),
      MakeVariant("lr 0.3 lambda 3", 0.3, 0.05, 3),
      MakeVariant("lr 0.3 lambda 3 neg 20", 0.3, 0.05, 3, 0.1, 20),
  };
  RunVariants("sparse bipartite SBM", SparseBipartite(8000, 4000, 20, 4, 1),
              all, epochs, 8000);
  const std::vector<Variant> few = {
      MakeVariant("default", 0.1, 0.05, 1),
      MakeVariant("lr 0.3", 0.3, 0.05, 1),
      MakeVariant("lr 0.3 decay 0", 0.3, 0, 1),
      MakeVariant("lr 0.3 lambda 3", 0.3, 0.05, 3),
  };
  RunVariants("ca-GrQc", Load("snap-ca-GrQc/CA-GrQc.txt.zst"), few, epochs, 0);
  RunVariants("ca-HepTh", Load("snap-ca-HepTh/CA-HepTh.txt.zst"), few, epochs,
              0);
}

void Signature(int epochs) {
  // d=32 throughout; MakeVariant(name, η, decay, λ, init, negatives,
  // svd start, negative dims).
  const std::vector<Variant> all = {
      MakeVariant("default", 0.1, 0.05, 1),
      MakeVariant("lr 0.3", 0.3, 0.05, 1),
      MakeVariant("lr 0.3, 8 neg dims", 0.3, 0.05, 1, 0.1, 5, false, 8),
      MakeVariant("lr 0.3, 16 neg dims", 0.3, 0.05, 1, 0.1, 5, false, 16),
      MakeVariant("lr 0.3 l2 1 negative", 0.3, 0.05, 2, 0.1, 1),
      MakeVariant("  same, 8 neg dims", 0.3, 0.05, 2, 0.1, 1, false, 8),
      MakeVariant("  same, 16 neg dims", 0.3, 0.05, 2, 0.1, 1, false, 16),
      MakeVariant("  same, decay 0.02", 0.3, 0.02, 2, 0.1, 1, false, 16),
  };
  PrintBestSigned(
      "SBM seed 1", all,
      RunVariants("sparse bipartite SBM", SparseBipartite(8000, 4000, 20, 4, 1),
                  all, epochs, 8000),
      0.03);
  PrintBestSigned(
      "SBM seed 2", all,
      RunVariants("sparse bipartite SBM, seed 2",
                  SparseBipartite(8000, 4000, 20, 4, 2), all, epochs, 8000),
      0.03);
  RunVariants("ca-GrQc", Load("snap-ca-GrQc/CA-GrQc.txt.zst"), all, epochs, 0);
  RunVariants("ca-HepTh", Load("snap-ca-HepTh/CA-HepTh.txt.zst"), all, epochs,
              0);
}

void Consensus(int nodes, int epochs, const std::string& variants) {
  const GraphData g = Load("snap-ca-HepTh/CA-HepTh.txt.zst");
  absl::StatusOr<LinkSplit> split = latentd::SplitHeldout(g, 0.1, 1);
  if (!split.ok()) std::exit(1);
  std::printf(
      "\n== consensus: ca-HepTh training split, %d in-process nodes, "
      "whole-graph objective per epoch\n",
      nodes);
  std::unique_ptr<GraphTrainer> single =
      MakeTrainer(split->train, 1, consensus_trainer);
  std::vector<std::vector<double>> rows(epochs);
  std::vector<std::string> names = {"single"};
  for (int e = 0; e < epochs; ++e) {
    if (!single->RunEpoch().ok()) std::exit(1);
    rows[e].push_back(single->Objective().total());
  }
  for (const std::string& name :
       std::vector<std::string>(absl::StrSplit(variants, ','))) {
    absl::StatusOr<latentd::GraphConsensusVariant> v =
        latentd::ParseGraphConsensusVariant(name);
    if (!v.ok()) {
      std::fprintf(stderr, "graph_bench: %s\n",
                   std::string(v.status().message()).c_str());
      std::exit(2);
    }
    latentd::GraphClusterOptions o;
    o.nodes = nodes;
    o.variant = *v;
    o.trainer = consensus_trainer;
    o.reset_to_consensus = true;
    auto cluster = latentd::GraphCluster::Start(split->train, o);
    if (!cluster.ok()) std::exit(1);
    names.push_back(name);
    for (int e = 0; e < epochs; ++e) {
      absl::StatusOr<latentd::GraphClusterEpoch> r = (*cluster)->RunEpoch();
      rows[e].push_back(r.ok() ? r->objective : -1);
    }
  }
  std::printf("%5s", "epoch");
  for (const std::string& n : names) std::printf(" %12s", n.c_str());
  std::printf("\n");
  for (int e = 0; e < epochs; ++e) {
    std::printf("%5d", e + 1);
    for (double x : rows[e]) std::printf(" %12.1f", x);
    std::printf("\n");
  }
  std::printf("ratio to single at epoch %d:", epochs);
  for (size_t i = 1; i < names.size(); ++i) {
    std::printf(" %s %.3f", names[i].c_str(),
                rows[epochs - 1][i] / rows[epochs - 1][0]);
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"graph_bench: graph factorization against same-run baselines"};
  std::string sections = "throughput,quality,consensus";
  int epochs = 20, throughput_epochs = 3, nodes = 4;
  double target = 0.9;
  app.add_option("--sections", sections,
                 "throughput,quality,consensus,sparse,signature")
      ->capture_default_str();
  app.add_option("--epochs", epochs, "Epochs (quality, consensus)")
      ->capture_default_str();
  app.add_option("--throughput-epochs", throughput_epochs,
                 "Epochs (throughput)")
      ->capture_default_str();
  app.add_option("--nodes", nodes, "Nodes (consensus)")->capture_default_str();
  std::string variants = "dual-sync,dual-async,naive-sync,naive-async";
  app.add_option("--variants", variants, "Consensus variants to run")
      ->capture_default_str();
  consensus_trainer.mu = 0.01;
  app.add_option("--dim", consensus_trainer.dim, "d (consensus)")
      ->capture_default_str();
  app.add_option("--learning-rate", consensus_trainer.learning_rate,
                 "η (consensus)")
      ->capture_default_str();
  app.add_option("--mu", consensus_trainer.mu, "μ of the dual variants")
      ->capture_default_str();
  app.add_option("--target-auc", target, "Held-out AUC to time (quality)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  for (const std::string& s :
       std::vector<std::string>(absl::StrSplit(sections, ','))) {
    if (s == "throughput") {
      Throughput(throughput_epochs);
    } else if (s == "quality") {
      Quality("ca-HepTh", Load("snap-ca-HepTh/CA-HepTh.txt.zst"), epochs,
              target);
      Quality("ca-GrQc", Load("snap-ca-GrQc/CA-GrQc.txt.zst"), epochs, target);
      Quality(
          "sparse bipartite SBM (8000 users x 4000 items, 20 "
          "communities, 4 edges a user)",
          SparseBipartite(8000, 4000, 20, 4, 1), epochs, target);
    } else if (s == "sparse") {
      Sparse(epochs);
    } else if (s == "signature") {
      Signature(epochs);
    } else if (s == "consensus") {
      Consensus(nodes, epochs, variants);
    } else {
      std::fprintf(stderr, "graph_bench: unknown section '%s'\n", s.c_str());
      return 2;
    }
  }
  return 0;
}
