// latentd status page: the topic map, an intertopic distance map as
// pyLDAvis draws it: the topics' word distributions φ_k (from the whole
// model, read page by page with ExportModel: φ_wk = (n_wk + β)/(n_k + Vβ)),
// their Jensen-Shannon divergences (natural log), and a classical
// multidimensional scaling (principal coordinate analysis) of those to two
// dimensions: B = -½ J D² J, the coordinates of topic k the top two
// eigenvectors of B scaled by the square roots of their eigenvalues, each
// axis signed so that its largest coordinate is positive. Circle areas are
// proportional to the topics' shares of the tokens (n_k). Recomputed when
// the model view changed and at least RECOMPUTE_MS passed (the export
// reads the whole model). Clicking a circle opens the topic's view.
'use strict';

(function () {
  const P = window.LatentdPage;
  const {$, call, num, fmtInt, svg} = P;
  const RECOMPUTE_MS = 30000;
  const MAX_WORDS = 2000000;  // larger vocabularies: no map (too slow here)
  let map = null;             // {view, at, coords: [[x, y]] by topic}
  let busy = false;

  // The whole model's counts: {beta, alpha, topicTokens, counts[k][w]}, or
  // null if its view moved while paging (the next refresh tries again).
  async function fetchModel() {
    let first = 0, vocabulary = 1, view = null, beta = 0, topics = 0;
    let counts = null, topicTokens = null;
    while (first < vocabulary) {
      const page = await call('ExportModel', {firstWord: first, maxWords: 20000});
      const v = page.version ? num(page.version.view) : 0;
      if (view === null) {
        view = v;
        vocabulary = num(page.vocabulary);
        if (vocabulary > MAX_WORDS) throw new Error('vocabulary over ' + MAX_WORDS + ' words');
        beta = num(page.beta);
        topics = num(page.topics);
        topicTokens = (page.topicTokens || []).map(num);
        counts = [];
        for (let k = 0; k < topics; ++k) counts.push(new Float64Array(vocabulary));
      } else if (v !== view) {
        return null;
      }
      const words = page.words || [];
      if (words.length === 0) break;
      words.forEach((w, i) => {
        const ks = w.topics || [], cs = w.counts || [];
        for (let j = 0; j < ks.length; ++j) counts[ks[j]][first + i] = num(cs[j]);
      });
      first += words.length;
    }
    return {view, beta, topicTokens, counts, vocabulary};
  }

  function jensenShannon(p, q) {
    let s = 0;
    for (let w = 0; w < p.length; ++w) {
      const m = 0.5 * (p[w] + q[w]);
      if (p[w] > 0) s += p[w] * Math.log(p[w] / m);
      if (q[w] > 0) s += q[w] * Math.log(q[w] / m);
    }
    return 0.5 * s;
  }

  // Eigenvalues and eigenvectors (columns of V) of the symmetric matrix A
  // (cyclic Jacobi rotations).
  function symmetricEigen(A) {
    const n = A.length;
    const a = A.map((r) => r.slice());
    const V = a.map((r, i) => r.map((_, j) => (i === j ? 1 : 0)));
    for (let sweep = 0; sweep < 100; ++sweep) {
      let off = 0;
      for (let i = 0; i < n; ++i) for (let j = i + 1; j < n; ++j) off += a[i][j] * a[i][j];
      if (off < 1e-30) break;
      for (let p = 0; p < n; ++p) {
        for (let q = p + 1; q < n; ++q) {
          if (Math.abs(a[p][q]) < 1e-300) continue;
          const theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
          const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
          const c = 1 / Math.sqrt(t * t + 1), s = t * c;
          for (let k = 0; k < n; ++k) {
            const akp = a[k][p], akq = a[k][q];
            a[k][p] = c * akp - s * akq;
            a[k][q] = s * akp + c * akq;
          }
          for (let k = 0; k < n; ++k) {
            const apk = a[p][k], aqk = a[q][k];
            a[p][k] = c * apk - s * aqk;
            a[q][k] = s * apk + c * aqk;
          }
          for (let k = 0; k < n; ++k) {
            const vkp = V[k][p], vkq = V[k][q];
            V[k][p] = c * vkp - s * vkq;
            V[k][q] = s * vkp + c * vkq;
          }
        }
      }
    }
    return {values: a.map((r, i) => r[i]), vectors: V};
  }

  // Two coordinates per topic (see the top of this file).
  function coordinates(model) {
    const K = model.counts.length, V = model.vocabulary;
    const phi = model.counts.map((c, k) => {
      const denom = model.topicTokens[k] + V * model.beta;
      return c.map((n) => (n + model.beta) / denom);
    });
    const D2 = [];
    for (let i = 0; i < K; ++i) D2.push(new Array(K).fill(0));
    for (let i = 0; i < K; ++i) {
      for (let j = i + 1; j < K; ++j) {
        const d = jensenShannon(phi[i], phi[j]);
        D2[i][j] = D2[j][i] = d * d;
      }
    }
    const rowMean = D2.map((r) => r.reduce((a, b) => a + b, 0) / K);
    const mean = rowMean.reduce((a, b) => a + b, 0) / K;
    const B = D2.map((r, i) => r.map((d, j) => -0.5 * (d - rowMean[i] - rowMean[j] + mean)));
    const {values, vectors} = symmetricEigen(B);
    const order = values.map((v, i) => i).sort((a, b) => values[b] - values[a]);
    const coords = [];
    for (let k = 0; k < K; ++k) coords.push([0, 0]);
    for (let axis = 0; axis < 2 && axis < K; ++axis) {
      const e = order[axis];
      const scale = Math.sqrt(Math.max(values[e], 0));
      let big = 0;
      for (let k = 0; k < K; ++k) {
        if (Math.abs(vectors[k][e]) > Math.abs(vectors[big][e])) big = k;
      }
      const sign = vectors[big][e] < 0 ? -1 : 1;
      for (let k = 0; k < K; ++k) coords[k][axis] = sign * scale * vectors[k][e];
    }
    return coords;
  }

  function drawMap(st, lt, selected, update) {
    const plot = $('topic-map');
    plot.replaceChildren();
    const W = 640, H = 480, L = 56, R = 16, T = 12, B = 46;
    plot.append(svg('rect', {'class': 'frame', x: L, y: T, width: W - L - R, height: H - T - B}));
    P.axisTitles(plot, {W, H, L, R, T, B}, 'PC1', 'PC2');
    const topics = lt.topics || [];
    plot.setAttribute('data-circles', '0');
    if (map === null || map.coords.length !== topics.length) return;
    const xs = map.coords.map((c) => c[0]), ys = map.coords.map((c) => c[1]);
    const pad = (lo, hi) => (hi - lo > 0 ? (hi - lo) * 0.15 : 1e-3);
    let x0 = Math.min(...xs), x1 = Math.max(...xs), y0 = Math.min(...ys), y1 = Math.max(...ys);
    const px = pad(x0, x1), py = pad(y0, y1);
    x0 -= px; x1 += px; y0 -= py; y1 += py;
    const sx = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
    const sy = (y) => T + (1 - (y - y0) / (y1 - y0)) * (H - T - B);
    plot.append(svg('text', {'class': 'tick', x: L, y: H - B + 16}, x0.toFixed(3)));
    plot.append(svg('text', {'class': 'tick', x: W - R, y: H - B + 16, 'text-anchor': 'end'},
                    x1.toFixed(3)));
    plot.append(svg('text', {'class': 'tick', x: L - 4, y: H - B, 'text-anchor': 'end'},
                    y0.toFixed(3)));
    plot.append(svg('text', {'class': 'tick', x: L - 4, y: T + 10, 'text-anchor': 'end'},
                    y1.toFixed(3)));
    const total = topics.reduce((a, t) => a + num(t.tokens), 0) || 1;
    const maxShare = Math.max(...topics.map((t) => num(t.tokens) / total)) || 1;
    // Largest first, so that small circles stay on top and clickable.
    const order = topics.map((t, i) => i).sort((a, b) => num(topics[b].tokens) - num(topics[a].tokens));
    for (const i of order) {
      const t = topics[i];
      const k = num(t.id);
      const share = num(t.tokens) / total;
      const r = Math.max(4, 40 * Math.sqrt(share / maxShare));
      const [x, y] = map.coords[k] || [0, 0];
      const g = svg('g', {'class': 'topic-node' + (k === selected ? ' selected' : '')});
      const c = svg('circle', {'class': 'topic-circle', 'data-topic': String(k),
                               'data-x': String(x), 'data-y': String(y),
                               cx: sx(x).toFixed(1), cy: sy(y).toFixed(1), r: r.toFixed(2)});
      c.append(svg('title', {}, 'topic ' + k + ': ' + (100 * share).toFixed(1) + '% of tokens; ' +
                                    (t.topWords || []).slice(0, 5).map((w) => w.word).join(' ')));
      c.addEventListener('click', () => update({topic: k}));
      g.append(c, svg('text', {'class': 'topic-label', x: sx(x).toFixed(1),
                               y: (sy(y) + 4).toFixed(1), 'text-anchor': 'middle'}, String(k)));
      plot.append(g);
    }
    plot.setAttribute('data-circles', String(topics.length));
    $('topic-map-note').textContent = 'Jensen-Shannon divergences of the topics\' word ' +
        'distributions, scaled to two dimensions (classical MDS, as pyLDAvis); circle area: ' +
        'share of the tokens. Model view ' + fmtInt(map.view) + '.';
  }

  async function recompute(view) {
    busy = true;
    try {
      const model = await fetchModel();
      if (model !== null) map = {view: model.view, at: Date.now(), coords: coordinates(model)};
      $('topic-map-error').hidden = true;
    } catch (e) {
      $('topic-map-error').textContent = 'no map: ' + e.message;
      $('topic-map-error').hidden = false;
      map = {view, at: Date.now(), coords: map ? map.coords : []};
    } finally {
      busy = false;
    }
  }

  window.LatentdTopicMap = {
    coordinates,  // of a fetched model, for tests
    // Draws the map of `lt`'s topics, first (re)computing it when due.
    draw: async (st, lt, selected, update) => {
      const view = lt.version ? num(lt.version.view) : 0;
      const due = map === null ||
          (map.view !== view && Date.now() - map.at >= RECOMPUTE_MS);
      if (due && !busy) await recompute(view);
      drawMap(st, lt, selected, update);
    },
  };
})();
