// The graph model's rows of the settings table (service/graph_service.h):
// the edge list, its training and consensus, checkpoints and queries.
#include "service/internal/setting_parsers.h"

namespace latentd::service::internal {

// The graph model (service/graph_service.h), served next to the topics.
void AddGraphSettings(const AddFn& add) {
  auto graph = [](DaemonConfig* c) { return &c->service.graph; };
  add("graph-edges", "", "a file|empty",
      "Also train and serve a graph model (GetEmbedding, ScorePairs, "
      "NearestVertices, IngestEdges) from this edge list (SNAP text: 'src "
      "dst [weight]' lines, '#' comments, .gz/.zst; undirected); its "
      "checkpoints and ingested edges live in DIR/graph. Without a corpus "
      "and topic model the node serves the graph only (empty: no graph)",
      String([=](DaemonConfig* c) { return &graph(c)->edges_path; }));
  add("graph-dim", "32", "1..4096",
      "Embedding dimension d of the graph model (a checkpoint's must match)",
      Int<uint32_t>("graph-dim", 1, GraphTrainerOptions::kMaxDim,
                    [=](DaemonConfig* c) { return &graph(c)->trainer.dim; }));
  add("graph-negative-dims", "0", "0..4095, < graph-dim",
      "Signature of the graph model's score: how many of the d coordinates "
      "(the last ones) count negatively, so that alike vertices need not "
      "link (bipartite graphs: users never link users); 0: the plain inner "
      "product. NearestVertices stays by the plain inner product (a "
      "checkpoint's must match)",
      Int<uint32_t>(
          "graph-negative-dims", 0, GraphTrainerOptions::kMaxDim - 1,
          [=](DaemonConfig* c) { return &graph(c)->trainer.negative_dims; }));
  add("graph-negatives", "5", "0..1000",
      "Sampled non-edges (y = 0) per edge and epoch",
      Int<int>("graph-negatives", 0, 1000,
               [=](DaemonConfig* c) { return &graph(c)->trainer.negatives; }));
  add("graph-lambda", "1", "0..1000000", "L2 regularization lambda",
      Double("graph-lambda", 0, 1e6,
             [=](DaemonConfig* c) { return &graph(c)->trainer.lambda; }));
  add("graph-learning-rate", "0.1", "0.000001..100",
      "SGD step eta (decayed as eta / (1 + 0.05 epoch))",
      Double("graph-learning-rate", 1e-6, 100, [=](DaemonConfig* c) {
        return &graph(c)->trainer.learning_rate;
      }));
  add("graph-divergence-retries", "4", "0..30",
      "A graph epoch that diverges (a step not finite, or a loss over 4 "
      "times an all-zero model's) is undone and trained again at half the "
      "learning rate, up to this many times in all; undoing keeps a copy of "
      "the vectors (vertices x graph-dim floats). 0, or a node in a graph "
      "cluster: training stops at the first",
      Int<int>("graph-divergence-retries", 0, 30,
               [=](DaemonConfig* c) { return &graph(c)->divergence_retries; }));
  add("graph-threads", "1", "1..1024", "Graph SGD worker threads",
      Int<int>("graph-threads", 1, 1024,
               [=](DaemonConfig* c) { return &graph(c)->trainer.threads; }));
  add("graph-seed", "1", "0..2^62",
      "Seed of the graph model's initial vectors, negatives and held-out "
      "split",
      Int<uint64_t>("graph-seed", 0, int64_t{1} << 62,
                    [=](DaemonConfig* c) { return &graph(c)->trainer.seed; }));
  add("graph-holdout", "0", "0..0.5",
      "Share of the edge list's edges held out (with as many non-edges) to "
      "score link prediction after every epoch: Status.graph.heldout_auc, "
      "latentd_graph_heldout_auc (0: none)",
      Double("graph-holdout", 0, 0.5,
             [=](DaemonConfig* c) { return &graph(c)->holdout; }));
  add("graph-max-epochs", "0", "0..2^62",
      "Stop training the graph model after this many epochs in all (0: "
      "train forever); edges ingested later still get one epoch",
      Int<uint64_t>("graph-max-epochs", 0, int64_t{1} << 62,
                    [=](DaemonConfig* c) { return &graph(c)->max_epochs; }));
  add("graph-mu", "0.01", "0..1000000",
      "Consensus strength mu of a graph cluster's dual decomposition: each "
      "node's copy of a vertex is pulled towards the consensus by "
      "(mu/2)|x - z|^2, weighted by its edges there and the negatives they "
      "draw (cluster mode only)",
      Double("graph-mu", 0, 1e6,
             [=](DaemonConfig* c) { return &graph(c)->trainer.mu; }));
  add("graph-step-scale-max", "2", "1..16",
      "Dual graph consensus: a node's SGD steps on its copy of a vertex are "
      "scaled by the vertex's total weight in the cluster over its weight "
      "here (so that averaging the copies moves the consensus as far as a "
      "single node's epoch would), at most this much; 1 turns it off. The "
      "scale lowers the learning rate a cluster trains at: on ca-HepTh 3 "
      "nodes at 2 diverged now and then at 0.3, where one node trains up "
      "to about 0.55. Lower it or the learning rate if training diverges",
      Double("graph-step-scale-max", 1, 16,
             [=](DaemonConfig* c) { return &graph(c)->max_step_scale; }));
  add("graph-consensus", "dual", "dual|naive",
      "How a graph cluster (--graph-edges with --cluster-redis and no "
      "corpus) agrees on the vectors: dual decomposition (local copies "
      "pulled to their consensus), or naive (one shared Z, every node's "
      "SGD steps summed into it; kept to compare with)",
      [=](std::string_view v, DaemonConfig* c) -> absl::Status {
        if (v == "dual") {
          graph(c)->consensus = ConsensusMode::kDual;
        } else if (v == "naive") {
          graph(c)->consensus = ConsensusMode::kNaive;
        } else {
          return Bad("graph-consensus", v, "dual|naive");
        }
        return absl::OkStatus();
      });
  add("graph-checkpoint-every", "10", "0..1000000",
      "Write DIR/graph/graph.bin every N epochs (0: only at exit and when "
      "graph-max-epochs is reached, as always)",
      Int<int>("graph-checkpoint-every", 0, 1000000,
               [=](DaemonConfig* c) { return &graph(c)->checkpoint_every; }));
  add("graph-max-top", "1000", "1..1000000",
      "Largest `top` of a NearestVertices call",
      Int<uint32_t>("graph-max-top", 1, 1000000,
                    [=](DaemonConfig* c) { return &graph(c)->max_top; }));
}

}  // namespace latentd::service::internal
