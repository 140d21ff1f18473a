// ServiceOptions: what a latentd node (LatentdService, service/
// latentd_service.h) is opened with. The daemon builds it from its settings
// table (service/daemon_settings.h); Reconfigure applies the fields that may
// change at runtime. A plain struct: copy it freely; no thread-safety of its
// own.
#ifndef LATENTD_SERVICE_SERVICE_OPTIONS_H_
#define LATENTD_SERVICE_SERVICE_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "corpora/corpus_builder.h"
#include "corpora/document_reader.h"
#include "sampler/coherence.h"
#include "sampler/fold_in.h"
#include "sampler/trainer.h"
#include "service/graph_service.h"
#include "service/similarity_service.h"
#include "sync/transport/tls.h"

namespace latentd::service {

struct ServiceOptions {
  std::string data_dir;  // created if missing
  // First start only: the corpus the token store is built from.
  ReaderOptions corpus;
  CorpusBuilderOptions build;
  // Training settings; on a resume K, β and the seed come from the
  // checkpoint.
  TrainerOptions trainer;
  uint64_t max_sweeps = 0;  // stop sampling after this sweep; 0 = never
  // The least time from one sweep's start to the next; 0 = back to back.
  // On a small corpus a sweep takes a millisecond, and a node sampling
  // (and, in a cluster, syncing) back to back spends every core it has
  // long after the model has settled. Ingested documents still merge at
  // once: the wait ends when work arrives.
  int sweep_interval_ms = 0;
  // With a held-out store (DIR/heldout.lts, built on the first start when
  // build.holdout_fraction > 0): score its perplexity by document
  // completion (fold-in with `infer`) every `heldout_every` sweeps (0:
  // never by sweeps) and once sampling stops. Scoring runs on the training
  // thread between sweeps.
  int heldout_every = 10;
  // A checkpoint is written every `checkpoint_every` sweeps and whenever
  // `checkpoint_seconds` have passed since the last (0 disables either),
  // on Checkpoint() and at Stop().
  int checkpoint_every = 100;
  double checkpoint_seconds = 60;
  // Sweeps are published to queries at most this often (a merge of
  // ingested documents, and the last sweep before an idle spell, always
  // are). Building a view copies the counts, so this bounds its cost.
  int publish_interval_ms = 250;
  // A progress line (sweep, tokens/s, log-likelihood) is logged at info at
  // most this often; 0 = after every sweep.
  double progress_seconds = 10;
  // Topic coherence (UMass, NPMI of the top `coherence_top_words` words;
  // sampler/coherence.h) over this node's token store, for ListTopics,
  // Status and /metrics: computed on the training thread between sweeps,
  // one read of the store (no sampling), at most every `coherence_seconds`
  // and once more when sampling stops; 0 = never.
  double coherence_seconds = 60;
  int coherence_top_words = 10;
  CoherenceConvention coherence_convention = CoherenceConvention::kMimno;
  InferOptions infer{.iterations = 30, .burn_in = 10, .seed = 1};
  uint32_t max_infer_iterations = 1000;
  // InferDocument calls folding in at once (service/internal/cpu_gate.h);
  // the others queue, first come first served. 0: two per core (measured
  // best on 2 cores: one per core lost 40% of HTTP throughput, since a
  // slot holder off its core blocks the slot; no limit lengthened p99).
  int infer_slots = 0;
  size_t max_documents_per_ingest = 1000;
  size_t max_text_bytes = 1 << 20;  // per document or inferred text
  // Ingested documents (CheckDocumentLimits): longer words are dropped from
  // texts and refused in word lists; longer user ids, document ids and
  // sources are refused. Tokens per document: corpus.max_document_tokens.
  size_t max_word_bytes = 128;
  size_t max_id_bytes = 1024;
  // Compact the ingest log (IngestLog::Compact) after a merge once it is
  // this big; 0 = never. Tombstones of the last `keep_sources` sourced
  // records stay for deduplicating redeliveries.
  uint64_t compact_log_bytes = 64 << 20;
  size_t keep_sources = 100000;
  // Start-up with acknowledged, unmerged documents damaged in the ingest
  // log: false (default) starts without them, logging an error naming
  // their sequences and counting them (latentd_ingest_lost_total); true
  // refuses to start (kDataLoss), the log left as it is for an operator.
  // Damaged records merged already are skipped either way.
  // The same for the token store: false repairs a damaged block at start
  // (its documents lost, now empty; logged with their indices, counted in
  // latentd_token_store_docs_lost_total), true refuses to start.
  bool refuse_ingest_loss = false;
  // JoinCluster will be called (cluster mode). Until it has succeeded,
  // Ingest, IngestRecords and GetUserProfile answer kUnavailable: the
  // ring that says which node owns a user is not known yet.
  bool cluster_mode = false;
  // --consistency auto (not set): a graph-only node joins its cluster under
  // bsp, whatever the ClusterLinkOptions given to JoinCluster say.
  bool consistency_auto = false;
  // Called (on the training thread) once this node has left the cluster
  // because an operator removed it; the daemon then shuts down.
  std::function<void()> on_left_cluster;
  // Called (on the training thread) once the cluster has declared this
  // live node down (failed over; it stops sampling); the daemon then
  // restarts itself so that it returns. Unset: it stays out of the
  // cluster, serving queries, until restarted.
  std::function<void()> on_declared_down;
  // Called (on the training thread) once this node's removal (remove-node
  // --handoff) was rolled back because its hand-off failed: the ring has
  // it active again; the daemon restarts itself to sample and take
  // ingests again. Unset: it stays, not sampling, until restarted.
  std::function<void()> on_removal_rolled_back;
  // The graph model the node serves besides its topic model (graph.
  // edges_path set: latentd --graph-edges); graph.dir is set by Open to
  // DIR/graph.
  GraphServiceOptions graph;
  // The bearer token this node's calls to its cluster peers carry (a
  // user's events and profile queries forwarded to the owner); "" = none.
  // With api-tokens it is an admin token of the file the nodes share.
  std::string peer_token;
  // TLS towards the peers' TCP APIs when forwarding (their tls-cert): on
  // when this node's own API runs TLS, verified against the tls-ca file.
  sync::ClientTls peer_tls;
  // Cluster mode: copies of each acknowledged document, on distinct nodes
  // (--replicas; docs/design.md "Replicated ingestion"). With k > 1 a
  // document is acknowledged only once this node's ingest log and the
  // replica logs (DIR/replicas, service/replica_logs.h) of the next k-1
  // distinct members of the ring for that document or user hold it
  // fsynced; a backup that cannot be reached fails the ingest
  // (kUnavailable). A ring of fewer than k members takes as many copies as
  // it has members (counted as under-replicated). 1: no copies.
  uint32_t replicas = 2;
  // The similar documents and users index (service/similarity_service.h).
  SimilarityServiceOptions similarity;
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_SERVICE_OPTIONS_H_
