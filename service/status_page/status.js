// latentd status page: reads the daemon's API every POLL_MS and draws it.
//
// Authentication: with api-tokens set, the API calls need a bearer token.
// The page takes one from its URL fragment (/#token=TOKEN; a fragment is
// never sent to the server, so it stays out of logs), keeps it in this
// tab's sessionStorage, drops it from the address bar, and sends it as
// "Authorization: Bearer". A call answered 401 shows a form asking for one.
//
// Everything shown is built with textContent / DOM calls, never innerHTML:
// words come from the corpus.
//
// A node serving a graph model (Status.graph) gets the graph section; a
// graph-only node (no topic model: Status has no version) shows only it,
// hides the LDA sections with a note saying why, and is not asked for
// ListTopics (it would fail).
//
// The views people explore (the topic table's sort and search, a topic's
// words and documents, a user's profile, the topic map) are in explore.js
// and topic_map.js; this file hands them its helpers as window.LatentdPage
// and calls them with every refresh. What they show is kept in the URL
// fragment (#sort=weight&q=word&topic=3&user=alice, beside #token=...), so
// a view can be linked, reloaded and tested.
'use strict';

(function () {
  const POLL_MS = 3000;
  const HISTORY_POINTS = 500;  // sweeps of the plots (StatusRequest.history)
  const TOP_WORDS = 10;
  const TOKEN_KEY = 'latentd.token';
  const SVG_NS = 'http://www.w3.org/2000/svg';

  const $ = (id) => document.getElementById(id);

  // ---- The token ----
  function storedToken() {
    try {
      return sessionStorage.getItem(TOKEN_KEY) || '';
    } catch (e) {
      return '';  // storage disabled: no token kept
    }
  }
  function storeToken(token) {
    try {
      sessionStorage.setItem(TOKEN_KEY, token);
    } catch (e) {
      memoryToken = token;
    }
  }
  let memoryToken = '';
  function token() {
    return storedToken() || memoryToken;
  }
  function takeTokenFromFragment() {
    const m = /(?:^#|&)token=([^&]*)/.exec(location.hash);
    if (!m) return;
    storeToken(decodeURIComponent(m[1]));
    const params = fragment();
    params.delete('token');
    setFragment(params);
  }

  // ---- The URL fragment: the views' state ----
  function fragment() {
    return new URLSearchParams(location.hash.replace(/^#/, ''));
  }
  // Replaces the fragment (no history entry, no hashchange event).
  function setFragment(params) {
    const text = params.toString();
    history.replaceState(null, '', location.pathname + location.search +
                         (text ? '#' + text : ''));
  }

  // ---- The API ----
  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }
  async function call(method, request) {
    const headers = {'Content-Type': 'application/json'};
    const t = token();
    if (t) headers['Authorization'] = 'Bearer ' + t;
    const res = await fetch('/v1/' + method, {
      method: 'POST',
      headers: headers,
      body: JSON.stringify(request),
      cache: 'no-store',
    });
    const text = await res.text();
    let body = null;
    try {
      body = JSON.parse(text);
    } catch (e) {
      body = null;
    }
    if (!res.ok) {
      const why = body && body.message ? body.message : text;
      throw new ApiError(res.status, method + ': HTTP ' + res.status + ': ' + why);
    }
    return body;
  }

  // ---- Formatting (the JSON mapping writes 64-bit integers as strings) ----
  const num = (v) => (v === undefined || v === null ? 0 : Number(v));
  const has = (v) => typeof v === 'number' && isFinite(v);
  function fmtInt(v) {
    return num(v).toLocaleString('en-US');
  }
  function fmtFixed(v, digits) {
    return num(v).toFixed(digits);
  }
  function fmtRate(v) {
    v = num(v);
    if (v >= 1e6) return (v / 1e6).toFixed(2) + ' M';
    if (v >= 1e3) return (v / 1e3).toFixed(1) + ' k';
    return v.toFixed(v < 10 ? 2 : 0);
  }
  function fmtDuration(seconds) {
    let s = Math.floor(num(seconds));
    const d = Math.floor(s / 86400);
    s -= d * 86400;
    const h = Math.floor(s / 3600);
    s -= h * 3600;
    const m = Math.floor(s / 60);
    s -= m * 60;
    if (d > 0) return d + 'd ' + h + 'h';
    if (h > 0) return h + 'h ' + m + 'm';
    if (m > 0) return m + 'm ' + s + 's';
    return s + 's';
  }

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // Fills a <dl> with [name, value, key] cards; key names the card for
  // tests (data-key).
  function fillCards(dl, cards) {
    dl.replaceChildren();
    for (const [name, value, key] of cards) {
      const card = el('div', {'class': 'card', 'data-key': key});
      card.append(el('dt', {}, name), el('dd', {}, value));
      dl.append(card);
    }
  }

  // Axis titles of a plot in a W x H viewBox whose frame is inset by L, R,
  // T, B: x centred below the frame, y rotated along its left side.
  function axisTitles(plot, box, xTitle, yTitle) {
    const {W, H, L, R, T, B} = box;
    plot.append(svg('text', {'class': 'axis-title x', x: L + (W - L - R) / 2,
                             y: H - 4, 'text-anchor': 'middle'}, xTitle));
    const cy = T + (H - T - B) / 2;
    plot.append(svg('text', {'class': 'axis-title y', x: 14, y: cy,
                             'text-anchor': 'middle',
                             transform: 'rotate(-90 14 ' + cy + ')'}, yTitle));
  }

  // ---- Plots: a polyline of (x, y) with min/max ticks on both axes ----
  function drawPlot(plot, points, yFormat, xName, yTitle) {
    xName = xName || 'sweep';
    plot.replaceChildren();
    plot.setAttribute('data-points', String(points.length));
    const W = 640, H = 250, L = 80, R = 16, T = 12, B = 46;
    plot.append(svg('rect', {'class': 'frame', x: L, y: T, width: W - L - R,
                             height: H - T - B}));
    axisTitles(plot, {W, H, L, R, T, B}, xName, yTitle || '');
    if (points.length === 0) return;
    let x0 = points[0][0], x1 = points[points.length - 1][0];
    let y0 = Infinity, y1 = -Infinity;
    for (const [, y] of points) {
      y0 = Math.min(y0, y);
      y1 = Math.max(y1, y);
    }
    if (x1 === x0) x1 = x0 + 1;
    if (y1 === y0) {
      const pad = Math.abs(y0) * 0.01 || 1;
      y0 -= pad;
      y1 += pad;
    }
    const sx = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
    const sy = (y) => T + (1 - (y - y0) / (y1 - y0)) * (H - T - B);
    const coords = points.map(([x, y]) => sx(x).toFixed(1) + ',' + sy(y).toFixed(1));
    plot.append(svg('polyline', {'class': 'line', points: coords.join(' ')}));
    const [lx, ly] = points[points.length - 1];
    plot.append(svg('circle', {'class': 'last', cx: sx(lx), cy: sy(ly), r: 3.5}));
    // Ticks: y max/min on the left, x first/last below.
    plot.append(svg('text', {'class': 'tick', x: L - 6, y: T + 10, 'text-anchor': 'end'},
                    yFormat(y1)));
    plot.append(svg('text', {'class': 'tick', x: L - 6, y: H - B, 'text-anchor': 'end'},
                    yFormat(y0)));
    plot.append(svg('text', {'class': 'tick', x: L, y: H - B + 16}, xName + ' ' + x0));
    plot.append(svg('text', {'class': 'tick', x: W - R, y: H - B + 16, 'text-anchor': 'end'},
                    xName + ' ' + points[points.length - 1][0]));
  }

  // ---- The sections ----
  let lastIngest = null;  // {ingested, at}: for the ingest rate

  // A node without a topic model (Status.version unset) serving a graph.
  const graphOnly = (st) => !!st.graph && !st.version;

  function showStatus(st) {
    $('node-id').textContent = st.nodeId ? st.nodeId : 'single node';
    const training = $('training-state');
    training.textContent = st.training ? 'training' : 'idle';
    training.className = 'badge ' + (st.training ? 'on' : 'off');
    showGraph(st.graph);
    const lda = !graphOnly(st);
    $('graph-only-note').hidden = lda;
    for (const id of ['figures', 'plots', 'topics-section']) $(id).hidden = !lda;
    showCluster(st);
    if (!lda) return;

    const history = st.history || [];
    const model = [
      ['sweep', fmtInt(st.version && st.version.sweep), 'sweep'],
      // A cluster node's own figure: the cluster's is `latentctl cluster status`'s.
      [st.nodeId ? "log-likelihood / token (this node's documents)" : 'log-likelihood / token',
          history.length || num(st.logLikelihoodPerToken) !== 0
          ? fmtFixed(st.logLikelihoodPerToken, 4) : '–', 'loglik'],
      ['tokens / s (last sweep)', fmtRate(st.tokensPerSecond), 'tokens-per-second'],
      ['topics', fmtInt(st.topics), 'topics'],
      ['documents', fmtInt(st.documents), 'documents'],
      ['tokens', fmtInt(st.tokens), 'tokens'],
      ['vocabulary', fmtInt(st.vocabulary), 'vocabulary'],
      ['users', fmtInt(st.users), 'users'],
      ['last checkpoint', 'sweep ' + fmtInt(st.checkpointSweep), 'checkpoint'],
      ['uptime', fmtDuration(st.uptimeSeconds), 'uptime'],
    ];
    // Topic coherence, where the daemon computes it.
    // The held-out score, where the node holds documents out (--holdout).
    if (st.heldout) {
      const h = st.heldout;
      model.push(['held-out perplexity (sweep ' + fmtInt(h.sweep) + ')',
                  fmtFixed(h.perplexity, 1), 'heldout-perplexity']);
      model.push(['held-out log-likelihood / token',
                  fmtFixed(h.logLikelihoodPerToken, 4) + ' (' + fmtInt(h.documents) +
                      ' docs)', 'heldout-loglik']);
    }
    const at = ' (sweep ' + fmtInt(st.coherenceSweep) + ')';
    if (has(st.meanCoherenceUmass)) {
      model.push(['mean coherence, UMass' + at, fmtFixed(st.meanCoherenceUmass, 3),
                  'coherence-umass']);
    }
    if (has(st.meanCoherenceNpmi)) {
      model.push(['mean coherence, NPMI' + at, fmtFixed(st.meanCoherenceNpmi, 3),
                  'coherence-npmi']);
    }
    fillCards($('model-figures'), model);

    const now = Date.now();
    let rate = '–';
    if (lastIngest !== null && now > lastIngest.at) {
      const per = (num(st.ingested) - lastIngest.ingested) / ((now - lastIngest.at) / 1000);
      if (per >= 0) rate = fmtRate(per);
    }
    lastIngest = {ingested: num(st.ingested), at: now};
    fillCards($('ingest-figures'), [
      ['acknowledged since start', fmtInt(st.ingested), 'ingested'],
      ['queue (not yet merged)', fmtInt(st.pending), 'pending'],
      ['documents / s (now)', rate, 'ingest-rate'],
      ['merged through log sequence', fmtInt(st.mergedSequence), 'merged-sequence'],
    ]);

    const ll = history.map((p) => [num(p.sweep), num(p.logLikelihoodPerToken)]);
    drawPlot($('ll-plot'), ll, (v) => v.toFixed(3), 'sweep', 'log-likelihood / token');
    $('ll-empty').hidden = ll.length > 0;
    drawPlot($('tps-plot'), history.map((p) => [num(p.sweep), num(p.tokensPerSecond)]),
             fmtRate, 'sweep', 'tokens / s');
  }

  // The graph model (GraphStatus), if the node serves one.
  function showGraph(g) {
    $('graph-section').hidden = !g;
    if (!g) return;
    const cards = [
      ['epoch', fmtInt(g.epoch), 'graph-epoch'],
      ['objective', fmtFixed(g.objective, 1), 'graph-objective'],
      ['vertices', fmtInt(g.vertices), 'graph-vertices'],
      ['training edges', fmtInt(g.edges), 'graph-edges'],
      ['dim', fmtInt(g.dim), 'graph-dim'],
      ['edges / s (last epoch)', fmtRate(g.edgesPerSecond), 'graph-edges-per-second'],
    ];
    if (num(g.heldoutPairs) > 0) {
      // 0: not scored yet (no epoch done here, or a cluster node before
      // its first scoring).
      const scored = num(g.heldoutAuc) > 0;
      cards.push(['held-out AUC (' + fmtInt(g.heldoutPairs) + ' pairs)',
                  scored ? fmtFixed(g.heldoutAuc, 4) : '– (not scored yet)',
                  'graph-heldout-auc']);
      cards.push(['held-out average precision',
                  scored ? fmtFixed(g.heldoutAveragePrecision, 4) : '–', 'graph-heldout-ap']);
    }
    if (g.consensus) {
      cards.push(['consensus', g.consensus === 'dual' ? 'dual decomposition'
                                                      : 'naive shared Z',
                  'graph-consensus']);
    }
    if (g.consensus === 'dual') {
      cards.push(["copies' distance to consensus, first epoch",
                  fmtFixed(g.firstConsensusDistance, 4), 'graph-first-consensus-distance']);
      cards.push(["copies' distance to consensus, latest", fmtFixed(g.consensusDistance, 4),
                  'graph-consensus-distance']);
    }
    cards.push(['edges ingested', fmtInt(g.ingestedEdges), 'graph-ingested'],
               ['edges pending', fmtInt(g.pendingEdges), 'graph-pending'],
               ['last checkpoint', 'epoch ' + fmtInt(g.checkpointEpoch), 'graph-checkpoint']);
    fillCards($('graph-figures'), cards);
    $('graph-mode').textContent = (g.training ? 'training' : 'idle') +
        (g.consensus ? ', cluster member' : '');
    $('graph-error').textContent = g.error ? 'training stopped: ' + g.error : '';
    $('graph-error').hidden = !g.error;
    const history = g.history || [];
    const objective = history.map((p) => [num(p.epoch), num(p.objective)]);
    drawPlot($('graph-objective-plot'), objective, (v) => v.toFixed(1), 'epoch',
             'objective');
    $('graph-objective-empty').hidden = objective.length > 0;
    drawPlot($('graph-eps-plot'), history.map((p) => [num(p.epoch), num(p.edgesPerSecond)]),
             fmtRate, 'epoch', 'edges / s');
  }

  function showCluster(st) {
    const members = st.clusterMembers || [];
    $('cluster').hidden = members.length === 0;
    if (members.length === 0) return;
    $('ring-epoch').textContent = 'ring epoch ' + fmtInt(st.ringEpoch);
    const down = new Set(st.unavailablePeers || []);
    const body = $('members').tBodies[0];
    body.replaceChildren();
    for (const id of members) {
      const state = id === st.nodeId ? 'this node'
                  : down.has(id) ? 'unreachable' : 'reachable';
      const row = el('tr', {'class': 'member', 'data-state': state});
      row.append(el('td', {}, id),
                 el('td', {'class': 'state ' + state.replace(' ', '-')}, state));
      body.append(row);
    }
  }

  // ---- The loop ----
  function showError(message) {
    const e = $('error');
    e.textContent = message;
    e.hidden = !message;
  }

  async function refresh() {
    try {
      const st = await call('Status', {history: HISTORY_POINTS});
      const lt = graphOnly(st) ? null : await call('ListTopics', {topWords: TOP_WORDS});
      $('token-form').hidden = true;
      showError('');
      showStatus(st);
      if (lt !== null) await explore().refresh(st, lt);
      $('content').hidden = false;
      $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
      document.body.setAttribute('data-state', 'ok');
    } catch (e) {
      if (e instanceof ApiError && (e.status === 401 || e.status === 403)) {
        $('token-form').hidden = false;
        $('updated').textContent = 'waiting for a token';
        document.body.setAttribute('data-state', 'needs-token');
      } else {
        document.body.setAttribute('data-state', 'error');
      }
      // The last figures stay, marked stale by the banner.
      showError(e.message + ' (retrying every ' + POLL_MS / 1000 + ' s)');
    }
  }

  // explore.js's views; none if it did not load (the rest still works).
  function explore() {
    return window.LatentdExplore || {refresh: async () => {}, bind: () => {}};
  }

  window.LatentdPage = {
    $, call, ApiError, num, has, fmtInt, fmtFixed, el, svg, axisTitles, fragment,
    setFragment, TOP_WORDS,
  };

  let timer = null;
  async function loop() {
    await refresh();
    timer = setTimeout(loop, POLL_MS);
  }

  document.addEventListener('DOMContentLoaded', () => {
    takeTokenFromFragment();
    $('token-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      storeToken($('token-input').value.trim());
      $('token-input').value = '';
      clearTimeout(timer);
      loop();
    });
    explore().bind();
    loop();
  });
})();
