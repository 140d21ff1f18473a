// The settings table: every latentd setting with its default, bounds,
// help and parser (the rows of DaemonSettings()), grouped by concern, and
// their aliases. daemon_settings.cc resolves, reads and prints them.
#include "service/internal/daemon_settings_table.h"

#include <algorithm>
#include <functional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/absl_compat.h"
#include "service/api_client.h"
#include "service/internal/setting_parsers.h"

namespace latentd::service::internal {
namespace {

// Corpus, model and training.
void AddModelSettings(const AddFn& add) {
  add("data-dir", "", "a directory",
      "Where the node keeps its model, token store and ingest log (created)",
      String([](DaemonConfig* c) { return &c->service.data_dir; }));
  add("corpus", "", "a file or directory",
      "Corpus to build the token store from on the first start (ignored once "
      "the data directory holds a model)",
      String([](DaemonConfig* c) { return &c->service.corpus.path; }));
  add("format", "lines", "lines|yahoo|dir|uci|ldac", "Format of --corpus",
      [](std::string_view v, DaemonConfig* c) -> absl::Status {
        absl::StatusOr<CorpusFormat> f = ParseCorpusFormat(v);
        if (!f.ok()) return Bad("format", v, "lines|yahoo|dir|uci|ldac");
        c->service.corpus.format = *f;
        return absl::OkStatus();
      });
  add("vocab", "", "a file",
      "Vocabulary of a uci/ldac corpus (line i = word i)",
      String([](DaemonConfig* c) { return &c->service.corpus.vocab_path; }));
  add("shard", "0/1", "I/N with I < N <= 4096",
      "Build the token store from shard I of N of --corpus (first start): "
      "the documents at positions I, I+N, I+2N, ... of the input, so that N "
      "cluster nodes given one corpus file each train on their own part "
      "(the vocabulary is the whole file's). 0/1: every document",
      [](std::string_view v, DaemonConfig* c) -> absl::Status {
        std::pair<absl::string_view, absl::string_view> in_of =
            absl::StrSplit(ToAbsl(v), absl::MaxSplits('/', 1));
        uint32_t i = 0, n = 0;
        if (!absl::SimpleAtoi(in_of.first, &i) ||
            !absl::SimpleAtoi(in_of.second, &n) || n == 0 || n > 4096 ||
            i >= n) {
          return Bad("shard", v, "I/N with 0 <= I < N <= 4096, e.g. 0/3");
        }
        c->service.build.shard_index = i;
        c->service.build.shard_count = n;
        return absl::OkStatus();
      });
  add("holdout", "0", "0..0.5",
      "Share of the corpus's documents held out of training (first start: "
      "DIR/heldout.lts) to score the held-out perplexity by document "
      "completion (Status, the status page, latentd_heldout_perplexity)",
      Double("holdout", 0, 0.5, [](DaemonConfig* c) {
        return &c->service.build.holdout_fraction;
      }));
  add("heldout-every", "10", "0..1000000",
      "With a held-out set: score it every N sweeps and when sampling stops "
      "(0: only when sampling stops)",
      Int<int>("heldout-every", 0, 1000000,
               [](DaemonConfig* c) { return &c->service.heldout_every; }));
  add("stopwords", "on", "on|off",
      "Drop English stop words (first start; raw-text formats)",
      Bool("stopwords", [](DaemonConfig* c) {
        return &c->service.corpus.tokenizer.remove_stopwords;
      }));
  add("topics", "100", "1..65536", "Number of topics K (first start)",
      Int<uint32_t>("topics", 1, kMaxTopics, [](DaemonConfig* c) {
        return &c->service.trainer.num_topics;
      }));
  add("beta", "0.01", "0.000001..10", "Per-word beta (first start)",
      Double("beta", 1e-6, 10,
             [](DaemonConfig* c) { return &c->service.trainer.beta; }));
  add("seed", "1", "0..2^62", "Training seed (first start)",
      Int<uint64_t>("seed", 0, int64_t{1} << 62,
                    [](DaemonConfig* c) { return &c->service.trainer.seed; }));
  add("threads", "1", "1..1024", "Sampler threads",
      Int<int>("threads", 1, 1024, [](DaemonConfig* c) {
        return &c->service.trainer.pipeline.threads;
      }));
  add("train-nice", "10", "0..19",
      "Nice value of the sampler threads (0: as the daemon), so that "
      "queries get the cores first under load",
      Int<int>("train-nice", 0, 19, [](DaemonConfig* c) {
        return &c->service.trainer.pipeline.nice;
      }));
  add("kernel", "auto", "auto|sparse|dense|mh",
      "Sampling kernel: auto (MH while word rows are dense, then SparseLDA "
      "for good, so training ends exact); sparse (SparseLDA, exact); dense "
      "(plain O(K), the reference); mh (O(1) Metropolis-Hastings with alias "
      "tables)",
      [](std::string_view v, DaemonConfig* c) -> absl::Status {
        absl::StatusOr<KernelKind> k = ParseKernelKind(v);
        if (!k.ok()) return Bad("kernel", v, "auto|sparse|dense|mh");
        c->service.trainer.pipeline.kernel = *k;
        return absl::OkStatus();
      });
  add("mh-steps", "2", "1..64",
      "MH cycles (a word and a document proposal) per token (kernel mh, "
      "auto)",
      Int<int>("mh-steps", 1, 64, [](DaemonConfig* c) {
        return &c->service.trainer.pipeline.kernel_options.mh.steps;
      }));
  add("start", "progressive", "progressive|uniform",
      "The first sweep's starting state (first start): progressive (a "
      "first pass draws each token given the tokens placed before it, every "
      "16th batch of the corpus first, then the rest with each word's "
      "row smoothed, so rows start as sparse as the data makes them; "
      "1.5-2x sooner to a log-likelihood, held-out as good or better, "
      "docs/benchmarks.md; the model holds no tokens until that first "
      "sweep ends) | uniform "
      "(every token a uniformly random topic). A cluster member always "
      "starts uniform",
      [](std::string_view v, DaemonConfig* c) -> absl::Status {
        if (v != "progressive" && v != "uniform") {
          return Bad("start", v, "progressive|uniform");
        }
        c->service.trainer.progressive_start = v == "progressive";
        return absl::OkStatus();
      });
  add("sparse-start", "0", "0..65536",
      "Sparse start (first start): before the first sweep, give each word's "
      "tokens one of this many topics fixed per word, so rows start sparse "
      "and the first sweeps are cheap; its held-out perplexity is worse than "
      "the uniform start's (docs/benchmarks.md); takes precedence over "
      "start (0: off, start decides)",
      Int<uint32_t>("sparse-start", 0, kMaxTopics, [](DaemonConfig* c) {
        return &c->service.trainer.init_row_topics;
      }));
  add("batch-overlay", "on", "on|off",
      "A batch's later tokens see its own moves on the rows of words of at "
      "most overlay-max-word-tokens tokens, so one sampler thread samples "
      "(nearly) as a serial Gibbs sampler (kernels sparse, dense, auto; mh "
      "keeps its own snapshots); off: they see the rows as the batch began "
      "(faster, worse per sweep on short documents)",
      Bool("batch-overlay", [](DaemonConfig* c) {
        return &c->service.trainer.pipeline.kernel_options.batch_overlay;
      }));
  add("overlay-max-word-tokens", "auto", "auto|0..2^62",
      "The batch overlay follows only words with at most this many tokens: "
      "a frequent word's own moves in a batch barely change its row, and "
      "following them is most of the overlay's cost (0: every word; auto: "
      "256 where documents average under 64 tokens, else 64)",
      [](std::string_view v, DaemonConfig* c) -> absl::Status {
        absl::StatusOr<int64_t> n = ParseOverlayMaxWordTokens(v);
        if (!n.ok()) return Bad("overlay-max-word-tokens", v, "auto|0..2^62");
        c->service.trainer.pipeline.kernel_options.overlay_max_word_tokens = *n;
        return absl::OkStatus();
      });
  add("optimize-alpha", "on", "on|off", "Learn an asymmetric alpha",
      Bool("optimize-alpha",
           [](DaemonConfig* c) { return &c->service.trainer.optimize_alpha; }));
  add("eval-every", "10", "0..1000000",
      "Compute the log-likelihood every N sweeps (0: never)",
      Int<int>("eval-every", 0, 1000000,
               [](DaemonConfig* c) { return &c->service.trainer.eval_every; }));
  add("max-sweeps", "0", "0..2^62",
      "Stop sampling once the model has this many sweeps in all, those of "
      "earlier runs included (0: train forever); ingestion and queries go "
      "on. (latentctl train --sweeps is instead the sweeps to run now)",
      Int<uint64_t>("max-sweeps", 0, int64_t{1} << 62,
                    [](DaemonConfig* c) { return &c->service.max_sweeps; }));
  add("sweep-interval-ms", "0", "0..60000",
      "The least time from one sweep's start to the next (0: back to back): "
      "bounds the CPU a settled model on a small corpus spends sampling and, "
      "in a cluster, syncing; an ingest still merges at once",
      Int<int>("sweep-interval-ms", 0, 60000,
               [](DaemonConfig* c) { return &c->service.sweep_interval_ms; }));
  add("checkpoint-every", "100", "0..1000000",
      "Write a checkpoint every N sweeps (0: not by sweeps)",
      Int<int>("checkpoint-every", 0, 1000000,
               [](DaemonConfig* c) { return &c->service.checkpoint_every; }));
  add("checkpoint-seconds", "60", "0..86400",
      "Write a checkpoint when this long has passed since the last (0: not "
      "by time); also on request and at exit",
      Double("checkpoint-seconds", 0, 86400,
             [](DaemonConfig* c) { return &c->service.checkpoint_seconds; }));
  add("publish-ms", "250", "0..60000",
      "Publish sweeps to queries at most this often (merged ingests at once)",
      Int<int>("publish-ms", 0, 60000, [](DaemonConfig* c) {
        return &c->service.publish_interval_ms;
      }));
  add("coherence-seconds", "60", "0..86400",
      "Compute topic coherence (UMass, NPMI; one read of the token store) "
      "for ListTopics, Status and /metrics at most this often, and when "
      "sampling stops (0: never)",
      Double("coherence-seconds", 0, 86400,
             [](DaemonConfig* c) { return &c->service.coherence_seconds; }));
  add("similarity-refresh-seconds", "30", "0..86400",
      "While sampling, refresh SimilarDocuments' and SimilarUsers' index "
      "from the model at most this often (one read of the token store; "
      "merged documents go in at once, and the final model when sampling "
      "stops)",
      Double("similarity-refresh-seconds", 0, 86400, [](DaemonConfig* c) {
        return &c->service.similarity.refresh_seconds;
      }));
  add("similarity-max-topics", "1024", "0..65536",
      "Up to this many topics SimilarDocuments' and SimilarUsers' index "
      "keeps K floats per document and user (a scan, then an HNSW graph); "
      "above it, each one's non-zero topic counts, answered by an exact scan "
      "that costs their non-zeros (a dense index at K=10,000 on news20 took "
      "2.7 GB and most of the CPU; 0: always dense)",
      Int<uint32_t>("similarity-max-topics", 0, 65536, [](DaemonConfig* c) {
        return &c->service.similarity.max_topics;
      }));
  add("coherence-top", "10", "2..100",
      "Top words per topic that coherence scores",
      Int<int>("coherence-top", 2, 100, [](DaemonConfig* c) {
        return &c->service.coherence_top_words;
      }));
  add("coherence-convention", "mimno", "mimno|gensim",
      "Coherence smoothing: mimno (UMass +1, NPMI -1 for pairs never seen "
      "together) or gensim (its u_mass and c_npmi with 1e-12, a document "
      "as the window: the numbers gensim's CoherenceModel gives)",
      [](std::string_view v, DaemonConfig* c) -> absl::Status {
        absl::StatusOr<CoherenceConvention> parsed =
            ParseCoherenceConvention(v);
        if (!parsed.ok()) return Bad("coherence-convention", v, "mimno|gensim");
        c->service.coherence_convention = *parsed;
        return absl::OkStatus();
      });
  add("infer-iterations", "30", "1..1000",
      "Default fold-in Gibbs sweeps per InferDocument",
      Int<int>("infer-iterations", 1, 1000,
               [](DaemonConfig* c) { return &c->service.infer.iterations; }));
  add("infer-burn-in", "10", "0..999",
      "Default fold-in sweeps discarded before averaging",
      Int<int>("infer-burn-in", 0, 999,
               [](DaemonConfig* c) { return &c->service.infer.burn_in; }));
  add("max-ingest-docs", "1000", "1..1000000",
      "Most documents in one Ingest call",
      Int<size_t>("max-ingest-docs", 1, 1000000, [](DaemonConfig* c) {
        return &c->service.max_documents_per_ingest;
      }));
  add("max-document-tokens", "1048576", "1..1073741824",
      "Most tokens in one document: an ingested one, or one of an LDA-C or "
      "UCI corpus (a longer one is refused, or skipped as malformed)",
      Int<uint64_t>("max-document-tokens", 1, int64_t{1} << 30,
                    [](DaemonConfig* c) {
                      return &c->service.corpus.max_document_tokens;
                    }));
  add("max-word-count", "65536", "1..1073741824",
      "Largest count of one word in one document of an LDA-C or UCI corpus "
      "(a larger one is skipped as malformed)",
      Int<uint64_t>("max-word-count", 1, int64_t{1} << 30, [](DaemonConfig* c) {
        return &c->service.corpus.max_word_count;
      }));
  add("max-word-bytes", "128", "1..65536",
      "Longest word taken from an ingested text (longer ones are dropped, as "
      "stop words are), given in a word list, or asked for (refused)",
      Int<size_t>("max-word-bytes", 1, 65536,
                  [](DaemonConfig* c) { return &c->service.max_word_bytes; }));
  add("max-id-bytes", "1024", "1..1048576",
      "Longest user id, document id or source of an ingested document "
      "(refused)",
      Int<size_t>("max-id-bytes", 1, 1 << 20,
                  [](DaemonConfig* c) { return &c->service.max_id_bytes; }));
}

// The API front ends.
void AddServingSettings(const AddFn& add) {
  add("http", "127.0.0.1:7070", "host:port|off",
      "HTTP/JSON gateway address, also serving the status page at / (port 0 "
      "picks one; see DIR/ports)",
      Address("http", true, [](DaemonConfig* c, std::string h, int p) {
        c->http.host = h.empty() ? c->http.host : h;
        c->http.port = p;
      }));
  add("listen", "127.0.0.1:7071", "host:port|off",
      "Framed protobuf (TCP) address (port 0 picks one; see DIR/ports)",
      Address("listen", true, [](DaemonConfig* c, std::string h, int p) {
        c->rpc_enabled = p >= 0;
        if (p >= 0) {
          c->rpc.host = h;
          c->rpc.port = p;
        }
      }));
  add("http-threads", "32", "1..1024",
      "HTTP worker threads; a connection holds one only while one of its "
      "requests is run (idle, slow senders and slow readers hold none)",
      Int<int>("http-threads", 1, 1024,
               [](DaemonConfig* c) { return &c->http.threads; }));
  add("http-max-connections", "4096", "1..1000000",
      "HTTP connections open at once, idle ones included; one more is "
      "answered 503 and closed at once (latentd raises its open-files "
      "limit to the hard limit, ulimit -Hn, and warns if the caps exceed "
      "it)",
      Int<int>("http-max-connections", 1, 1000000,
               [](DaemonConfig* c) { return &c->http.max_connections; }));
  add("http-max-connections-per-address", "512", "0..1000000",
      "HTTP connections open at once from one client IP address; one more "
      "is answered 503 and closed at once (0: no cap)",
      Int<int>("http-max-connections-per-address", 0, 1000000,
               [](DaemonConfig* c) {
                 return &c->http.max_connections_per_address;
               }));
  add("http-idle-timeout", "5", "1..3600",
      "Seconds an HTTP connection may wait for its next (or first) request "
      "before it is closed",
      Int<int>("http-idle-timeout", 1, 3600,
               [](DaemonConfig* c) { return &c->http.idle_timeout_seconds; }));
  add("http-read-timeout", "5", "1..3600",
      "Seconds an HTTP request may stall (no byte arrives) before its "
      "connection is dropped",
      Int<int>("http-read-timeout", 1, 3600,
               [](DaemonConfig* c) { return &c->http.read_timeout_seconds; }));
  add("http-write-timeout", "5", "1..3600",
      "Seconds an HTTP answer may go without the client reading a byte "
      "of it before the connection is dropped",
      Int<int>("http-write-timeout", 1, 3600,
               [](DaemonConfig* c) { return &c->http.write_timeout_seconds; }));
  add("http-request-timeout", "30", "1..3600",
      "Seconds an HTTP request may take to arrive whole (headers and body) "
      "from its first byte; later, its connection is closed "
      "(latentd_http_requests_refused_total{reason=\"timeout\"}). A "
      "request takes a worker thread only once it has arrived",
      Int<int>("http-request-timeout", 1, 3600, [](DaemonConfig* c) {
        return &c->http.request_timeout_seconds;
      }));
  add("http-max-header-bytes", "65536", "1024..16777216",
      "Largest HTTP request line plus headers, in bytes; more is answered "
      "431 Request Header Fields Too Large and the connection closed",
      Int<size_t>("http-max-header-bytes", 1024, 16 << 20,
                  [](DaemonConfig* c) { return &c->http.max_header_bytes; }));
  add("http-max-headers", "100", "8..10000",
      "Most header lines in one HTTP request (a chunked body's trailers "
      "included); more is answered 431 and the connection closed",
      Int<int>("http-max-headers", 8, 10000,
               [](DaemonConfig* c) { return &c->http.max_headers; }));
  add("http-max-bytes-in-flight", "268435456", "0..2^40",
      "Bytes of HTTP requests received but not yet served, all connections "
      "together; a request that would take more is answered 503 and its "
      "connection closed (0: no cap)",
      Int<size_t>("http-max-bytes-in-flight", 0, int64_t{1} << 40,
                  [](DaemonConfig* c) {
                    return &c->http.max_request_bytes_in_flight;
                  }));
  add("api-tokens", "", "a file",
      "Bearer tokens of the HTTP and TCP APIs, one \"ROLE TOKEN\" per line "
      "(ROLE: read, write or admin; tokens of 16 or more characters); empty: "
      "no authentication. A cluster's nodes share one file",
      String([](DaemonConfig* c) { return &c->api_tokens_file; }));
  add("open-health", "on", "on|off",
      "With api-tokens: /healthz, /readyz and /metrics answer without a "
      "token (off: they need a read token)",
      Bool("open-health",
           [](DaemonConfig* c) { return &c->http.open_health; }));
  add("listen-max-connections", "4096", "0..1000000",
      "TCP API connections open at once, idle ones included; one more is "
      "closed at once (0: no cap)",
      Int<int>("listen-max-connections", 0, 1000000,
               [](DaemonConfig* c) { return &c->rpc.max_connections; }));
  add("listen-max-connections-per-address", "512", "0..1000000",
      "TCP API connections open at once from one client IP address; one "
      "more is closed at once (0: no cap)",
      Int<int>(
          "listen-max-connections-per-address", 0, 1000000,
          [](DaemonConfig* c) { return &c->rpc.max_connections_per_address; }));
  add("listen-idle-timeout", "60", "0..86400",
      "Seconds a TCP API connection may go without a call (none of its "
      "own in progress) before it is closed; clients reconnect (0: never)",
      Int<int>("listen-idle-timeout", 0, 86400,
               [](DaemonConfig* c) { return &c->rpc.idle_timeout_seconds; }));
  add("listen-max-bytes-in-flight", "268435456", "0..2^40",
      "Payload bytes of TCP API frames still arriving, all connections "
      "together (a frame's buffer grows as its bytes come, never from what "
      "its header announces); a frame that would take more closes its "
      "connection, logged and counted in "
      "latentd_frames_over_budget_total{listener=\"tcp\"} (0: no cap)",
      Int<size_t>(
          "listen-max-bytes-in-flight", 0, int64_t{1} << 40,
          [](DaemonConfig* c) { return &c->rpc.max_request_bytes_in_flight; }));
  add("tls-cert", "", "a file",
      "TLS certificate (PEM, then any intermediates) for both APIs: HTTPS "
      "on --http, TLS on --listen; with tls-key. Empty: no TLS",
      String([](DaemonConfig* c) { return &c->tls_cert_file; }));
  add("tls-key", "", "a file", "Private key (PEM) of tls-cert",
      String([](DaemonConfig* c) { return &c->tls_key_file; }));
  add("tls-ca", "", "a file",
      "With tls-cert in cluster mode: the CA (PEM) the node verifies its "
      "peers' API certificates with when it forwards a user's events or "
      "profile query (empty: the system's CAs)",
      String([](DaemonConfig* c) { return &c->tls_ca_file; }));
  add("rpc-threads", "8", "0..1024",
      "Threads running TCP calls that may block (Ingest, Checkpoint, "
      "GetUserProfile); the others run on the I/O threads (0: all do)",
      Int<int>("rpc-threads", 0, 1024,
               [](DaemonConfig* c) { return &c->rpc.worker_threads; }));
  add("rpc-io-threads", "0", "0..256",
      "TCP event-loop threads, which also run the calls that only compute "
      "(0: one per core)",
      Int<int>("rpc-io-threads", 0, 256,
               [](DaemonConfig* c) { return &c->rpc.io_threads; }));
  add("infer-slots", "0", "0..1024",
      "InferDocument calls computing at once, the rest queue in arrival "
      "order (0: two per core)",
      Int<int>("infer-slots", 0, 1024,
               [](DaemonConfig* c) { return &c->service.infer_slots; }));
  add("max-body-bytes", "4194304", "1024..1073741824",
      "Largest HTTP body or TCP frame accepted (larger: 413 / closed)",
      [](std::string_view v, DaemonConfig* c) -> absl::Status {
        int64_t x;
        if (!absl::SimpleAtoi(ToAbsl(v), &x) || x < 1024 || x > (1 << 30)) {
          return Bad("max-body-bytes", v, "an integer in 1024..1073741824");
        }
        c->http.max_body_bytes = static_cast<size_t>(x);
        c->rpc.max_frame_bytes = static_cast<uint32_t>(x);
        c->service.max_text_bytes = static_cast<size_t>(x);
        return absl::OkStatus();
      });
}

// Streaming input.
void AddIngestSettings(const AddFn& add) {
  add("redis", "", "redis://[:PASSWORD@]host:port|unix:/path|empty",
      "Redis server whose stream is ingested (empty: none); a password in "
      "the url is sent as AUTH (keep it in this file, mode 0600, not on the "
      "command line)",
      String([](DaemonConfig* c) { return &c->redis.address; }));
  add("redis-stream", "latentd:ingest", "a key", "Stream to consume",
      String([](DaemonConfig* c) { return &c->redis.stream; }));
  add("redis-group", "latentd", "a name", "Consumer group",
      String([](DaemonConfig* c) { return &c->redis.group; }));
  add("redis-consumer", "node-1", "a name", "Consumer name in the group",
      String([](DaemonConfig* c) { return &c->redis.consumer; }));
  add("ingest-log-compact-bytes", "67108864", "0..2^62",
      "Compact DIR/ingest.log after a merge once it is this big (0: never)",
      Int<uint64_t>(
          "ingest-log-compact-bytes", 0, int64_t{1} << 62,
          [](DaemonConfig* c) { return &c->service.compact_log_bytes; }));
  add("refuse-ingest-loss", "off", "on|off",
      "Refuse to start when damage in DIR/ingest.log lost acknowledged "
      "documents not merged yet, or a damaged block of DIR/tokens.lts would "
      "lose its documents (off: start without them, log an error naming "
      "their sequences or document indices, count them in "
      "latentd_ingest_lost_total or latentd_token_store_docs_lost_total)",
      Bool("refuse-ingest-loss",
           [](DaemonConfig* c) { return &c->service.refuse_ingest_loss; }));
  add("watch-dir", "", "a directory",
      "Ingest files dropped here, one document each (empty: none)",
      String([](DaemonConfig* c) { return &c->watch.dir; }));
  add("watch-rescan-ms", "5000", "10..3600000",
      "Rescan the watched directory this often (new files are seen at once "
      "through inotify; rescans retry failed ingests)",
      Int<int>("watch-rescan-ms", 10, 3600000,
               [](DaemonConfig* c) { return &c->watch.poll_ms; }));
}

// Cluster mode (service/cluster/cluster_link.h).
void AddClusterSettings(const AddFn& add) {
  add("cluster-redis", "", "redis://[:PASSWORD@]host:port|unix:/path|empty",
      "Redis holding the cluster's membership (empty: a single node); a "
      "password in the url (redis://:PASSWORD@host:port, "
      "unix://:PASSWORD@/path) is sent as AUTH: keep it in this file, mode "
      "0600, not on the command line",
      [](std::string_view v, DaemonConfig* c) {
        c->cluster.redis_url = std::string(v);
        c->service.cluster_mode = !v.empty();
        return absl::OkStatus();
      });
  add("cluster", "latentd", "a name", "Name of the cluster to join",
      String([](DaemonConfig* c) { return &c->cluster.cluster; }));
  add("cluster-size", "1", "1..1024",
      "Members the ring is fixed with (the node waits for all to join)",
      Int<uint32_t>("cluster-size", 1, 1024, [](DaemonConfig* c) {
        return &c->cluster.expected_members;
      }));
  add("cluster-join", "off", "on|off",
      "Join a running cluster: register as pending, wait for `latentctl "
      "cluster add-node ID` (up to join-timeout), take the keys the new ring "
      "gives this node, then train (cluster-size is not used). Once "
      "admitted, a start with it is a restart",
      Bool("cluster-join", [](DaemonConfig* c) { return &c->cluster.join; }));
  add("cluster-listen", "127.0.0.1:0", "host:port",
      "Address of the node's sync server (port 0: one below the ephemeral "
      "range, picked once and kept in DIR/cluster.address)",
      Address("cluster-listen", false,
              [](DaemonConfig* c, std::string h, int p) {
                c->cluster.listen = absl::StrCat(h, ":", p);
              }));
  add("consistency", "auto", "auto|async|ssp:N|bsp",
      "Cluster consistency: async (never waits; drifts from one node's "
      "model when nodes progress unevenly or sweep faster than a sync "
      "round), ssp:N (at most N sweeps ahead of the slowest live node; "
      "ssp:2 holds quality at little cost) or bsp (ssp:0). auto: bsp for a "
      "graph-only node (a graph cluster under async ends 2-4% above one "
      "node's objective, under bsp within 0.5%), async otherwise",
      [](std::string_view v, DaemonConfig* c) -> absl::Status {
        c->service.consistency_auto = v == "auto";
        absl::StatusOr<sync::Consistency> parsed =
            sync::Consistency::Parse(c->service.consistency_auto ? "async" : v);
        if (!parsed.ok()) return Bad("consistency", v, "auto|async|ssp:N|bsp");
        c->cluster.consistency = *parsed;
        return absl::OkStatus();
      });
  add("cluster-key", "", "a file|empty",
      "The cluster's shared secret key file (the same on every node; make "
      "one with `openssl rand -hex 32 > FILE; chmod 600 FILE`): sync "
      "connections prove it both ways and every frame carries a MAC. "
      "Cluster mode needs it, or --insecure",
      String([](DaemonConfig* c) { return &c->cluster_key_file; }));
  add("insecure", "off", "on|off",
      "Cluster mode without a cluster key: the sync port accepts frames "
      "from anyone who can reach it (loopback development only; logged as "
      "a warning)",
      Bool("insecure", [](DaemonConfig* c) { return &c->cluster.insecure; }));
  add("cluster-tls-cert", "", "a file|empty",
      "Mutual TLS on the sync port: this node's certificate (PEM, then any "
      "intermediates) from the cluster CA, shown to peers both as server "
      "and as client; it must name the host of --cluster-listen. With "
      "cluster-tls-key and cluster-tls-ca (all three or none; empty: no "
      "TLS). The cluster key still runs inside TLS",
      String([](DaemonConfig* c) { return &c->cluster.tls.cert_file; }));
  add("cluster-tls-key", "", "a file|empty",
      "Private key (PEM) of cluster-tls-cert",
      String([](DaemonConfig* c) { return &c->cluster.tls.key_file; }));
  add("cluster-tls-ca", "", "a file|empty",
      "The cluster CA (PEM): a peer's certificate must chain to it, a peer "
      "without one is refused",
      String([](DaemonConfig* c) { return &c->cluster.tls.ca_file; }));
  add("cluster-tls-require-node-id", "off", "on|off",
      "With cluster-tls-*: refuse a peer whose certificate names no node id "
      "(a subjectAltName URI latentd-node:ID, made by "
      "ops/issue-node-cert.sh). A peer whose certificate names one is "
      "refused whenever it claims another id, on or off; turn this on once "
      "every member has a per-node certificate",
      Bool("cluster-tls-require-node-id",
           [](DaemonConfig* c) { return &c->cluster.tls_require_node_id; }));
  add("cluster-max-connections", "1024", "0..1000000",
      "Sync port connections open at once; one more is closed at once (0: "
      "no cap)",
      Int<int>("cluster-max-connections", 0, 1000000,
               [](DaemonConfig* c) { return &c->cluster.max_connections; }));
  add("cluster-max-connections-per-address", "256", "0..1000000",
      "Sync port connections open at once from one IP address; one more is "
      "closed at once (0: no cap)",
      Int<int>("cluster-max-connections-per-address", 0, 1000000,
               [](DaemonConfig* c) {
                 return &c->cluster.max_connections_per_address;
               }));
  add("cluster-max-bytes-in-flight", "1073741824", "0..2^40",
      "Payload bytes of sync port frames still arriving, all connections "
      "together; a frame that would take more closes its connection, "
      "logged and counted in "
      "latentd_frames_over_budget_total{listener=\"sync\"} (0: no cap)",
      Int<size_t>("cluster-max-bytes-in-flight", 0, int64_t{1} << 40,
                  [](DaemonConfig* c) {
                    return &c->cluster.max_request_bytes_in_flight;
                  }));
  add("cluster-idle-timeout", "300", "0..86400",
      "Seconds a sync port connection may go without a frame (none of its "
      "calls in progress) before it is closed; peers reconnect (0: never)",
      [](std::string_view v, DaemonConfig* c) -> absl::Status {
        absl::StatusOr<int64_t> x = IntIn("cluster-idle-timeout", v, 0, 86400);
        if (x.ok()) {
          c->cluster.idle_timeout =
              *x == 0 ? absl::InfiniteDuration() : absl::Seconds(*x);
        }
        return x.status();
      });
  add("join-timeout", "60", "1..86400",
      "Seconds to wait for every member to join and push its counts",
      Seconds("join-timeout", 1, 86400,
              [](DaemonConfig* c) { return &c->cluster.join_timeout; }));
  add("replicas", "2", "1..8",
      "Cluster mode: copies of each acknowledged document on distinct nodes' "
      "disks. With k > 1 an Ingest is acknowledged only once this node's "
      "ingest log and the replica logs (DIR/replicas) of the next k-1 "
      "members of the ring for the document or its user (skipping members "
      "leaving or down) hold it fsynced; "
      "a backup that cannot be reached fails it (UNAVAILABLE). The copies "
      "of a node removed with `latentctl cluster remove-node --lost` are "
      "adopted by the nodes holding them. The same k copies each key's "
      "state that only its owner holds (its own counts): a failed-over "
      "node's counts then stay in the model until it returns or is removed "
      "as lost. 1: no copies (a failed-over node's counts leave the model)",
      Int<uint32_t>("replicas", 1, 8,
                    [](DaemonConfig* c) { return &c->service.replicas; }));
  add("failure-timeout", "1.5", "0 or 0.1..3600",
      "Seconds without a heartbeat in Redis after which a ring member is "
      "declared down and failed over: the others take its keys over (with "
      "--replicas 2 or more its counts stay in the model from the copies; "
      "with 1 they leave it) until it returns (restarted from its data "
      "directory, it is re-admitted by itself). Heartbeats go out every "
      "fifth of it. 0: never (a dead node's keys wait for it, or for "
      "`latentctl cluster remove-node --lost`)",
      [](std::string_view v, DaemonConfig* c) -> absl::Status {
        double x;
        if (!absl::SimpleAtod(ToAbsl(v), &x) || !(x >= 0) || !(x <= 3600) ||
            (x > 0 && x < 0.1)) {
          return Bad("failure-timeout", v, "0, or seconds in 0.1..3600");
        }
        c->cluster.failure_timeout = absl::Seconds(x);
        return absl::OkStatus();
      });
  add("failover-grace", "60", "0..86400",
      "Seconds after this node starts during which a ring member it has "
      "not seen beat since (every member, after a whole-cluster restart) "
      "is waited for rather than failed over. A member seen alive since "
      "is failed over after --failure-timeout as before; and no member "
      "declares another down unless at least half of the ring beats "
      "(docs/operations.md, \"Restarts and failover\")",
      Seconds("failover-grace", 0, 86400,
              [](DaemonConfig* c) { return &c->cluster.failover_grace; }));
  add("cluster-max-new-keys", "4000000", "0..10^12",
      "Cluster mode: the most keys (words, or a graph's vertices) one member "
      "may create at this node's share of the table in a ring epoch. A "
      "batch that would pass it is refused whole, logged and counted "
      "(latentd_sync_batches_refused_total{reason=\"too_many_keys\"}), so "
      "that no member can grow another's memory without bound with "
      "made-up keys. Keys arriving by a hand-off or a replica copy do not "
      "count. 0: no bound",
      Int<uint64_t>(
          "cluster-max-new-keys", 0, int64_t{1000000000000},
          [](DaemonConfig* c) { return &c->cluster.max_new_keys_per_member; }));
}

// What SIGHUP applies to a running daemon (LatentdService::Reconfigure and
// the log file); every other setting needs a restart.
bool IsRuntimeSetting(std::string_view name) {
  static constexpr std::string_view kRuntime[] = {
      "max-sweeps",         "sweep-interval-ms", "checkpoint-every",
      "checkpoint-seconds", "publish-ms",        "ingest-log-compact-bytes",
      "log-file",           "log-level",         "progress-seconds",
      "coherence-seconds",  "coherence-top"};
  return std::find(std::begin(kRuntime), std::end(kRuntime), name) !=
         std::end(kRuntime);
}

// The daemon itself.
void AddProcessSettings(const AddFn& add) {
  add("log-file", "", "a file|empty",
      "Append the log here instead of stderr; SIGHUP reopens it (for "
      "logrotate)",
      String([](DaemonConfig* c) { return &c->log_file; }));
  add("log-level", "info", "debug|info|warning|error",
      "Lowest level of the lines logged",
      [](std::string_view v, DaemonConfig* c) -> absl::Status {
        absl::StatusOr<log::Level> level = log::ParseLevel(v);
        if (!level.ok()) return Bad("log-level", v, "debug|info|warning|error");
        c->log_level = *level;
        return absl::OkStatus();
      });
  add("progress-seconds", "10", "0..86400",
      "Log a training progress line (sweep, tokens/s, log-likelihood) at "
      "most this often (0: after every sweep)",
      Double("progress-seconds", 0, 86400,
             [](DaemonConfig* c) { return &c->service.progress_seconds; }));
}

// Other names of settings: names latentd had before (deprecated: one
// setting, one name in every binary) and those gensim and Mallet users
// know. A name here never means anything else in latentctl or
// latentd-cluster-node (tests/cli/flag_names_test.sh checks the binaries).
struct SettingAlias {
  std::string_view alias;
  std::string_view setting;
  bool deprecated;
};
constexpr SettingAlias kAliases[] = {
    {"corpus-vocab", "vocab", true},  // latentctl and the node say --vocab
    {"num-topics", "topics", false},  // gensim's num_topics, Mallet's
    {"join", "cluster-join", false},  // the elastic-cluster design's name
};

// Gives each setting its aliases (named in its help) and appends a row per
// alias, which applies like its setting.
void AddAliases(std::vector<SettingSpec>* table) {
  const size_t settings = table->size();
  for (const SettingAlias& a : kAliases) {
    auto it =
        std::find_if(table->begin(), table->begin() + settings,
                     [&](const SettingSpec& s) { return s.name == a.setting; });
    if (it == table->begin() + settings) continue;
    it->aliases.emplace_back(a.alias);
    absl::StrAppend(&it->help,
                    a.deprecated ? ". Old name: " : ". Also: ", ToAbsl(a.alias),
                    a.deprecated ? " (deprecated)" : "");
    SettingSpec row;
    row.name = std::string(a.alias);
    row.bounds = it->bounds;
    row.runtime = it->runtime;
    row.help = absl::StrCat(
        a.deprecated ? "Deprecated name of --" : "Same as --", it->name);
    row.alias_of = it->name;
    row.apply = it->apply;
    table->push_back(std::move(row));
  }
}

}  // namespace

std::vector<SettingSpec> MakeSettingsTable() {
  std::vector<SettingSpec> t;
  const AddFn add = [&t](std::string name, std::string def, std::string bounds,
                         std::string help, Apply apply) {
    const bool runtime = IsRuntimeSetting(name);
    SettingSpec spec;
    spec.name = std::move(name);
    spec.default_value = std::move(def);
    spec.bounds = std::move(bounds);
    spec.runtime = runtime;
    spec.help = std::move(help);
    spec.apply = std::move(apply);
    t.push_back(std::move(spec));
  };
  AddModelSettings(add);
  AddServingSettings(add);
  AddIngestSettings(add);
  AddClusterSettings(add);
  AddGraphSettings(add);
  AddProcessSettings(add);
  AddAliases(&t);
  return t;
}

}  // namespace latentd::service::internal
