#include "cli/cluster_commands.h"

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "sync/control/drain.h"
#include "sync/control/membership.h"

namespace latentd {
namespace {

// A JSON string literal: quotes, backslashes and control characters
// escaped; the rest (valid UTF-8, as ids and addresses are) as is.
std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back('"');
  return out;
}

std::string HeartbeatText(const sync::ClusterStatus& status,
                          const sync::MemberStatus& m) {
  if (!m.heartbeat) return "-";
  const sync::Heartbeat& h = *m.heartbeat;
  std::string out =
      absl::StrFormat("%.1f s ago (sweep %d, %d keys, %d documents",
                      std::max<int64_t>(0, status.now_ms - h.unix_ms) / 1000.0,
                      h.sweep, h.keys, h.documents);
  if (h.has_counters) {
    absl::StrAppendFormat(
        &out, "; epoch %d, %d retracted, %d re-seeds, %d stale", h.epoch,
        h.senders_retracted, h.reseed_refused, h.stale_refused);
  }
  if (h.has_replication) {
    absl::StrAppendFormat(&out, "; %d keys under-replicated, %d failovers",
                          h.under_replicated, h.failovers);
    if (h.last_failover_ms >= 0) {
      absl::StrAppendFormat(&out, " (last %.2f s)",
                            h.last_failover_ms / 1000.0);
    }
  }
  if (h.stopped_failed) out += "; stopped after a failure";
  out.push_back(')');
  return out;
}

std::string MoveJson(const sync::MoveRecord& m) {
  return absl::StrCat(
      "{\"kind\":\"", sync::MoveKindName(m.kind),
      "\",\"node\":", JsonString(m.node), ",\"mode\":\"",
      m.kind == sync::MoveKind::kRemove ? sync::RemoveModeName(m.mode) : "",
      "\",\"phase\":\"", sync::MovePhaseName(m.phase),
      "\",\"fromEpoch\":", m.from_epoch, ",\"toEpoch\":", m.to_epoch,
      ",\"status\":\"", sync::MoveStatusName(m.status),
      "\",\"startedMs\":", m.started_ms, ",\"updatedMs\":", m.updated_ms,
      ",\"finishedMs\":", m.finished_ms, ",\"error\":", JsonString(m.error),
      ",\"keys\":", m.counters.keys, ",\"bytes\":", m.counters.bytes,
      ",\"documents\":", m.counters.documents, "}");
}

}  // namespace

namespace {

// The options add-node and remove-node share.
void AddMoveOptions(
    CLI::App* sub, ClusterCommands* c,
    const char* timeout_help = "Seconds to wait for the move to finish") {
  sub->add_option("--cluster-redis", c->redis_url,
                  "Redis holding the cluster, as the nodes' --cluster-redis "
                  "(or $LATENTD_CLUSTER_REDIS: a url with a password stays "
                  "out of ps)")
      ->envname("LATENTD_CLUSTER_REDIS")
      ->required();
  sub->add_option("--cluster", c->cluster, "Name of the cluster")
      ->capture_default_str();
  sub->add_option("--timeout", c->timeout_seconds, timeout_help)
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_flag("--json", c->json, "Print JSON instead of text");
}

// Waits for the move that wrote `epoch`; its error says what was done.
absl::StatusOr<sync::MoveRecord> AwaitMove(const ClusterCommands& c,
                                           sync::RedisClient* redis,
                                           uint64_t epoch,
                                           const std::string& what) {
  absl::StatusOr<sync::MoveRecord> move = sync::WaitForMove(
      redis, c.cluster, epoch, absl::Seconds(c.timeout_seconds));
  if (!move.ok()) {
    return absl::Status(move.status().code(),
                        absl::StrCat(what, " (epoch ", epoch,
                                     "), but: ", move.status().message()));
  }
  return move;
}

}  // namespace

void AddClusterCommands(CLI::App* app, ClusterCommands* c) {
  c->cluster_cmd = app->add_subcommand(
      "cluster",
      "The cluster's control plane in Redis: ring epoch, member states, "
      "moves; admitting a node that asked to join, removing one; draining "
      "the cluster onto one table and resuming it; aborting a stuck move");
  c->cluster_cmd->require_subcommand(1);
  c->status = c->cluster_cmd->add_subcommand(
      "status",
      "Epoch, members (id, address, state, last heartbeat with the epoch "
      "the node routes by and its failover counters) and the latest move, "
      "read from the cluster's Redis");
  c->status
      ->add_option("--cluster-redis", c->redis_url,
                   "Redis holding the cluster (redis://[:PASSWORD@]host:port "
                   "or unix:/path), as the nodes' --cluster-redis (or "
                   "$LATENTD_CLUSTER_REDIS: a url with a password stays out "
                   "of ps)")
      ->envname("LATENTD_CLUSTER_REDIS")
      ->required();
  c->status->add_option("--cluster", c->cluster, "Name of the cluster")
      ->capture_default_str();
  c->status->add_flag("--json", c->json, "Print JSON instead of text");
  c->add_node = c->cluster_cmd->add_subcommand(
      "add-node",
      "Admit a pending node (started with --cluster-join; `cluster status` "
      "lists it) and wait until it has its keys and has joined");
  c->add_node->add_option("node", c->node, "The pending node's id")->required();
  AddMoveOptions(c->add_node, c);
  c->remove_node = c->cluster_cmd->add_subcommand(
      "remove-node",
      "Remove a ring member: with --handoff (the default) it ships its "
      "documents with their topics to the others, who add them to their "
      "stores (the model keeps them); with --drop its documents' counts "
      "leave the model; either way its keys go to the others and it exits. "
      "With --lost (a node gone for good) the others take its counts out and "
      "rebuild the keys it owned (a node failure detection declared down: "
      "only --lost, and it then never returns); waits for the move");
  c->remove_node->add_option("node", c->node, "The member's id")->required();
  c->remove_node->add_flag("--drop", c->drop,
                           "Take the node's documents out of the model");
  c->remove_node->add_flag(
      "--handoff", c->handoff,
      "Ship the node's documents with their topics to the others (the "
      "default)");
  c->remove_node->add_flag(
      "--lost", c->lost,
      "The node is gone for good (dead, its disk lost): take its documents' "
      "counts out of the model without it");
  AddMoveOptions(c->remove_node, c);
  c->drain = c->cluster_cmd->add_subcommand(
      "drain",
      "Pause sampling on every member, push and pull every change, and wait "
      "until every ring member holds the same table (the same checksum in "
      "its heartbeat): settled. Sampling stays paused until `cluster "
      "resume`");
  AddMoveOptions(c->drain, c,
                 "Seconds to wait for every member to settle (the drain "
                 "stays requested after them)");
  c->resume = c->cluster_cmd->add_subcommand(
      "resume", "End a drain: the members sample again");
  c->resume
      ->add_option("--cluster-redis", c->redis_url,
                   "Redis holding the cluster, as the nodes' --cluster-redis "
                   "(or $LATENTD_CLUSTER_REDIS)")
      ->envname("LATENTD_CLUSTER_REDIS")
      ->required();
  c->resume->add_option("--cluster", c->cluster, "Name of the cluster")
      ->capture_default_str();
  c->abort_move = c->cluster_cmd->add_subcommand(
      "abort-move",
      "Mark the running move failed, with --reason, so that the next change "
      "can start: for a move whose node will not come back (then "
      "`remove-node ID --lost`). Nothing is rolled back: the ring stays at "
      "its epoch, and a node being removed stays leaving");
  c->abort_move
      ->add_option("--cluster-redis", c->redis_url,
                   "Redis holding the cluster, as the nodes' --cluster-redis "
                   "(or $LATENTD_CLUSTER_REDIS)")
      ->envname("LATENTD_CLUSTER_REDIS")
      ->required();
  c->abort_move->add_option("--cluster", c->cluster, "Name of the cluster")
      ->capture_default_str();
  c->abort_move
      ->add_option("--reason", c->reason,
                   "Why (kept in the move record; `cluster status` shows it)")
      ->required();
}

namespace {

absl::Status RunAddNode(const ClusterCommands& c, sync::RedisClient* redis,
                        FILE* out) {
  absl::StatusOr<hashring::RingConfig> ring =
      sync::AdmitNode(redis, c.cluster, c.node);
  if (!ring.ok()) return ring.status();
  absl::StatusOr<sync::MoveRecord> move =
      AwaitMove(c, redis, ring->version, absl::StrCat("admitted ", c.node));
  if (!move.ok()) return move.status();
  const double seconds = (move->finished_ms - move->started_ms) / 1000.0;
  if (c.json) {
    absl::FPrintF(out,
                  "{\"node\":%s,\"fromEpoch\":%d,\"toEpoch\":%d,\"keys\":%d,"
                  "\"bytes\":%d,\"seconds\":%.3f}\n",
                  JsonString(c.node), move->from_epoch, move->to_epoch,
                  move->counters.keys, move->counters.bytes, seconds);
  } else {
    absl::FPrintF(out,
                  "admitted %s: epoch %d -> %d; %d keys (%d bytes) moved to it "
                  "in %.1f s\n",
                  c.node, move->from_epoch, move->to_epoch, move->counters.keys,
                  move->counters.bytes, seconds);
  }
  return absl::OkStatus();
}

absl::Status RunRemoveNode(const ClusterCommands& c, sync::RedisClient* redis,
                           FILE* out) {
  if (c.handoff + c.drop + c.lost > 1) {
    return absl::InvalidArgumentError(
        "give one of --drop, --lost and --handoff");
  }
  const sync::RemoveMode mode = c.lost   ? sync::RemoveMode::kLost
                                : c.drop ? sync::RemoveMode::kDrop
                                         : sync::RemoveMode::kHandoff;
  absl::StatusOr<hashring::RingConfig> ring =
      sync::RemoveNode(redis, c.cluster, c.node, mode);
  if (!ring.ok()) return ring.status();
  if (c.lost) {
    // Nobody drains a lost node: end the drain now (the next epoch's ring
    // lacks it); the members end the move once they follow it. (A node
    // already down is out of the ring: this ends its removal; a member may
    // have ended it first, which the wait below tells.)
    absl::StatusOr<sync::MoveRecord> next =
        sync::FinishMove(redis, c.cluster, ring->version, {});
    if (!next.ok() && !absl::IsFailedPrecondition(next.status())) {
      return next.status();
    }
  }
  absl::StatusOr<sync::MoveRecord> move = AwaitMove(
      c, redis, ring->version, absl::StrCat("started removing ", c.node));
  if (!move.ok()) return move.status();
  const double seconds = (move->finished_ms - move->started_ms) / 1000.0;
  if (c.json) {
    absl::FPrintF(out,
                  "{\"node\":%s,\"fromEpoch\":%d,\"toEpoch\":%d,\"keys\":%d,"
                  "\"documents\":%d,\"seconds\":%.3f}\n",
                  JsonString(c.node), ring->version - 1, move->to_epoch,
                  move->counters.keys, move->counters.documents, seconds);
  } else {
    if (c.lost) {
      absl::FPrintF(out,
                    "removed %s (lost): epoch %d -> %d; its counts taken out "
                    "of the model, the keys it owned rebuilt, in %.1f s\n",
                    c.node, ring->version - 1, move->to_epoch, seconds);
    } else if (c.drop) {
      absl::FPrintF(out,
                    "removed %s (drop): epoch %d -> %d; %d documents taken "
                    "out of the model, %d keys handed off, in %.1f s\n",
                    c.node, ring->version - 1, move->to_epoch,
                    move->counters.documents, move->counters.keys, seconds);
    } else {
      absl::FPrintF(out,
                    "removed %s (handoff): epoch %d -> %d; %d documents "
                    "handed to the others with their topics, %d keys handed "
                    "off, in %.1f s\n",
                    c.node, ring->version - 1, move->to_epoch,
                    move->counters.documents, move->counters.keys, seconds);
    }
  }
  return absl::OkStatus();
}

// Requests a drain and waits until the cluster is settled.
absl::Status RunDrain(const ClusterCommands& c, sync::RedisClient* redis,
                      FILE* out) {
  LATENTD_RETURN_IF_ERROR(sync::SetDrain(redis, c.cluster, true));
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + absl::Seconds(c.timeout_seconds);
  absl::Time next_progress = start + absl::Seconds(5);
  for (;;) {
    LATENTD_ASSIGN_OR_RETURN(sync::ClusterStatus st,
                             sync::ReadClusterStatus(redis, c.cluster));
    const sync::Settlement s = sync::ReadSettlement(st);
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    if (s.settled) {
      size_t members = 0;
      for (const sync::MemberStatus& m : st.members) members += m.in_ring;
      if (c.json) {
        absl::FPrintF(out,
                      "{\"settled\":true,\"epoch\":%d,\"members\":%d,"
                      "\"checksum\":\"%x\",\"seconds\":%.3f}\n",
                      st.epoch, members, s.checksum, seconds);
      } else {
        absl::FPrintF(out,
                      "settled: the %d members of epoch %d hold the same "
                      "table (checksum %x) after %.1f s; sampling stays "
                      "paused until `latentctl cluster resume`\n",
                      members, st.epoch, s.checksum, seconds);
      }
      return absl::OkStatus();
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "not settled after ", c.timeout_seconds, " s (",
          absl::StrJoin(s.waiting, "; "),
          "); the drain stays requested: run drain again to wait more, or "
          "resume"));
    }
    if (now >= next_progress) {
      next_progress = now + absl::Seconds(5);
      absl::FPrintF(stderr, "draining for %.0f s: %s\n", seconds,
                    absl::StrJoin(s.waiting, "; "));
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
}

absl::Status RunAbortMove(const ClusterCommands& c, sync::RedisClient* redis,
                          FILE* out) {
  LATENTD_ASSIGN_OR_RETURN(sync::ClusterStatus st,
                           sync::ReadClusterStatus(redis, c.cluster));
  if (!st.move.has_value() || st.move->status != sync::MoveStatus::kRunning) {
    return absl::FailedPreconditionError(
        absl::StrCat("no move of cluster ", c.cluster, " is running"));
  }
  const sync::MoveRecord& m = *st.move;
  LATENTD_RETURN_IF_ERROR(
      sync::FailMove(redis, c.cluster, m.to_epoch, c.reason));
  absl::FPrintF(out,
                "the %s of %s (epoch %d -> %d) is marked failed: %s; the ring "
                "stays at epoch %d\n",
                sync::MoveKindName(m.kind), m.node, m.from_epoch, m.to_epoch,
                c.reason, m.to_epoch);
  return absl::OkStatus();
}

}  // namespace

std::optional<absl::Status> RunClusterCommands(const ClusterCommands& c,
                                               FILE* out) {
  const bool status = c.status != nullptr && c.status->parsed();
  const bool add = c.add_node != nullptr && c.add_node->parsed();
  const bool remove = c.remove_node != nullptr && c.remove_node->parsed();
  const bool drain = c.drain != nullptr && c.drain->parsed();
  const bool resume = c.resume != nullptr && c.resume->parsed();
  const bool abort = c.abort_move != nullptr && c.abort_move->parsed();
  if (!status && !add && !remove && !drain && !resume && !abort) {
    return std::nullopt;
  }
  // hiredis writes with write(2): a Redis that goes away mid-command must
  // give an error, not kill latentctl with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  absl::StatusOr<std::unique_ptr<sync::RedisClient>> redis =
      sync::RedisClient::Connect(c.redis_url);
  if (!redis.ok()) return redis.status();
  if (add) return RunAddNode(c, redis->get(), out);
  if (remove) return RunRemoveNode(c, redis->get(), out);
  if (drain) return RunDrain(c, redis->get(), out);
  if (abort) return RunAbortMove(c, redis->get(), out);
  if (resume) {
    absl::Status s = sync::SetDrain(redis->get(), c.cluster, false);
    if (s.ok()) std::fputs("drain ended: the members sample again\n", out);
    return s;
  }
  absl::StatusOr<sync::ClusterStatus> read =
      sync::ReadClusterStatus(redis->get(), c.cluster);
  if (!read.ok()) return read.status();
  const std::string text =
      c.json ? FormatClusterStatusJson(*read) : FormatClusterStatusText(*read);
  std::fputs(text.c_str(), out);
  return absl::OkStatus();
}

ClusterLogLikelihood SumLogLikelihood(const sync::ClusterStatus& s) {
  ClusterLogLikelihood out;
  double ll = 0;
  bool any = false;
  for (const sync::MemberStatus& m : s.members) {
    if (!m.in_ring) continue;
    if (!m.heartbeat) {
      out.missing.push_back(absl::StrCat(m.id, ": no heartbeat"));
      continue;
    }
    if (!m.heartbeat->log_likelihood) {
      out.missing.push_back(
          absl::StrCat(m.id, ": no evaluated sweep in its heartbeat yet"));
      continue;
    }
    const sync::LogLikelihoodPart& p = *m.heartbeat->log_likelihood;
    ll += p.doc + p.owned_word;
    out.tokens += p.tokens;
    out.first_sweep = any ? std::min(out.first_sweep, p.sweep) : p.sweep;
    out.last_sweep = std::max(out.last_sweep, p.sweep);
    any = true;
  }
  if (any && out.missing.empty() && out.tokens > 0) {
    out.per_token = ll / static_cast<double>(out.tokens);
  }
  return out;
}

namespace {

// The copies of each key (owner included) the ring members' heartbeats
// report (their --replicas): the fewest and the most; {0, 0} if none
// reports it (older nodes, or no heartbeat yet).
std::pair<uint32_t, uint32_t> KeyCopies(const sync::ClusterStatus& s) {
  uint32_t lo = 0, hi = 0;
  for (const sync::MemberStatus& m : s.members) {
    if (!m.in_ring || !m.heartbeat || m.heartbeat->key_copies == 0) continue;
    const uint32_t c = m.heartbeat->key_copies;
    lo = lo == 0 ? c : std::min(lo, c);
    hi = std::max(hi, c);
  }
  return {lo, hi};
}

}  // namespace

std::string FormatClusterStatusText(const sync::ClusterStatus& s) {
  std::string out = absl::StrCat("cluster: ", s.cluster, "\n");
  if (s.ring) {
    absl::StrAppend(&out, "epoch: ", s.epoch, "\n",
                    "ring: ", s.ring->members.size(), " members, V ",
                    s.ring->virtual_points_per_weight);
    const auto [lo, hi] = KeyCopies(s);
    if (lo != 0) {
      absl::StrAppend(&out, ", ", lo, lo == 1 ? " copy" : " copies",
                      " of each key");
      if (hi != lo) absl::StrAppend(&out, " (", hi, " on some members)");
    }
    out += "\n";
  } else {
    absl::StrAppend(&out, "epoch: none (no ring written yet)\n");
  }
  size_t id_width = 2, address_width = 7;
  for (const auto& m : s.members) {
    id_width = std::max(id_width, m.id.size());
    address_width = std::max(address_width, m.address.size());
  }
  absl::StrAppend(&out, "members: ", s.members.size(), "\n");
  if (!s.members.empty()) {
    absl::StrAppendFormat(&out, "  %-*s  %-*s  %-7s  %-4s  %s\n", id_width,
                          "ID", address_width, "ADDRESS", "STATE", "RING",
                          "HEARTBEAT");
  }
  for (const auto& m : s.members) {
    absl::StrAppendFormat(
        &out, "  %-*s  %-*s  %-7s  %-4s  %s\n", id_width, m.id, address_width,
        m.address.empty() ? "-" : m.address, sync::MemberStateName(m.state),
        m.in_ring ? "yes" : "no", HeartbeatText(s, m));
  }
  absl::StrAppend(
      &out, "move: ", s.move ? sync::DescribeMove(*s.move, s.now_ms) : "none",
      "\n");
  if (s.drain_requested) {
    const sync::Settlement settled = sync::ReadSettlement(s);
    absl::StrAppend(
        &out, "drain: requested; ",
        settled.settled
            ? absl::StrCat("settled (checksum ", absl::Hex(settled.checksum),
                           ")")
            : absl::StrCat("not settled (",
                           absl::StrJoin(settled.waiting, "; "), ")"),
        "\n");
  } else {
    absl::StrAppend(&out, "drain: none (sampling)\n");
  }
  const ClusterLogLikelihood ll = SumLogLikelihood(s);
  if (ll.per_token) {
    absl::StrAppendFormat(&out,
                          "cluster log-likelihood per token: %.4f (sweeps "
                          "%d-%d, %d tokens)\n",
                          *ll.per_token, ll.first_sweep, ll.last_sweep,
                          ll.tokens);
  } else {
    absl::StrAppend(&out, "cluster log-likelihood per token: none (",
                    ll.missing.empty() ? "no ring members"
                                       : absl::StrJoin(ll.missing, "; "),
                    ")\n");
  }
  return out;
}

std::string FormatClusterStatusJson(const sync::ClusterStatus& s) {
  std::string out =
      absl::StrCat("{\"cluster\":", JsonString(s.cluster),
                   ",\"epoch\":", s.epoch, ",\"redisTimeMs\":", s.now_ms);
  if (s.ring) {
    absl::StrAppend(&out, ",\"virtualPointsPerWeight\":",
                    s.ring->virtual_points_per_weight);
    if (const auto [lo, hi] = KeyCopies(s); lo != 0) {
      absl::StrAppend(&out, ",\"keyCopies\":", lo);
    }
  }
  absl::StrAppend(&out, ",\"members\":[");
  for (size_t i = 0; i < s.members.size(); ++i) {
    const sync::MemberStatus& m = s.members[i];
    absl::StrAppend(&out, i ? "," : "", "{\"id\":", JsonString(m.id),
                    ",\"address\":", JsonString(m.address), ",\"state\":\"",
                    sync::MemberStateName(m.state),
                    "\",\"inRing\":", m.in_ring ? "true" : "false",
                    ",\"weight\":", m.weight);
    if (m.heartbeat) {
      const sync::Heartbeat& h = *m.heartbeat;
      absl::StrAppend(&out, ",\"heartbeat\":{\"unixMs\":", h.unix_ms,
                      ",\"ageMs\":", std::max<int64_t>(0, s.now_ms - h.unix_ms),
                      ",\"sweep\":", h.sweep, ",\"keys\":", h.keys,
                      ",\"documents\":", h.documents);
      if (h.has_counters) {
        absl::StrAppend(&out, ",\"epoch\":", h.epoch,
                        ",\"sendersRetracted\":", h.senders_retracted,
                        ",\"reseedRefused\":", h.reseed_refused,
                        ",\"staleRefused\":", h.stale_refused);
      }
      if (h.has_replication) {
        absl::StrAppend(&out, ",\"keysUnderReplicated\":", h.under_replicated,
                        ",\"failovers\":", h.failovers,
                        ",\"lastFailoverMs\":", h.last_failover_ms);
      }
      if (const auto& p = h.log_likelihood) {
        absl::StrAppendFormat(&out,
                              ",\"logLikelihoodPart\":{\"sweep\":%d,"
                              "\"tokens\":%d,\"docLogLikelihood\":%.17g,"
                              "\"ownedWordLogLikelihood\":%.17g}",
                              p->sweep, p->tokens, p->doc, p->owned_word);
      }
      if (h.key_copies != 0) {
        absl::StrAppend(&out, ",\"keyCopies\":", h.key_copies);
      }
      absl::StrAppend(&out, ",\"stoppedAfterFailure\":",
                      h.stopped_failed ? "true" : "false", "}");
    }
    absl::StrAppend(&out, "}");
  }
  absl::StrAppend(&out, "],\"move\":", s.move ? MoveJson(*s.move) : "null");
  const sync::Settlement settled = sync::ReadSettlement(s);
  absl::StrAppend(
      &out, ",\"drain\":{\"requested\":", s.drain_requested ? "true" : "false",
      ",\"settled\":", s.drain_requested && settled.settled ? "true" : "false",
      settled.settled
          ? absl::StrCat(",\"checksum\":\"", absl::Hex(settled.checksum), "\"")
          : std::string(),
      "}");
  const ClusterLogLikelihood ll = SumLogLikelihood(s);
  absl::StrAppend(&out, ",\"logLikelihood\":{\"perToken\":",
                  ll.per_token ? absl::StrFormat("%.17g", *ll.per_token)
                               : std::string("null"),
                  ",\"firstSweep\":", ll.first_sweep,
                  ",\"lastSweep\":", ll.last_sweep, ",\"tokens\":", ll.tokens,
                  ",\"missing\":[");
  for (size_t i = 0; i < ll.missing.size(); ++i) {
    absl::StrAppend(&out, i ? "," : "", JsonString(ll.missing[i]));
  }
  absl::StrAppend(&out, "]}}\n");
  return out;
}

}  // namespace latentd
