// latentctl: the latentd operator and user CLI. Parses flags (CLI11) into
// the commands' Options structs and runs one command.
#include <csignal>
#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "base/cpu_features.h"
#include "base/fast_mutexes.h"
#include "cli/client_commands.h"
#include "cli/cluster_commands.h"
#include "cli/coherence_command.h"
#include "cli/evaluate_command.h"
#include "cli/export_command.h"
#include "cli/graph_commands.h"
#include "cli/query_commands.h"
#include "cli/similar_command.h"
#include "cli/train_command.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

int Report(const absl::Status& status, const char* command) {
  if (status.ok()) return 0;
  // The daemon's kUnauthenticated says "the daemon wants a token" or "knows
  // no such token"; its kPermissionDenied names the token's role.
  const char* hint = status.code() == absl::StatusCode::kUnauthenticated
                         ? ": give --token or LATENTD_TOKEN"
                         : "";
  std::fprintf(stderr, "latentctl %s: %s%s\n", command,
               std::string(status.message()).c_str(), hint);
  return status.code() == absl::StatusCode::kInvalidArgument ||
                 status.code() == absl::StatusCode::kOutOfRange
             ? 2
             : 1;
}

bool OnOff(const std::string& value) { return value == "on"; }

}  // namespace

int main(int argc, char** argv) {
  latentd::DisableMutexDeadlockDetection();
  // A peer that closes the connection while a request is being written (a
  // daemon going away, or --protocol json against the framed TCP port)
  // must give an error, not kill latentctl with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{
      "latentctl: train LDA topic models and query them; graph factorization\n"
      "(latentctl graph train|score|neighbors|embedding|ingest).\n"
      "train works on a model directory; topics and infer read one given as\n"
      "DIR, or else ask a running latentd (--addr), as status, profile,\n"
      "document, topic-documents, ingest and checkpoint do. Every command\n"
      "prints text; --json prints JSON instead."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "latentctl 0.1.0");
  app.footer(absl::StrCat(
      "Environment: LATENTD_TOKEN, the API token of the commands that ask "
      "a running latentd when --token is not given. ",
      latentd::kCpuCapHelp, "; train names the paths in use. ",
      latentd::kMutexDeadlockDetectionHelp, "."));

  // ---- train ----
  latentd::TrainCommandOptions train;
  std::string format = "lines", optimize_alpha = "on", stopwords = "on",
              kernel = "auto", on_malformed = "skip", batch_overlay = "on",
              start = "progressive", overlay_max_word_tokens = "auto";
  int threads = 1;
  uint32_t topics = 100;
  CLI::App* t = app.add_subcommand(
      "train",
      "Build a corpus into a model directory and train LDA on it "
      "(collapsed Gibbs sampling: SparseLDA, or MH with alias tables where "
      "rows are dense; oneTBB pipeline). Prints a line "
      "per sweep to stderr and the "
      "topics to stdout (--json: a summary of the run instead).");
  t->add_option("--corpus", train.input.path,
                "Corpus file or directory (.zst and .gz are read directly)");
  t->add_option("--format", format,
                "lines: one document per line | yahoo: 'doc-id user-id "
                "words...' per line | dir: one document per file | uci: UCI "
                "docword (+ --vocab) | ldac: LDA-C (+ --vocab)")
      ->check(CLI::IsMember({"lines", "yahoo", "dir", "uci", "ldac"}))
      ->capture_default_str();
  t->add_option("--vocab", train.input.vocab_path,
                "Vocabulary file of a uci/ldac corpus (line i = word i); "
                "without it words are named w<id>");
  t->add_option("--topics,--num-topics", topics, "Number of topics K")
      ->check(CLI::Range(1u, latentd::kMaxTopics))
      ->capture_default_str();
  t->add_option("--sweeps,--iterations,--num-iterations", train.sweeps,
                "Gibbs sweeps to run now, over the whole corpus (Mallet's "
                "--num-iterations); with --resume, this many more. latentd's "
                "--max-sweeps is instead the total to stop at")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  t->add_option("--threads", threads, "Sampler threads")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  t->add_option("--out", train.out_dir, "Model directory (created)")
      ->required();
  t->add_option("--alpha", train.trainer.alpha,
                "Dirichlet prior of each topic in a document, alpha_k, the "
                "same for every topic (default 50/K); the start when alpha "
                "is learned. Mallet's --alpha is the sum over the topics: "
                "Mallet --alpha S is --alpha S/K here")
      ->check(CLI::PositiveNumber);
  t->add_option("--beta", train.trainer.beta, "Per-word beta")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  t->add_option("--optimize-alpha", optimize_alpha,
                "Learn an asymmetric alpha (Minka fixed point)")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  t->add_option("--alpha-burn-in", train.trainer.alpha_burn_in,
                "Sweeps before the first alpha update")
      ->capture_default_str();
  t->add_option("--alpha-interval", train.trainer.alpha_interval,
                "Sweeps between alpha updates")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  t->add_option("--seed", train.trainer.seed, "Random seed")
      ->capture_default_str();
  t->add_flag("--resume", train.resume,
              "Continue the model in --out for --sweeps more sweeps "
              "(corpus options are ignored)");
  t->add_flag("--overwrite", train.overwrite,
              "Replace the model already in --out (without it, or --resume, "
              "a directory holding a model is refused)");
  t->add_option("--holdout", train.build.holdout_fraction,
                "Share of documents held out and scored at the end: held-out "
                "log-likelihood per token and perplexity by document "
                "completion (see `evaluate`)")
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();
  t->add_option("--min-df", train.build.min_doc_freq,
                "Drop words found in fewer documents")
      ->capture_default_str();
  t->add_option("--max-vocab", train.build.max_vocab,
                "Keep only the most frequent words (0: all)")
      ->capture_default_str();
  t->add_option("--stopwords", stopwords,
                "Drop English stop words (raw-text formats)")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  t->add_option("--min-word-length", train.input.tokenizer.min_length,
                "Drop shorter words (raw-text formats)")
      ->capture_default_str();
  t->add_flag("--tagged", train.input.tokenizer.strip_pos_tags,
              "Tokens are word/TAG (POS-tagged text such as the Brown "
              "corpus): drop the tags");
  t->add_option("--on-malformed", on_malformed,
                "skip: count and summarise malformed records | fail: stop "
                "at the first")
      ->check(CLI::IsMember({"skip", "fail"}))
      ->capture_default_str();
  t->add_option("--eval-every", train.trainer.eval_every,
                "Compute the exact log-likelihood every N sweeps (0: never)")
      ->capture_default_str();
  t->add_option("--checkpoint-every", train.checkpoint_every,
                "Write model.bin every N sweeps (and always at the end)")
      ->capture_default_str();
  t->add_option("--top", train.top_words, "Words per topic in topics.txt")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  t->add_option("--kernel", kernel,
                "auto: MH while word rows are dense, then SparseLDA for good "
                "(ends exact) | sparse: SparseLDA (exact) | dense: plain "
                "O(K) (reference) | mh: O(1) Metropolis-Hastings with alias "
                "tables")
      ->check(CLI::IsMember({"auto", "sparse", "dense", "mh"}))
      ->capture_default_str();
  t->add_option("--mh-steps", train.trainer.pipeline.kernel_options.mh.steps,
                "MH cycles (a word and a document proposal) per token "
                "(kernel mh, auto)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  t->add_option("--start", start,
                "The first sweep's starting state: progressive (one pass "
                "first draws each token given the tokens placed before it: "
                "rows start as sparse as the data makes them; reaches a "
                "log-likelihood 1.5-2x sooner, held-out as good or better, "
                "docs/benchmarks.md) | uniform (every token a uniformly "
                "random topic)")
      ->check(CLI::IsMember({"progressive", "uniform"}))
      ->capture_default_str();
  t->add_option("--progressive-stride", train.trainer.progressive_stride,
                "The progressive start's pass draws every this many-th "
                "batch first (a sample spread over the whole corpus, which "
                "may come ordered by source or time), then the rest; 1: "
                "one pass in corpus order (docs/benchmarks.md)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  t->add_option(
       "--progressive-smoothing", train.trainer.progressive_smoothing,
       "The progressive pass's second stage draws with beta' = "
       "max(beta, this / max(K, 100)): each word's row smoothed by "
       "this many pseudo-tokens over the topics, which keeps it from copying "
       "the first stage's sharp topics (better held-out "
       "likelihood); 0: beta throughout (docs/benchmarks.md)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  t->add_option("--sparse-start", train.trainer.init_row_topics,
                "Before the first sweep, give each word's tokens one of this "
                "many topics fixed per word, so rows start sparse and the "
                "first sweeps are cheap; its held-out perplexity is worse "
                "than the uniform start's (docs/benchmarks.md); takes "
                "precedence over --start (0: off, --start decides)")
      ->check(CLI::Range(0u, latentd::kMaxTopics))
      ->capture_default_str();
  t->add_option("--batch-overlay", batch_overlay,
                "on: a batch's later tokens see its own moves on the rows "
                "of words of at most --overlay-max-word-tokens tokens, so "
                "one thread samples (nearly) as a serial Gibbs sampler "
                "(kernels sparse, dense, auto; mh keeps its own snapshots) "
                "| off: they see the rows as the batch began (faster, "
                "worse per sweep on short documents)")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  t->add_option("--overlay-max-word-tokens", overlay_max_word_tokens,
                "The batch overlay follows only words with at most this many "
                "tokens in the corpus: a frequent word's own moves in a batch "
                "barely change its row, and following them is most of the "
                "overlay's cost (0: every word; auto: 256 where documents "
                "average under 64 tokens, else 64, docs/benchmarks.md)")
      ->check([](const std::string& v) {
        absl::StatusOr<int64_t> n = latentd::ParseOverlayMaxWordTokens(v);
        return n.ok() ? std::string() : std::string(n.status().message());
      })
      ->capture_default_str();
  latentd::AddJsonOption(t, &train.json);
  t->add_option("--batches-in-flight",
                train.trainer.pipeline.max_batches_in_flight,
                "Pipeline batches alive at once (0: 2*threads+1, 1 with one "
                "thread)")
      ->capture_default_str();

  // ---- topics ----
  latentd::TopicsCommandOptions topics_cmd;
  int64_t topic_id = -1;
  CLI::App* tp = app.add_subcommand(
      "topics", "Print the top words of each topic of a trained model");
  tp->add_option("dir", topics_cmd.model_dir,
                 "Model directory (offline); without it, ask a daemon");
  latentd::DaemonAddress topics_addr;
  latentd::AddDaemonAddressOptions(tp, &topics_addr);
  tp->add_option("--top", topics_cmd.top, "Words per topic")
      ->capture_default_str();
  CLI::Option* topic_opt =
      tp->add_option("--topic", topic_id, "Print only this topic");
  latentd::AddJsonOption(tp, &topics_cmd.json);

  // ---- infer ----
  latentd::InferCommandOptions infer;
  CLI::App* in = app.add_subcommand(
      "infer",
      "Read documents from stdin, one per line (tokenized as in training), "
      "and print each one's topic mixture: '<line number>\\t<topic>:<weight> "
      "...'");
  in->add_option("dir", infer.model_dir,
                 "Model directory (offline); without it, ask a daemon");
  latentd::DaemonAddress infer_addr;
  latentd::AddDaemonAddressOptions(in, &infer_addr);
  in->add_option("--iterations", infer.infer.iterations,
                 "Fold-in Gibbs sweeps over each document (latentd's "
                 "--infer-iterations is its default for this)")
      ->capture_default_str();
  in->add_option("--burn-in", infer.infer.burn_in,
                 "Sweeps discarded before averaging")
      ->capture_default_str();
  in->add_option("--seed", infer.infer.seed, "Random seed")
      ->capture_default_str();
  in->add_option("--top", infer.top, "Topics printed per document")
      ->capture_default_str();
  in->add_option("--words", infer.words,
                 "Each printed topic's most probable words (0: none)")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  latentd::AddJsonOption(in, &infer.json);

  // ---- coherence ----
  latentd::CoherenceCommandOptions coherence;
  CLI::App* co = latentd::AddCoherenceCommand(&app, &coherence);

  // ---- evaluate: held-out log-likelihood by document completion ----
  latentd::EvaluateCommandOptions evaluate;
  CLI::App* ev = latentd::AddEvaluateCommand(&app, &evaluate);

  // ---- status, profile, ingest, checkpoint, document, topic-documents:
  // a running daemon ----
  latentd::DaemonCommands daemon;
  latentd::AddDaemonCommands(&app, &daemon);

  // ---- similar: the documents or users most like one ----
  latentd::SimilarCommandOptions similar;
  CLI::App* si = latentd::AddSimilarCommand(&app, &similar);

  // ---- cluster status: the control plane in the cluster's Redis ----
  latentd::ClusterCommands cluster;
  latentd::AddClusterCommands(&app, &cluster);

  // ---- export: a running daemon's model into a directory ----
  latentd::ExportCommandOptions export_cmd;
  CLI::App* ex = latentd::AddExportCommand(&app, &export_cmd);

  // ---- graph train / score / neighbors: graph factorization ----
  latentd::GraphCommands graph;
  latentd::AddGraphCommands(&app, &graph);
  graph.train.stop = &g_stop;

  CLI11_PARSE(app, argc, argv);

  if (auto s = latentd::RunDaemonCommands(daemon, stdin, stdout)) {
    return Report(*s, app.get_subcommands().front()->get_name().c_str());
  }
  if (auto s = latentd::RunClusterCommands(cluster, stdout)) {
    const char* which = cluster.add_node->parsed()      ? "cluster add-node"
                        : cluster.remove_node->parsed() ? "cluster remove-node"
                                                        : "cluster status";
    return Report(*s, which);
  }

  if (si->parsed()) {
    return Report(latentd::RunSimilar(similar, stdout), "similar");
  }
  if (co->parsed()) {
    return Report(latentd::RunCoherence(coherence, stdout), "coherence");
  }
  if (ev->parsed()) {
    return Report(latentd::RunEvaluate(evaluate, stdout), "evaluate");
  }
  std::string graph_which;
  if (graph.train_cmd->parsed()) {
    std::signal(SIGINT, OnSignal);
    std::signal(SIGTERM, OnSignal);
  }
  if (auto s = latentd::RunGraphCommands(graph, stdin, stdout, stderr,
                                         &graph_which)) {
    return Report(*s, graph_which.c_str());
  }
  if (ex->parsed()) {
    return Report(latentd::RunExport(export_cmd, stdout, stderr), "export");
  }
  if (t->parsed()) {
    if (!train.resume && train.input.path.empty()) {
      std::fprintf(stderr,
                   "latentctl train: --corpus is required (unless --resume)\n");
      return 2;
    }
    train.input.format = *latentd::ParseCorpusFormat(format);
    train.input.tokenizer.remove_stopwords = OnOff(stopwords);
    train.input.skip_malformed = on_malformed == "skip";
    train.trainer.num_topics = topics;
    train.trainer.optimize_alpha = OnOff(optimize_alpha);
    train.trainer.pipeline.kernel_options.batch_overlay = OnOff(batch_overlay);
    train.trainer.pipeline.kernel_options.overlay_max_word_tokens =
        *latentd::ParseOverlayMaxWordTokens(overlay_max_word_tokens);
    train.trainer.pipeline.threads = threads;
    train.trainer.pipeline.kernel = *latentd::ParseKernelKind(kernel);
    train.trainer.progressive_start = start == "progressive";
    train.stop = &g_stop;
    std::signal(SIGINT, OnSignal);
    std::signal(SIGTERM, OnSignal);
    return Report(latentd::RunTrain(train, stdout, stderr), "train");
  }
  if (tp->parsed()) {
    if (*topic_opt) topics_cmd.topic = topic_id;
    if (topics_cmd.model_dir.empty()) {
      return Report(latentd::RunRemoteTopics(topics_addr, topics_cmd, stdout),
                    "topics");
    }
    return Report(latentd::RunTopics(topics_cmd, stdout), "topics");
  }
  if (in->parsed()) {
    if (infer.model_dir.empty()) {
      return Report(
          latentd::RunRemoteInfer(infer_addr, infer, stdin, stdout, stderr),
          "infer");
    }
    return Report(latentd::RunInfer(infer, stdin, stdout, stderr), "infer");
  }
  return 0;
}
