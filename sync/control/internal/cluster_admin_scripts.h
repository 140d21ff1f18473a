// The Lua scripts behind sync/control/cluster_admin.h, each run by one EVAL
// after kPrelude (its helpers). Private to cluster_admin.cc.
//
// KEYS, in this order for every script: ring, states, pending, move, epochs,
// members, heartbeats; then, for the scripts that say so, the node's alive
// key (latentd:NAME:alive:ID, a string with a TTL; SET replaces whatever it
// held). A script first checks every key's type and what it compares, and
// returns {tag, ...} without writing if a check fails; its writes come last
// and cannot fail, so a change is all or nothing.
#ifndef LATENTD_SYNC_CONTROL_INTERNAL_CLUSTER_ADMIN_SCRIPTS_H_
#define LATENTD_SYNC_CONTROL_INTERNAL_CLUSTER_ADMIN_SCRIPTS_H_

namespace latentd::sync::internal {

inline constexpr char kPrelude[] = R"lua(
local WANT = {'string', 'hash', 'hash', 'hash', 'stream', 'hash', 'hash'}
local function wrong_type()
  for i = 1, #WANT do
    local t = redis.call('TYPE', KEYS[i])['ok']
    if t ~= 'none' and t ~= WANT[i] then
      return {'wrongtype', KEYS[i], t, WANT[i]}
    end
  end
  return nil
end
local function now_ms()
  local t = redis.call('TIME')
  return t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000))
end
local function ring_changed(expected)
  local cur = redis.call('GET', KEYS[1]) or ''
  if cur ~= expected then return {'changed', cur} end
  return nil
end
local function running_move()
  if redis.call('HGET', KEYS[4], 'status') == 'running' then
    return {'move', redis.call('HGETALL', KEYS[4]), now_ms()}
  end
  return nil
end
local function state_is_not(id, want)
  local state = redis.call('HGET', KEYS[2], id)
  if state ~= want then return {'not_state', state or 'none'} end
  return nil
end
local function check_move(to)
  if redis.call('HGET', KEYS[4], 'status') ~= 'running' or
     redis.call('HGET', KEYS[4], 'to_epoch') ~= to then
    return {'no_move', redis.call('HGETALL', KEYS[4]), now_ms()}
  end
  return nil
end
local function history(epoch, change, node, mode, now)
  redis.call('XADD', KEYS[5], 'MAXLEN', '~', '10000', '*', 'epoch', epoch,
             'change', change, 'node', node, 'mode', mode, 'time_ms', now)
end
local function start_move(kind, node, mode, phase, from, to, now)
  redis.call('DEL', KEYS[4])
  redis.call('HSET', KEYS[4], 'kind', kind, 'node', node, 'mode', mode,
             'phase', phase, 'from_epoch', from, 'to_epoch', to,
             'started_ms', now, 'updated_ms', now, 'finished_ms', '0',
             'status', 'running', 'error', '', 'keys', '0', 'bytes', '0',
             'documents', '0')
end
-- The checks of every ring change: keys of the right types, the ring still
-- ARGV[1], no move running. Nil when they pass, else why not.
local function ring_change_refused()
  return wrong_type() or ring_changed(ARGV[1]) or running_move()
end
-- Commits a ring change, ARGV: expected ring, new ring, from epoch, to
-- epoch, node: the new ring, a running move of `kind` and the history
-- entry `change`, with the move's mode and first phase.
local function begin_epoch(kind, mode, phase, change, now)
  redis.call('SET', KEYS[1], ARGV[2])
  start_move(kind, ARGV[5], mode, phase, ARGV[3], ARGV[4], now)
  history(ARGV[4], change, ARGV[5], mode, now)
end
-- Adds ARGV[i], ARGV[i+1], ARGV[i+2] to the move's counters, or writes
-- nothing and returns why not.
local function add_counters(i)
  local names = {'keys', 'bytes', 'documents'}
  for j = 1, 3 do
    local cur = redis.call('HGET', KEYS[4], names[j]) or '0'
    if not string.match(cur, '^%d+$') then
      return {'corrupt', KEYS[4], names[j]}
    end
    if tonumber(cur) + tonumber(ARGV[i + j - 1]) > 9.0e18 then
      return {'overflow', names[j]}
    end
  end
  for j = 1, 3 do redis.call('HINCRBY', KEYS[4], names[j], ARGV[i + j - 1]) end
  return nil
end
)lua";

// Returns {'ok', now_ms, has_ring, ring, states, pending, move, heartbeats,
// members}, every hash flattened.
inline constexpr char kReadScript[] = R"lua(
local err = wrong_type()
if err then return err end
local ring = redis.call('GET', KEYS[1])
return {'ok', now_ms(), ring and 1 or 0, ring or '',
        redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[3]),
        redis.call('HGETALL', KEYS[4]), redis.call('HGETALL', KEYS[7]),
        redis.call('HGETALL', KEYS[6])}
)lua";

// ARGV: expected ring, id, address.
inline constexpr char kRegisterScript[] = R"lua(
local err = wrong_type() or ring_changed(ARGV[1])
if err then return err end
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
return {'ok'}
)lua";

// ARGV: expected ring, new ring, from epoch, to epoch, id, address.
inline constexpr char kAdmitScript[] = R"lua(
local err = ring_change_refused()
if err then return err end
if redis.call('HGET', KEYS[3], ARGV[5]) ~= ARGV[6] then
  return {'registration_changed'}
end
redis.call('HDEL', KEYS[3], ARGV[5])
redis.call('HSET', KEYS[6], ARGV[5], ARGV[6])
redis.call('HSET', KEYS[2], ARGV[5], 'active')
begin_epoch('add', '', 'keys', 'add', now_ms())
return {'ok'}
)lua";

// ARGV: expected ring, new ring, from epoch, to epoch, id, mode.
inline constexpr char kLeaveScript[] = R"lua(
local err = ring_change_refused()
if err then return err end
redis.call('HSET', KEYS[2], ARGV[5], 'leaving')
begin_epoch('remove', ARGV[6], 'drain', 'leave', now_ms())
return {'ok'}
)lua";

// ARGV: to epoch, keys, bytes, documents.
inline constexpr char kProgressScript[] = R"lua(
local err = wrong_type() or check_move(ARGV[1]) or add_counters(2)
if err then return err end
redis.call('HSET', KEYS[4], 'updated_ms', now_ms())
return {'ok'}
)lua";

// ARGV: expected ring, to epoch, phase, node, action (done | done_remove |
// advance), new ring and its epoch (advance), keys, bytes, documents, the
// node's address (advance: the members hash keeps it once out of the ring).
inline constexpr char kFinishScript[] = R"lua(
local err = wrong_type() or ring_changed(ARGV[1]) or check_move(ARGV[2])
if err then return err end
if redis.call('HGET', KEYS[4], 'phase') ~= ARGV[3] or
   redis.call('HGET', KEYS[4], 'node') ~= ARGV[4] then
  return {'no_move', redis.call('HGETALL', KEYS[4]), now_ms()}
end
err = add_counters(8)
if err then return err end
local now = now_ms()
local mode = redis.call('HGET', KEYS[4], 'mode') or ''
redis.call('HSET', KEYS[4], 'updated_ms', now)
if ARGV[5] == 'advance' then
  redis.call('SET', KEYS[1], ARGV[6])
  redis.call('HSET', KEYS[6], ARGV[4], ARGV[11])
  redis.call('HSET', KEYS[4], 'phase', 'keys', 'to_epoch', ARGV[7])
  history(ARGV[7], 'remove', ARGV[4], mode, now)
else
  redis.call('HSET', KEYS[4], 'status', 'done', 'finished_ms', now)
  if ARGV[5] == 'done_remove' then
    redis.call('HDEL', KEYS[2], ARGV[4])
    redis.call('HDEL', KEYS[6], ARGV[4])
    redis.call('HDEL', KEYS[7], ARGV[4])
  end
  history(ARGV[2], 'done', ARGV[4], mode, now)
end
return {'ok', redis.call('HGETALL', KEYS[4])}
)lua";

// ARGV: to epoch, reason. KEYS[8]: the handoffs hash (a committed
// hand-off is never marked failed: it only completes forward; an
// uncommitted one is recorded rolled back).
inline constexpr char kFailScript[] = R"lua(
local err = wrong_type() or check_move(ARGV[1])
if err then return err end
local node = redis.call('HGET', KEYS[4], 'node') or ''
local attempt = node .. '/' .. ARGV[1]
if redis.call('HGET', KEYS[8], attempt) == 'committed' then
  return {'committed'}
end
local m = redis.call('HMGET', KEYS[4], 'kind', 'mode', 'phase')
if m[1] == 'remove' and m[2] == 'handoff' and m[3] == 'drain' then
  redis.call('HSET', KEYS[8], attempt, 'rolled_back')
end
local now = now_ms()
redis.call('HSET', KEYS[4], 'status', 'failed', 'error', ARGV[2],
           'finished_ms', now, 'updated_ms', now)
history(ARGV[1], 'failed', redis.call('HGET', KEYS[4], 'node') or '',
        redis.call('HGET', KEYS[4], 'mode') or '', now)
return {'ok'}
)lua";

// ARGV: id, the heartbeat's fields after unix_ms (sweep ... last failover
// ms, then the log-likelihood part's 4 if any), last the alive key's TTL
// in ms (0: not written). KEYS[8]: the node's alive key.
inline constexpr char kHeartbeatScript[] = R"lua(
local err = wrong_type()
if err then return err end
local now = now_ms()
redis.call('HSET', KEYS[7], ARGV[1],
           now .. ' ' .. table.concat(ARGV, ' ', 2, #ARGV - 1))
if tonumber(ARGV[#ARGV]) > 0 then
  redis.call('SET', KEYS[8], now, 'PX', ARGV[#ARGV])
end
return {'ok'}
)lua";

// Failover. ARGV: expected ring, new ring (without the node), from epoch,
// to epoch, id, failure timeout in ms, its address (the members hash keeps
// it once out of the ring). KEYS[8]: the node's alive key. The
// node must be active, its alive key expired and its last heartbeat older
// than the timeout (by this Redis's clock).
inline constexpr char kDownScript[] = R"lua(
local err = ring_change_refused()
if err then return err end
local state = redis.call('HGET', KEYS[2], ARGV[5])
if state and state ~= 'active' then return {'not_state', state} end
local now = now_ms()
local beat = redis.call('HGET', KEYS[7], ARGV[5])
local ms = beat and tonumber(string.match(beat, '^(%d+)'))
if redis.call('EXISTS', KEYS[8]) == 1 or not ms or
   tonumber(now) - ms < tonumber(ARGV[6]) then
  return {'alive', beat or ''}
end
redis.call('HSET', KEYS[2], ARGV[5], 'down')
redis.call('HSET', KEYS[6], ARGV[5], ARGV[7])
begin_epoch('failover', '', 'keys', 'down', now)
return {'ok', tostring(tonumber(now) - ms)}
)lua";

// A down node back. ARGV: expected ring, new ring (with the node), from
// epoch, to epoch, id, address.
inline constexpr char kReturnScript[] = R"lua(
local err = ring_change_refused() or state_is_not(ARGV[5], 'down')
if err then return err end
redis.call('HSET', KEYS[2], ARGV[5], 'active')
redis.call('HSET', KEYS[6], ARGV[5], ARGV[6])
begin_epoch('add', '', 'keys', 'return', now_ms())
return {'ok'}
)lua";

// Removing a down node for good (remove-node --lost): an epoch with the
// same ring and a move {remove, lost, phase keys}; FinishMove then deletes
// the node's entries. ARGV: expected ring, new ring, from epoch, to epoch,
// id.
inline constexpr char kForgetDownScript[] = R"lua(
local err = ring_change_refused() or state_is_not(ARGV[5], 'down')
if err then return err end
begin_epoch('remove', 'lost', 'keys', 'remove', now_ms())
return {'ok'}
)lua";

// The two-phase hand-off (cluster_admin_handoff.cc). KEYS[8]: the
// handoffs hash. this_handoff(node, to) checks that the running move is
// `node`'s remove --handoff in its drain phase to epoch `to`.
inline constexpr char kHandoffPrelude[] = R"lua(
local function this_handoff(node, to)
  local err = check_move(to)
  if err then return err end
  local m = redis.call('HMGET', KEYS[4], 'kind', 'node', 'mode', 'phase')
  if m[1] ~= 'remove' or m[2] ~= node or m[3] ~= 'handoff' or
     m[4] ~= 'drain' then
    return {'no_move', redis.call('HGETALL', KEYS[4]), now_ms()}
  end
  return nil
end
)lua";

// ARGV: node, to epoch.
inline constexpr char kCommitHandoffScript[] = R"lua(
local err = wrong_type() or this_handoff(ARGV[1], ARGV[2])
if err then return err end
local field = ARGV[1] .. '/' .. ARGV[2]
if redis.call('HGET', KEYS[8], field) == 'rolled_back' then
  return {'rolled_back'}
end
redis.call('HSET', KEYS[8], field, 'committed')
redis.call('HSET', KEYS[4], 'updated_ms', now_ms())
return {'ok'}
)lua";

// ARGV: expected ring, new ring (the same members, the next epoch), from
// epoch (the drain epoch), to epoch, node, reason.
inline constexpr char kRollBackHandoffScript[] = R"lua(
local err = wrong_type() or ring_changed(ARGV[1]) or
            this_handoff(ARGV[5], ARGV[3])
if err then return err end
local field = ARGV[5] .. '/' .. ARGV[3]
if redis.call('HGET', KEYS[8], field) == 'committed' then
  return {'committed'}
end
local now = now_ms()
redis.call('HSET', KEYS[8], field, 'rolled_back')
redis.call('SET', KEYS[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[5], 'active')
redis.call('HSET', KEYS[4], 'status', 'rolled_back', 'error', ARGV[6],
           'to_epoch', ARGV[4], 'finished_ms', now, 'updated_ms', now)
history(ARGV[4], 'rollback', ARGV[5], 'handoff', now)
return {'ok'}
)lua";

// ARGV: node, epoch. Replies {'ok', outcome}: committed | rolled_back |
// undecided (the move is still running) | ended (no outcome recorded and
// no such move runs: Redis lost it, or the attempt never was).
inline constexpr char kHandoffOutcomeScript[] = R"lua(
local err = wrong_type()
if err then return err end
local got = redis.call('HGET', KEYS[8], ARGV[1] .. '/' .. ARGV[2])
if got then return {'ok', got} end
if this_handoff(ARGV[1], ARGV[2]) == nil then return {'ok', 'undecided'} end
return {'ok', 'ended'}
)lua";

}  // namespace latentd::sync::internal

#endif  // LATENTD_SYNC_CONTROL_INTERNAL_CLUSTER_ADMIN_SCRIPTS_H_
