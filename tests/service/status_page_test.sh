#!/usr/bin/env bash
# The status page (GET /) in a real browser: Debian's headless Chromium loads
# it from latentd processes this test starts (127.0.0.1, ports chosen by the
# daemon, so runs cannot collide), and the test checks the DOM after the
# page's scripts ran (--dump-dom with a virtual time budget) and saves
# screenshots. The browser may resolve no name but 127.0.0.1, so a page that
# fetched anything from elsewhere would fail to render.
#
#   single   1. a node trained 20 sweeps (log-likelihood every 2): every
#               topic's row with the words ListTopics gives, the sweep, a
#               log-likelihood plot of 10 points, the topic coherence (per
#               topic and the means Status gives), the held-out perplexity
#               (--holdout) Status gives, no cluster section;
#            2. the views people explore, each against the API (the state
#               in the URL fragment): the topic map (one circle per topic,
#               coordinates the MDS of the topics' Jensen-Shannon
#               divergences recomputed from ExportModel by
#               topic_map_check.py, radii by tokens), axis titles on every
#               plot, the table sorted by weight and by UMass coherence as
#               ListTopics orders them, a word search keeping exactly the
#               topics with a top word starting with it, a topic's view
#               (GetTopic's words, TopicDocuments' documents and weights),
#               a user's profile (GetUserProfile, after an ingest) and an
#               unknown user's error;
#            3. the same node restarted with api-tokens and open-health off:
#               the page is served, asks for a token without one or with a
#               wrong one, and renders with a read token from /#token=...
#   cluster  two nodes over a private redis-server (Unix socket): the member
#            table lists both (this node, reachable), the members as Redis
#            records them equal `latentctl cluster status`'s (id, state,
#            in ring); once the other is killed, it is shown unreachable.
#   graph    1. a graph-only node (--graph-edges: the test graph,
#               tests/testdata; no corpus) trained 6 epochs with a
#               held-out split: the page renders (no ListTopics call),
#               says the node serves a graph only, hides the LDA sections,
#               and shows the graph's epoch, vertices, edges, dim and
#               held-out AUC as Status gives them and an objective plot of
#               6 epochs, with axis titles;
#            2. two graph-only nodes of a graph cluster (dual, bsp) over a
#               private redis-server: both members listed, the consensus
#               and the copies' distance to it as Status gives them.
#
# Artifacts (kept after the run): OUTDIR/<case>.png and OUTDIR/<case>.html
# (the DOM), OUTDIR being the build directory's test-output/status_page.
# Exit 77 (ctest: skipped) only if no chromium is installed.
# Usage: status_page_test.sh single|cluster|graph LATENTD LATENTCTL OUTDIR
set -euo pipefail
MODE=$1
LATENTD=$2
CTL=$3
OUT=$4
CORPUS=${LATENTD_TEST_CORPUS:?the test corpus directory (tests/testdata)}
GRAPH=$CORPUS/graph.txt

CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ]; then
  echo "SKIP: no chromium on PATH (ops/install-deps.sh installs Debian's chromium)"
  exit 77
fi

mkdir -p "$OUT"
# shellcheck source=tests/service/daemon_lib.sh
source "$(dirname "$0")/daemon_lib.sh"

# start_daemon NAME ARGS...: starts latentd with data dir DIR/NAME and its
# log in DIR/NAME.log (PID is its pid).
start_daemon() {
  local name=$1
  shift
  start_latentd "$DIR/$name.log" --data-dir "$DIR/$name" \
    --http 127.0.0.1:0 --listen 127.0.0.1:0 "$@"
}
# wait_idle TCP: waits (120 s at most) until the node samples no more.
idle() { "$CTL" status --addr "$1" 2>/dev/null | grep -q '^training: no$'; }
wait_idle() { wait_until 120 "node at $1 still training" idle "$1"; }

# browse URL CASE [HEIGHT]: renders URL in headless Chromium; the DOM after
# the scripts ran goes to OUT/CASE.html, a screenshot (1280 x HEIGHT,
# default 1400) to OUT/CASE.png, from one Chromium launch. The page polls every 3 s: 7 s of virtual
# time see it draw at least twice. Bounded by `timeout` in real time.
browse() {
  local url=$1 case=$2 height=${3:-1400}
  local flags=(--headless --no-sandbox --disable-gpu --no-first-run
    --user-data-dir="$DIR/chrome" --hide-scrollbars
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
    --virtual-time-budget=7000)
  rm -f "$OUT/$case.html" "$OUT/$case.png"
  # One launch does both: the DOM to stdout, the screenshot to its file.
  timeout 90 "$CHROME" "${flags[@]}" --window-size=1280,"$height" \
    --screenshot="$OUT/$case.png" --dump-dom "$url" >"$OUT/$case.html" \
    2>"$DIR/chrome.err" || fail "$case: chromium exited $?: $(tail -3 "$DIR/chrome.err")"
  [ -s "$OUT/$case.png" ] || fail "$case: no screenshot: $(tail -3 "$DIR/chrome.err")"
  # A PNG (its signature) of a real page, not an empty one.
  [ "$(head -c 8 "$OUT/$case.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
    fail "$case: $OUT/$case.png is not a PNG"
  [ "$(stat -c %s "$OUT/$case.png")" -gt 20000 ] || fail "$case: screenshot under 20 kB"
  DOM=$(tr "\n" " " <"$OUT/$case.html")  # one line, for grep
}
# The body's data-state: ok, needs-token or error (status.js sets it).
page_state() { grep -oP '<body data-state="\K[^"]+' <<<"$DOM" || echo "none"; }
# The element with id $1 as one string (from its opening tag to the first
# closing tag of its kind).
element() { grep -oP "<$2 id=\"$1\"[^>]*>.*?</$2>" <<<"$DOM" || true; }

single() {
  # 1. A trained node, no tokens.
  start_daemon node --corpus "$CORPUS/corpus.ldac" --format ldac \
    --corpus-vocab "$CORPUS/vocab.txt" --topics 10 --max-sweeps 20 \
    --eval-every 2 --holdout 0.05 --heldout-every 5
  wait_ports "$DIR/node"
  wait_idle "$TCP"
  # Coherence is scored once sampling stops (docs/operations.md).
  scored() {
    "$CTL" status --addr "$TCP" --json >"$DIR/status.json" &&
      grep -q '"meanCoherenceUmass":' "$DIR/status.json"
  }
  wait_until 60 "no coherence" scored
  browse "http://$HTTP/" single
  [ "$(page_state)" = ok ] || fail "single: page state $(page_state): $(element error div)"
  [ "$(grep -oP '<div class="card" data-key="sweep"><dt>sweep</dt><dd>\K[0-9]+' <<<"$DOM")" = 20 ] ||
    fail "single: no sweep card saying 20"
  # Every topic's row holds the words ListTopics gives, in its order.
  "$CTL" topics --addr "$TCP" --top 10 >"$DIR/topics.txt" || fail "latentctl topics"
  [ "$(grep -o '<tr class="topic" data-topic=' <<<"$DOM" | wc -l)" = 10 ] ||
    fail "single: not 10 topic rows"
  for k in $(seq 0 9); do
    want=$(awk -v k="$k" '/^topic /{t=($2==k)} t && /^  /{printf "%s ", $1}' "$DIR/topics.txt")
    row=$(grep -oP "<tr class=\"topic\" data-topic=\"$k\">.*?</tr>" <<<"$DOM" || true)
    got=$(grep -oP '<span class="w">\K[^<]+' <<<"$row" | tr '\n' ' ')
    [ -n "$want" ] && [ "$got" = "$want" ] || fail "single: topic $k shows '$got', ListTopics '$want'"
  done
  # The log-likelihood plot: sweeps 2, 4, ..., 20, each a vertex of the line.
  plot=$(element ll-plot svg)
  grep -q 'data-points="10"' <<<"$plot" || fail "single: ll-plot: $plot"
  line=$(grep -oP '<polyline class="line" points="\K[^"]+' <<<"$plot" || true)
  [ "$(wc -w <<<"$line")" = 10 ] || fail "single: ll-plot line has not 10 points: $line"
  grep -q '>sweep 20<' <<<"$plot" || fail "single: ll-plot axis does not end at sweep 20"
  grep -q 'data-points="10"' <<<"$(element tps-plot svg)" || fail "single: tokens/s plot"
  grep -q '<section id="cluster" hidden' <<<"$DOM" || fail "single: cluster section shown"
  # Coherence: the means as Status gives them (3 decimals), a value per topic.
  for m in umass npmi; do
    key=$([ $m = umass ] && echo meanCoherenceUmass || echo meanCoherenceNpmi)
    want=$(grep -oP "\"$key\":\K-?[0-9.e+-]+" "$DIR/status.json")
    want=$(printf '%.3f' "$want")
    grep -q "<div class=\"card\" data-key=\"coherence-$m\"><dt>[^<]*</dt><dd>$want</dd>" <<<"$DOM" ||
      fail "single: no coherence-$m card saying $want"
    [ "$(grep -oP "<td class=\"coherence $m\">-?[0-9]+\.[0-9]+</td>" <<<"$DOM" | wc -l)" = 10 ] ||
      fail "single: not 10 topics with a $m coherence"
  done
  # Held-out: scored at sweep 20 (when sampling stopped); the page shows
  # Status's perplexity.
  heldout=$(grep -oP '"heldout":\{\K[^}]*' "$DIR/status.json" || true)
  grep -q '"sweep":"20"' <<<"$heldout" || fail "single: held-out not scored at sweep 20: $heldout"
  ppl=$(grep -oP '"perplexity":\K[0-9.e+]+' <<<"$heldout")
  words=$(wc -l <"$CORPUS/vocab.txt")
  awk -v p="$ppl" -v v="$words" 'BEGIN { exit !(p > 1 && p < v) }' || fail "single: held-out perplexity $ppl"
  grep -q "<div class=\"card\" data-key=\"heldout-perplexity\"><dt>held-out perplexity (sweep 20)</dt><dd>$(printf '%.1f' "$ppl")</dd>" <<<"$DOM" ||
    fail "single: no held-out card saying $(printf '%.1f' "$ppl")"
  echo "single: 10 topics as ListTopics gives them, sweep 20, log-likelihood plot of 10 points, coherence, held-out perplexity $ppl"

  explore_views

  # 3. The same node with API tokens, open-health off.
  stop_latentd
  READ=read-token-0123456789abcdef
  printf 'read %s\nadmin admin-token-0123456789abcdef\n' "$READ" >"$DIR/tokens"
  rm -f "$DIR/node/ports"
  start_daemon node --api-tokens "$DIR/tokens" --open-health off
  wait_ports "$DIR/node"
  browse "http://$HTTP/" tokens_none
  [ "$(page_state)" = needs-token ] || fail "tokens: no token: page state $(page_state)"
  grep -q '<form id="token-form" class="banner">' <<<"$DOM" || fail "tokens: no token form shown"
  grep -q 'HTTP 401' <<<"$(element error div)" || fail "tokens: no 401 in $(element error div)"
  browse "http://$HTTP/#token=not-a-token-0123456789" tokens_wrong
  [ "$(page_state)" = needs-token ] || fail "tokens: wrong token: page state $(page_state)"
  browse "http://$HTTP/#token=$READ" tokens_read
  [ "$(page_state)" = ok ] || fail "tokens: read token: page state $(page_state): $(element error div)"
  [ "$(grep -o '<tr class="topic" data-topic=' <<<"$DOM" | wc -l)" = 10 ] ||
    fail "tokens: read token: not 10 topic rows"
  grep -q '<form id="token-form" class="banner" hidden' <<<"$DOM" || fail "tokens: token form still shown"
  echo "tokens: page served without a token, asks for one (none, wrong), renders with a read token from the fragment"
}

# topic_rows: the data-topic of the topic table's rows, in order, on one
# line.
topic_rows() { element topics table | grep -oP '<tr class="topic[^"]*" data-topic="\K[0-9]+' | tr '\n' ' '; }
# json_get FILE EXPR: a Python expression over the JSON in FILE (as `j`).
json_get() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }

# The views of part 2 of `single` (see the top), on the node at $HTTP/$TCP.
explore_views() {
  "$CTL" topics --addr "$TCP" --top 10 --json >"$DIR/topics.json" || fail "latentctl topics --json"
  # The default view: the map, and an axis title on each plot.
  python3 "$(dirname "$0")/topic_map_check.py" "$HTTP" "$OUT/single.html" ||
    fail "single: the topic map"
  for plot in ll-plot tps-plot topic-map; do
    svg_el=$(element "$plot" svg)
    [ "$(grep -o '<text class="axis-title [xy]"' <<<"$svg_el" | wc -l)" = 2 ] ||
      fail "single: $plot lacks its axis titles: $svg_el"
  done
  grep -q '<text class="axis-title x"[^>]*>PC1</text>' <<<"$(element topic-map svg)" ||
    fail "single: topic map x axis not PC1"

  # Sorted by weight (tokens, ties by id), then by UMass coherence.
  browse "http://$HTTP/#sort=weight" sorted_weight 2400
  want=$(json_get "$DIR/topics.json" "' '.join(str(t['id']) for t in sorted(j['topics'], key=lambda t: (-int(t['tokens']), t['id']))) + ' '")
  [ "$(topic_rows)" = "$want" ] || fail "sort weight: rows '$(topic_rows)', ListTopics '$want'"
  browse "http://$HTTP/#sort=umass" sorted_umass
  want=$(json_get "$DIR/topics.json" "' '.join(str(t['id']) for t in sorted(j['topics'], key=lambda t: (-t['coherenceUmass'], t['id']))) + ' '")
  [ "$(topic_rows)" = "$want" ] || fail "sort umass: rows '$(topic_rows)', ListTopics '$want'"
  echo "sort: by weight and by UMass as ListTopics orders them"

  # Search: topic 3's fourth word, and a prefix of topic 5's first.
  for q in "$(json_get "$DIR/topics.json" "j['topics'][3]['topWords'][3]['word']")" \
           "$(json_get "$DIR/topics.json" "j['topics'][5]['topWords'][0]['word'][:2]")"; do
    browse "http://$HTTP/#q=$q" "search_$q"
    want=$(json_get "$DIR/topics.json" "' '.join(str(t['id']) for t in j['topics'] if any(w['word'].lower().startswith('$q'.lower()) for w in t['topWords'])) + ' '")
    [ "$(topic_rows)" = "$want" ] || fail "search '$q': rows '$(topic_rows)', ListTopics '$want'"
    grep -q "<span id=\"topic-count\" class=\"muted\" data-shown=\"$(wc -w <<<"$want")\">" <<<"$DOM" ||
      fail "search '$q': count not $(wc -w <<<"$want")"
  done
  echo "search: rows are the topics whose top words start with the query"

  # A topic's view: GetTopic's 20 words, TopicDocuments' 10 documents.
  browse "http://$HTTP/#topic=3" topic_view
  view=$(element topic-view section)
  grep -q '<section id="topic-view" class="view" data-state="ok">' <<<"$DOM" ||
    fail "topic view not shown: $view"
  "$CTL" topics --addr "$TCP" --topic 3 --top 20 >"$DIR/topic3.txt" || fail "latentctl topics --topic 3"
  want=$(awk '/^  /{printf "%s ", $1}' "$DIR/topic3.txt")
  got=$(element topic-view-words table | grep -oP '<td class="w">\K[^<]+' | tr '\n' ' ')
  [ -n "$want" ] && [ "$got" = "$want" ] || fail "topic view: words '$got', GetTopic '$want'"
  "$CTL" topic-documents 3 --top 10 --addr "$TCP" --json >"$DIR/docs3.json" || fail "latentctl topic-documents"
  want=$(json_get "$DIR/docs3.json" "' '.join(d['document'] + '=' + format(d['weight'], '.4f') for d in j['documents']) + ' '")
  got=$(element topic-view-docs table | grep -oP '<td class="d">\K[^<]+</td><td class="weight">[^<]+' |
        sed 's|</td><td class="weight">|=|' | tr '\n' ' ')
  [ "$(wc -w <<<"$want")" = 10 ] && [ "$got" = "$want" ] ||
    fail "topic view: documents '$got', TopicDocuments '$want'"
  grep -q '<g class="topic-node selected"><circle class="topic-circle" data-topic="3"' <<<"$DOM" ||
    fail "topic view: topic 3 not selected on the map"
  echo "topic view: topic 3's words and 10 documents as GetTopic and TopicDocuments give them"

  # A user's profile, once the user's events are merged; an unknown user.
  words=$(json_get "$DIR/topics.json" "' '.join(w['word'] for w in j['topics'][2]['topWords'])")
  "$CTL" ingest --addr "$TCP" --user alice --text "$words $words" --wait-merged >/dev/null ||
    fail "latentctl ingest --user alice"
  "$CTL" profile alice --addr "$TCP" --json >"$DIR/alice.json" || fail "latentctl profile alice"
  browse "http://$HTTP/#user=alice" user_view
  want=$(json_get "$DIR/alice.json" "' '.join(str(t['topic']) + '=' + format(t['weight'], '.4f') for t in j['topics']) + ' '")
  got=$(element user-topics table | grep -oP '<td class="id">\K[0-9]+</td><td class="weight">[^<]+' |
        sed 's|</td><td class="weight">|=|' | tr '\n' ' ')
  [ "$(wc -w <<<"$want")" = 5 ] && [ "$got" = "$want" ] || fail "user view: '$got', GetUserProfile '$want'"
  grep -q '<p id="user-summary">user alice: 1 events, ' <<<"$DOM" || fail "user view: summary"
  browse "http://$HTTP/#user=nobody" user_unknown
  grep -q '<section id="user-view" class="view" data-state="error">' <<<"$DOM" ||
    fail "unknown user: no error state"
  grep -q "user 'nobody' is not in the model" <<<"$(element user-error div)" ||
    fail "unknown user: $(element user-error div)"
  echo "user view: alice's profile as GetUserProfile gives it; an unknown user's error shown"
}

# start_redis: a private redis-server on the Unix socket $DIR/redis.sock
# (no TCP port), stopped at exit.
start_redis() {
  local sock=$DIR/redis.sock
  redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --save "" \
    --appendonly no --dir "$DIR" >"$DIR/redis.log" 2>&1 &
  local redis_pid=$!
  on_exit "kill $redis_pid; wait $redis_pid"
  DAEMON_LOGS+=("$DIR/redis.log")
  for _ in $(seq 200); do
    redis-cli -s "$sock" ping >/dev/null 2>&1 && break
    sleep 0.05
  done
  redis-cli -s "$sock" ping >/dev/null 2>&1 || fail "redis-server did not start"
}

cluster() {
  local sock=$DIR/redis.sock
  start_redis
  # Both nodes prove the same cluster key on their sync connections.
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$DIR/cluster.key"
  chmod 600 "$DIR/cluster.key"
  # --failure-timeout 0: the peer killed below must stay a ring member (shown
  # unreachable), not be failed over and dropped from the ring (issue 13).
  local args=(--corpus "$CORPUS/corpus.ldac" --format ldac
    --corpus-vocab "$CORPUS/vocab.txt" --topics 10 --max-sweeps 6
    --eval-every 1 --cluster-redis "unix:$sock" --cluster page
    --cluster-size 2 --cluster-key "$DIR/cluster.key"
    --failure-timeout 0)
  start_daemon a "${args[@]}"
  local a_pid=$PID
  start_daemon b "${args[@]}"
  local b_pid=$PID
  wait_ports "$DIR/b"
  local b_tcp=$TCP
  PID=$a_pid
  wait_ports "$DIR/a"
  wait_idle "$TCP"
  browse "http://$HTTP/" cluster
  [ "$(page_state)" = ok ] || fail "cluster: page state $(page_state): $(element error div)"
  grep -q '<section id="cluster">' <<<"$DOM" || fail "cluster: no cluster section"
  members=$(element members table)
  [ "$(grep -o '<tr class="member"' <<<"$members" | wc -l)" = 2 ] || fail "cluster: members: $members"
  grep -q "<tr class=\"member\" data-state=\"this node\"><td>$TCP</td>" <<<"$members" ||
    fail "cluster: this node ($TCP) not in $members"
  grep -q "<tr class=\"member\" data-state=\"reachable\"><td>$b_tcp</td>" <<<"$members" ||
    fail "cluster: the peer ($b_tcp) not reachable in $members"
  grep -q '<span id="ring-epoch" class="muted">ring epoch [0-9]' <<<"$DOM" || fail "cluster: no ring epoch"
  # The members as Redis records them: as `latentctl cluster status` reads them.
  "$CTL" cluster status --cluster-redis "unix:$sock" --cluster page --json >"$DIR/cluster.json" ||
    fail "latentctl cluster status"
  want=$(json_get "$DIR/cluster.json" "' '.join(m['id'] + '=' + m['state'] + '=' + ('yes' if m['inRing'] else 'no') for m in j['members']) + ' '")
  got=$(element redis-members table |
        grep -oP '<tr class="redis-member[^"]*" data-state="[^"]+"><td class="id">\K[^<]+</td><td class="address">[^<]*</td><td class="state [^"]+">[^<]+</td><td class="ring">[^<]+' |
        sed -E 's|</td><td class="address">[^<]*</td><td class="state [^"]+">|=|; s|</td><td class="ring">|=|' | tr '\n' ' ')
  [ "$(wc -w <<<"$want")" = 2 ] && [ "$got" = "$want" ] ||
    fail "cluster: Redis members '$got', latentctl cluster status '$want'"
  grep -q '<div id="redis-view">' <<<"$DOM" || fail "cluster: Redis view hidden"

  # The peer dies: once node a's heartbeats miss it, the page says so.
  kill -9 "$b_pid"
  for _ in $(seq 300); do
    "$CTL" status --addr "$TCP" --json | grep "\"unavailablePeers\":\[\"$b_tcp\"\]" >/dev/null && break
    sleep 0.1
  done
  browse "http://$HTTP/" cluster_peer_down
  grep -q "<tr class=\"member\" data-state=\"unreachable\"><td>$b_tcp</td>" <<<"$(element members table)" ||
    fail "cluster: the killed peer is not shown unreachable: $(element members table)"
  echo "cluster: both members listed (this node, reachable); the killed one shown unreachable"
}

# card KEY: the text of the status card with data-key KEY.
card() { grep -oP "<div class=\"card\" data-key=\"$1\"><dt>[^<]*</dt><dd>\K[^<]*" <<<"$DOM" || true; }
# graph_field NAME: a field of the graph part of $DIR/status.json (numbers
# and strings unquoted).
graph_field() { grep -oP "\"graph\":\{.*?\"$1\":\"?\K[^\",}]*" "$DIR/status.json" || true; }
# graph_done TCP EPOCHS: the node at TCP has trained EPOCHS epochs and
# stopped (its Status into $DIR/status.json).
graph_done() {
  "$CTL" status --addr "$1" --json >"$DIR/status.json" 2>/dev/null &&
    [ "$(graph_field epoch)" = "$2" ] && [ "$(graph_field training)" = false ]
}

graph() {
  # 1. One graph-only node.
  start_daemon g --graph-edges "$GRAPH" --graph-dim 16 --graph-max-epochs 6 \
    --graph-holdout 0.1 --graph-checkpoint-every 0
  wait_ports "$DIR/g"
  wait_until 120 "graph node not done with 6 epochs" graph_done "$TCP" 6
  browse "http://$HTTP/" graph
  [ "$(page_state)" = ok ] || fail "graph: page state $(page_state): $(element error div)"
  grep -q '<p id="graph-only-note" class="muted">' <<<"$DOM" || fail "graph: no graph-only note"
  for id in figures plots topics-section cluster; do
    grep -q "<section id=\"$id\" hidden" <<<"$DOM" || fail "graph: section $id shown"
  done
  grep -q '<section id="graph-section">' <<<"$DOM" || fail "graph: no graph section"
  [ "$(card graph-epoch)" = 6 ] || fail "graph: epoch card '$(card graph-epoch)'"
  [ "$(card graph-dim)" = 16 ] || fail "graph: dim card '$(card graph-dim)'"
  for f in vertices edges; do
    want=$(sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$(graph_field $f)")  # en-US: 5,242
    [ -n "$want" ] && [ "$(card graph-$f)" = "$want" ] ||
      fail "graph: $f card '$(card graph-$f)', Status $want"
  done
  auc=$(graph_field heldoutAuc)
  awk -v a="$auc" 'BEGIN { exit !(a > 0.6 && a <= 1) }' || fail "graph: held-out AUC $auc"
  [ "$(card graph-heldout-auc)" = "$(printf '%.4f' "$auc")" ] ||
    fail "graph: AUC card '$(card graph-heldout-auc)', Status $auc"
  [ "$(card graph-objective)" = "$(printf '%.1f' "$(graph_field objective)")" ] ||
    fail "graph: objective card '$(card graph-objective)', Status $(graph_field objective)"
  plot=$(element graph-objective-plot svg)
  grep -q 'data-points="6"' <<<"$plot" || fail "graph: objective plot: $plot"
  grep -q '>epoch 6<' <<<"$plot" || fail "graph: objective plot axis does not end at epoch 6"
  for p in graph-objective-plot graph-eps-plot; do
    [ "$(grep -o '<text class="axis-title [xy]"' <<<"$(element $p svg)" | wc -l)" = 2 ] ||
      fail "graph: $p lacks its axis titles"
  done
  grep -q '<div id="graph-error" class="banner" hidden' <<<"$DOM" || fail "graph: error banner shown"
  echo "graph: graph-only node shown (epoch 6, $(card graph-vertices) vertices, AUC $auc), LDA sections hidden"
  stop_latentd

  # 2. A graph cluster of two graph-only nodes.
  start_redis
  local args=(--graph-edges "$GRAPH" --graph-dim 16 --graph-max-epochs 5
    --graph-holdout 0.1 --graph-checkpoint-every 0 --graph-consensus dual
    --consistency bsp --cluster-redis "unix:$DIR/redis.sock" --cluster gpage
    --cluster-size 2 --insecure on --failure-timeout 0)
  start_daemon ga "${args[@]}"
  local a_pid=$PID
  start_daemon gb "${args[@]}"
  wait_ports "$DIR/gb"
  local b_tcp=$TCP
  PID=$a_pid
  wait_ports "$DIR/ga"
  wait_until 120 "graph cluster node not done with 5 epochs" graph_done "$TCP" 5
  browse "http://$HTTP/" graph_cluster
  [ "$(page_state)" = ok ] || fail "graph cluster: page state $(page_state): $(element error div)"
  members=$(element members table)
  grep -q "<tr class=\"member\" data-state=\"this node\"><td>$TCP</td>" <<<"$members" ||
    fail "graph cluster: this node ($TCP) not in $members"
  grep -q "<tr class=\"member\" data-state=\"reachable\"><td>$b_tcp</td>" <<<"$members" ||
    fail "graph cluster: the peer ($b_tcp) not in $members"
  [ "$(card graph-consensus)" = "dual decomposition" ] ||
    fail "graph cluster: consensus card '$(card graph-consensus)'"
  dist=$(graph_field consensusDistance)
  [ -n "$dist" ] && [ "$(card graph-consensus-distance)" = "$(printf '%.4f' "$dist")" ] ||
    fail "graph cluster: distance card '$(card graph-consensus-distance)', Status $dist"
  echo "graph cluster: both members listed, dual consensus, copies' distance $dist"
}

case "$MODE" in
  single) single ;;
  cluster) cluster ;;
  graph) graph ;;
  *) fail "unknown mode $MODE" ;;
esac
echo "screenshots and DOM dumps in $OUT"
