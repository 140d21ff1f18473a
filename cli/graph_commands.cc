#include "cli/graph_commands.h"

#include <unistd.h>

#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "sampler/graph/graph_model.h"
#include "sampler/graph/link_eval.h"
#include "sampler/model_dir.h"
#include "service/cluster/graph_cluster.h"

namespace latentd {
namespace {

bool Exists(const std::string& path) {
  return ::access(path.c_str(), F_OK) == 0;
}

// The vectors of `model` in the order of `graph`'s vertices.
absl::StatusOr<std::vector<float>> VectorsFor(const GraphModel& model,
                                              const GraphData& graph,
                                              const GraphTrainerOptions& o) {
  const uint32_t dim = o.dim;
  if (model.dim() != dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model has dim ", model.dim(), ", --dim says ", dim));
  }
  if (model.negative_dims() != o.negative_dims) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model has ", model.negative_dims(),
                     " negative dims, --negative-dims says ", o.negative_dims));
  }
  std::vector<float> z(graph.num_vertices() * dim);
  for (size_t v = 0; v < graph.num_vertices(); ++v) {
    std::optional<uint32_t> i = model.Find(graph.keys()[v]);
    if (!i) {
      return absl::InvalidArgumentError(absl::StrCat(
          "vertex ", graph.keys()[v],
          " of the edge list is not in the model: resume with the edges it "
          "was trained on"));
    }
    std::copy_n(&model.vectors()[size_t{*i} * dim], dim, &z[v * dim]);
  }
  return z;
}

// `graph train --nodes N`: the epochs on in-process nodes, then the
// consensus written as the model (checkpoints only at the end).
absl::Status TrainOnNodes(const GraphTrainCommand& c, const GraphData& train,
                          const std::optional<LinkSplit>& split, FILE* out,
                          FILE* err) {
  LATENTD_ASSIGN_OR_RETURN(GraphConsensusVariant variant,
                           ParseGraphConsensusVariant(c.consensus));
  GraphClusterOptions o;
  o.nodes = c.nodes;
  o.variant = variant;
  o.trainer = c.trainer;
  o.reset_to_consensus = true;
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<GraphCluster> cluster,
                           GraphCluster::Start(train, o));
  std::string edges;
  for (int i = 0; i < cluster->nodes(); ++i) {
    absl::StrAppend(&edges, i ? " " : "", cluster->edges_on(i));
  }
  std::fprintf(err,
               "%zu vertices, %zu training edges on %d nodes (%s), %s, dim "
               "%u, %d negatives, mu %g\n",
               train.num_vertices(), train.num_edges(), c.nodes, edges.c_str(),
               c.consensus.c_str(), c.trainer.dim, c.trainer.negatives,
               c.trainer.mu);
  LinkScores last_scores;
  double seconds = 0, objective = cluster->Objective();
  int done = 0;
  for (int e = 0; e < c.epochs; ++e) {
    LATENTD_ASSIGN_OR_RETURN(GraphClusterEpoch r, cluster->RunEpoch());
    seconds += r.seconds;
    objective = r.objective;
    done = e + 1;
    std::string line = absl::StrFormat(
        "epoch %d/%d: objective %.6g, copies' distance to consensus %.4g, "
        "%.3f s",
        e + 1, c.epochs, r.objective, r.consensus_distance, r.seconds);
    if (split) {
      last_scores = EvaluateEmbedding(*split, cluster->Embeddings(),
                                      c.trainer.dim, c.trainer.negative_dims);
      absl::StrAppendFormat(&line, ", held-out AUC %.4f AP %.4f",
                            last_scores.auc, last_scores.average_precision);
    }
    std::fprintf(err, "%s\n", line.c_str());
    if (c.stop != nullptr && c.stop->load()) {
      std::fprintf(err, "stopping after epoch %d\n", e + 1);
      break;
    }
  }
  LATENTD_RETURN_IF_ERROR(cluster->Quiesce());
  GraphModel::Header h;
  h.dim = c.trainer.dim;
  h.negative_dims = c.trainer.negative_dims;
  h.epoch = static_cast<uint64_t>(done);
  h.seed = c.trainer.seed;
  h.negatives = c.trainer.negatives;
  h.lambda = c.trainer.lambda;
  LATENTD_RETURN_IF_ERROR(SaveGraphCheckpoint(
      GraphModel(h, train.keys(), cluster->Embeddings()), c.out_dir));
  std::fprintf(err, "wrote %s (epoch %d, the consensus of %d nodes)\n",
               GraphModelPath(c.out_dir).c_str(), done, c.nodes);
  if (c.json) {
    std::string json = absl::StrFormat(
        "{\"modelDir\":\"%s\",\"epoch\":%d,\"vertices\":%d,\"edges\":%d,"
        "\"dim\":%d,\"nodes\":%d,\"objective\":%.9g,"
        "\"trainingSeconds\":%.6g",
        c.out_dir, done, train.num_vertices(), train.num_edges(), c.trainer.dim,
        c.nodes, objective, seconds);
    if (split) {
      absl::StrAppendFormat(&json, ",\"heldoutAuc\":%.6f,\"heldoutAp\":%.6f",
                            last_scores.auc, last_scores.average_precision);
    }
    std::fprintf(out, "%s}\n", json.c_str());
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunGraphTrain(const GraphTrainCommand& c, FILE* out, FILE* err) {
  if (c.epochs < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--epochs ", c.epochs, " < 0"));
  }
  LATENTD_RETURN_IF_ERROR(c.trainer.Validate());
  if (c.out_dir.empty()) return absl::InvalidArgumentError("--out is required");
  if (c.nodes < 1 || c.nodes > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("--nodes ", c.nodes, " is not in [1, 64]"));
  }
  if (c.nodes > 1 && c.resume) {
    return absl::InvalidArgumentError(
        "--resume trains on one node: the in-process nodes of --nodes start "
        "from the seeded vectors");
  }
  const bool has_model = Exists(GraphModelPath(c.out_dir)) ||
                         Exists(GraphPrevModelPath(c.out_dir));
  if (has_model && !c.resume && !c.overwrite) {
    return absl::InvalidArgumentError(absl::StrCat(
        c.out_dir,
        " already holds a graph model: give --resume to continue it "
        "or --overwrite to replace it"));
  }
  EdgeListOptions read = c.read;
  if (c.on_malformed != "fail" && c.on_malformed != "skip") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--on-malformed ", c.on_malformed, " is not skip or fail"));
  }
  read.skip_malformed = c.on_malformed == "skip";
  LATENTD_ASSIGN_OR_RETURN(EdgeList list, ReadEdgeList(c.edges, read));
  std::fprintf(err, "%s: %s\n", c.edges.c_str(), list.stats.Summary().c_str());
  for (const std::string& m : list.stats.messages) {
    std::fprintf(err, "  skipped %s\n", m.c_str());
  }
  absl::StatusOr<GraphData> graph = GraphData::FromEdgeList(list);
  if (!graph.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(c.edges, ": ", graph.status().message()));
  }
  std::optional<LinkSplit> split;
  GraphData train = *graph;
  if (c.holdout > 0) {
    LATENTD_ASSIGN_OR_RETURN(LinkSplit s,
                             SplitHeldout(*graph, c.holdout, c.trainer.seed));
    train = s.train;
    split = std::move(s);
    std::fprintf(err, "held out %zu edges and %zu non-edges\n",
                 split->positives.size(), split->negatives.size());
  }
  if (c.nodes > 1) {
    LATENTD_RETURN_IF_ERROR(MakeModelDirectory(c.out_dir));
    return TrainOnNodes(c, train, split, out, err);
  }
  std::vector<float> initial;
  uint64_t start_epoch = 0;
  if (c.resume && has_model) {
    std::vector<std::string> refused;
    LATENTD_ASSIGN_OR_RETURN(GraphModel model,
                             LoadNewestGraphModel(c.out_dir, &refused));
    for (const std::string& r : refused) std::fprintf(err, "%s\n", r.c_str());
    LATENTD_ASSIGN_OR_RETURN(initial, VectorsFor(model, train, c.trainer));
    start_epoch = model.header().epoch;
    std::fprintf(err, "resuming at epoch %llu\n",
                 static_cast<unsigned long long>(start_epoch));
  }
  LATENTD_RETURN_IF_ERROR(MakeModelDirectory(c.out_dir));
  LATENTD_ASSIGN_OR_RETURN(
      std::unique_ptr<GraphTrainer> trainer,
      GraphTrainer::Create(std::move(train), c.trainer, std::move(initial),
                           start_epoch));
  std::fprintf(err,
               "%zu vertices, %zu training edges, dim %u (%u negative), %d "
               "negatives\n",
               trainer->graph().num_vertices(), trainer->graph().num_edges(),
               c.trainer.dim, c.trainer.negative_dims, c.trainer.negatives);
  auto score = [&](VertexId a, VertexId b) { return trainer->Score(a, b); };
  LinkScores last_scores;
  double seconds = 0;
  ObjectiveEvaluator::Value objective = trainer->Objective();
  for (int e = 0; e < c.epochs; ++e) {
    LATENTD_ASSIGN_OR_RETURN(EpochResult r, trainer->RunEpoch());
    seconds += r.seconds;
    objective = trainer->Objective();
    std::string line = absl::StrFormat(
        "epoch %d (%d/%d): objective %.6g (loss %.6g + reg %.6g), lr %.4g, "
        "%.0f "
        "edges/s",
        r.epoch, e + 1, c.epochs, objective.total(), objective.loss,
        objective.regularization, r.learning_rate,
        r.seconds > 0 ? r.edges / r.seconds : 0.0);
    if (split) {
      last_scores = EvaluateLinks(*split, score);
      absl::StrAppendFormat(&line, ", held-out AUC %.4f AP %.4f",
                            last_scores.auc, last_scores.average_precision);
    }
    std::fprintf(err, "%s\n", line.c_str());
    const bool stopping = c.stop != nullptr && c.stop->load();
    if (c.checkpoint_every > 0 && (e + 1) % c.checkpoint_every == 0 &&
        e + 1 < c.epochs && !stopping) {
      LATENTD_RETURN_IF_ERROR(
          SaveGraphCheckpoint(ToGraphModel(*trainer), c.out_dir));
    }
    if (stopping) {
      std::fprintf(err, "stopping after epoch %d\n", e + 1);
      break;
    }
  }
  LATENTD_RETURN_IF_ERROR(
      SaveGraphCheckpoint(ToGraphModel(*trainer), c.out_dir));
  std::fprintf(err, "wrote %s (epoch %llu)\n",
               GraphModelPath(c.out_dir).c_str(),
               static_cast<unsigned long long>(trainer->epoch()));
  if (c.json) {
    std::string json = absl::StrFormat(
        "{\"modelDir\":\"%s\",\"epoch\":%d,\"vertices\":%d,\"edges\":%d,"
        "\"dim\":%d,\"objective\":%.9g,\"trainingSeconds\":%.6g",
        c.out_dir, trainer->epoch(), trainer->graph().num_vertices(),
        trainer->graph().num_edges(), c.trainer.dim, objective.total(),
        seconds);
    if (split) {
      absl::StrAppendFormat(&json, ",\"heldoutAuc\":%.6f,\"heldoutAp\":%.6f",
                            last_scores.auc, last_scores.average_precision);
    }
    std::fprintf(out, "%s}\n", json.c_str());
  }
  return absl::OkStatus();
}

std::vector<ScoreLine> ReadScoreLines(FILE* in) {
  std::vector<ScoreLine> lines;
  char* buf = nullptr;
  size_t cap = 0;
  uint64_t line_number = 0;
  while (::getline(&buf, &cap, in) >= 0) {
    ++line_number;
    absl::string_view line = absl::StripAsciiWhitespace(buf);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> f =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    ScoreLine l;
    l.line = line_number;
    if (f.size() != 2 || !absl::SimpleAtoi(f[0], &l.a) ||
        !absl::SimpleAtoi(f[1], &l.b) || f[0][0] == '-' || f[1][0] == '-' ||
        f[0][0] == '+' || f[1][0] == '+') {
      l.parsed = absl::InvalidArgumentError("expected two vertex ids 'i j'");
    }
    lines.push_back(std::move(l));
  }
  std::free(buf);
  return lines;
}

absl::Status PrintScores(const std::vector<ScoreLine>& lines,
                         const std::vector<absl::StatusOr<double>>& scores,
                         FILE* out, FILE* err) {
  uint64_t failed = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const absl::StatusOr<double>& score = scores[i];
    if (score.ok()) {
      std::fprintf(out, "%.6g\n", *score);
    } else {
      ++failed;
      std::fprintf(out, "nan\n");
      std::fprintf(err, "stdin:%llu: %s\n",
                   static_cast<unsigned long long>(lines[i].line),
                   std::string(score.status().message()).c_str());
    }
  }
  if (failed > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        failed, " of the input lines could not be scored (see above)"));
  }
  return absl::OkStatus();
}

absl::Status RunGraphScore(const std::string& dir, FILE* in, FILE* out,
                           FILE* err) {
  LATENTD_ASSIGN_OR_RETURN(GraphModel model, LoadNewestGraphModel(dir));
  const std::vector<ScoreLine> lines = ReadScoreLines(in);
  std::vector<absl::StatusOr<double>> scores;
  scores.reserve(lines.size());
  for (const ScoreLine& l : lines) {
    scores.push_back(l.parsed.ok() ? model.Score(l.a, l.b)
                                   : absl::StatusOr<double>(l.parsed));
  }
  return PrintScores(lines, scores, out, err);
}

absl::Status RunGraphEmbedding(const std::string& dir, uint64_t vertex,
                               FILE* out) {
  LATENTD_ASSIGN_OR_RETURN(GraphModel model, LoadNewestGraphModel(dir));
  std::optional<uint32_t> i = model.Find(vertex);
  if (!i) {
    return absl::NotFoundError(
        absl::StrCat("vertex ", vertex, " is not in the graph"));
  }
  const float* row = &model.vectors()[size_t{*i} * model.dim()];
  PrintVector(std::span<const float>(row, model.dim()), out);
  return absl::OkStatus();
}

void PrintVector(std::span<const float> v, FILE* out) {
  for (size_t k = 0; k < v.size(); ++k) {
    std::fprintf(out, "%s%.6g", k == 0 ? "" : " ", v[k]);
  }
  std::fprintf(out, "\n");
}

absl::Status RunGraphNeighbors(const std::string& dir, uint64_t vertex,
                               size_t top, FILE* out) {
  LATENTD_ASSIGN_OR_RETURN(GraphModel model, LoadNewestGraphModel(dir));
  LATENTD_ASSIGN_OR_RETURN(auto nearest, model.Nearest(vertex, top));
  for (const auto& [key, score] : nearest) {
    std::fprintf(out, "%llu\t%.6g\n", static_cast<unsigned long long>(key),
                 score);
  }
  return absl::OkStatus();
}

void AddGraphCommands(CLI::App* app, GraphCommands* c) {
  c->graph = app->add_subcommand(
      "graph",
      "Graph factorization: vertex vectors from an edge list (Ahmed et al. "
      "2013) for link prediction and similar-vertex queries");
  c->graph->require_subcommand(1);
  GraphTrainCommand& t = c->train;
  CLI::App* tr = c->train_cmd = c->graph->add_subcommand(
      "train",
      "Train vertex vectors on an edge list (SGD over the edges on the TBB "
      "pipeline); prints the objective (and held-out AUC) per epoch");
  tr->add_option("--edges", t.edges,
                 "Edge list: 'FromId ToId [weight]' per line, # comments, "
                 ".zst/.gz decompressed; undirected")
      ->required();
  tr->add_option("--out", t.out_dir, "Model directory (created)")->required();
  tr->add_option("--dim", t.trainer.dim, "Vector dimension d")
      ->capture_default_str();
  tr->add_option("--negative-dims", t.trainer.negative_dims,
                 "Signature: how many of the d coordinates (the last ones) "
                 "count negatively in the link score, < d; 0: the plain "
                 "inner product. Helps on bipartite graphs")
      ->capture_default_str();
  tr->add_option("--epochs", t.epochs, "Passes over the edges")
      ->capture_default_str();
  tr->add_option("--threads", t.trainer.threads, "Pipeline worker threads")
      ->capture_default_str();
  tr->add_option("--negatives", t.trainer.negatives,
                 "Sampled non-edges (y = 0) per edge; 0 = edges only")
      ->capture_default_str();
  tr->add_option("--lambda", t.trainer.lambda, "L2 regularization λ")
      ->capture_default_str();
  tr->add_option("--learning-rate", t.trainer.learning_rate,
                 "SGD step η at epoch 0")
      ->capture_default_str();
  tr->add_option("--learning-rate-decay", t.trainer.learning_rate_decay,
                 "η_t = η / (1 + decay · t) at epoch t")
      ->capture_default_str();
  tr->add_option("--batch-edges", t.trainer.batch_edges,
                 "Edges per pipeline batch")
      ->capture_default_str();
  tr->add_option("--seed", t.trainer.seed,
                 "Random seed (start, order, "
                 "negatives, held-out split)")
      ->capture_default_str();
  tr->add_option("--holdout", t.holdout,
                 "Fraction of edges held out (with as many non-edges) to "
                 "report ROC AUC and average precision per epoch; 0 = none")
      ->capture_default_str();
  tr->add_option("--checkpoint-every", t.checkpoint_every,
                 "Write DIR/graph.bin every N epochs (and at the end); 0 = "
                 "only at the end")
      ->capture_default_str();
  tr->add_option("--nodes", t.nodes,
                 "Train on this many in-process nodes (edges split by the "
                 "ring owner of their first endpoint) that agree by "
                 "--consensus; the model written is their consensus")
      ->capture_default_str();
  tr->add_option("--consensus", t.consensus,
                 "With --nodes > 1: dual-sync | dual-async (local copies "
                 "pulled to their consensus, ADMM) | naive-sync | naive-async "
                 "(one shared Z, the nodes' steps summed; to compare)")
      ->check(CLI::IsMember(
          {"dual-sync", "dual-async", "naive-sync", "naive-async"}))
      ->capture_default_str();
  t.trainer.mu = 0.01;  // the daemon's --graph-mu default
  tr->add_option("--mu", t.trainer.mu,
                 "With --nodes > 1 and a dual consensus: the strength mu of "
                 "each copy's pull towards the consensus (> 0; one node has "
                 "no copies, so it is ignored there)")
      ->capture_default_str();
  tr->add_flag("--resume", t.resume, "Continue the model in --out");
  tr->add_flag("--overwrite", t.overwrite, "Replace a model already in --out");
  tr->add_option("--on-malformed", t.on_malformed,
                 "fail: stop at the first malformed edge line | skip: count "
                 "and summarise them")
      ->check(CLI::IsMember({"skip", "fail"}))
      ->capture_default_str();
  tr->add_flag("--json", t.json, "Print a JSON summary on stdout at the end");

  auto daemon = [c](CLI::App* cmd) {
    AddDaemonAddressOptions(cmd, &c->address);
  };
  c->score = c->graph->add_subcommand(
      "score",
      "Print <z_i, z_j> for each line 'i j' of stdin (nan and an error on "
      "stderr for a bad line or unknown vertex; exit status 2 then), from "
      "the model in DIR or, without DIR, from a running latentd "
      "(--graph-edges)");
  c->score->add_option("DIR", c->model_dir,
                       "Graph model directory (none: ask the daemon)");
  daemon(c->score);
  const std::string vertex_args =
      "[DIR] VERTEX: the graph model directory (none: ask the daemon at "
      "--addr) and the vertex id";
  c->neighbors = c->graph->add_subcommand(
      "neighbors",
      "Print the vertices with the highest <z_VERTEX, z_u> (likeliest new "
      "neighbours), 'id<TAB>score' per line");
  c->neighbors->add_option("ARGS", c->args, vertex_args)
      ->required()
      ->expected(1, 2);
  c->neighbors->add_option("--top", c->top, "How many")->capture_default_str();
  daemon(c->neighbors);
  c->embedding = c->graph->add_subcommand(
      "embedding", "Print z_VERTEX, its d values on one line");
  c->embedding->add_option("ARGS", c->args, vertex_args)
      ->required()
      ->expected(1, 2);
  daemon(c->embedding);
  c->ingest = c->graph->add_subcommand(
      "ingest",
      "Add the edges of stdin ('src dst [weight]' lines, as an edge list) "
      "to a running latentd's graph (IngestEdges; needs a write token); "
      "prints 'accepted N edges, D duplicates' once they are durable");
  daemon(c->ingest);
}

std::optional<absl::Status> RunGraphCommands(const GraphCommands& c, FILE* in,
                                             FILE* out, FILE* err,
                                             std::string* which) {
  if (c.graph == nullptr || !c.graph->parsed()) return std::nullopt;
  if (c.train_cmd->parsed()) {
    *which = "graph train";
    return RunGraphTrain(c.train, out, err);
  }
  if (c.score->parsed()) {
    *which = "graph score";
    return c.model_dir.empty() ? RunRemoteGraphScore(c.address, in, out, err)
                               : RunGraphScore(c.model_dir, in, out, err);
  }
  if (c.ingest->parsed()) {
    *which = "graph ingest";
    return RunRemoteGraphIngest(c.address, in, out);
  }
  const bool neighbors = c.neighbors->parsed();
  *which = neighbors ? "graph neighbors" : "graph embedding";
  const std::string& id = c.args.back();
  uint64_t vertex = 0;
  if (!absl::SimpleAtoi(id, &vertex) || id[0] == '-' || id[0] == '+') {
    return absl::InvalidArgumentError(
        absl::StrCat("VERTEX '", id, "' is not a vertex id (0..2^64-1)"));
  }
  if (c.args.size() == 2) {
    return neighbors ? RunGraphNeighbors(c.args[0], vertex, c.top, out)
                     : RunGraphEmbedding(c.args[0], vertex, out);
  }
  return neighbors ? RunRemoteGraphNeighbors(c.address, vertex, c.top, out)
                   : RunRemoteGraphEmbedding(c.address, vertex, out);
}

}  // namespace latentd
