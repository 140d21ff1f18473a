// latentd status page: the views people explore (index.html), drawn by
// status.js's refresh with each Status and ListTopics it reads:
//   - the topic table, sorted by id, weight (tokens n_k) or coherence
//     (UMass, NPMI; topics without a value last) and filtered by a word
//     (topics with a top word that starts with it);
//   - a topic's view: its top words (GetTopic) and top documents
//     (TopicDocuments: each document's id, θ_dk and n_dk/n_d);
//   - a user's profile (GetUserProfile);
//   - the topic map (topic_map.js);
//   - on a cluster member, the members as the cluster's Redis records them
//     (ClusterMembers), above this node's own view of them (status.js);
//     where Redis cannot be read the page says it shows this node's view
//     only, and why.
// Their state is the URL fragment (#sort=weight&q=word&topic=3&user=alice):
// the controls write it, reloading or linking shows the same view. Element
// ids and data-* attributes are what tests/service/status_page_test.sh
// checks: keep them stable. Everything is built with DOM calls, never
// innerHTML: words and ids come from the corpus and the users.
'use strict';

(function () {
  const P = window.LatentdPage;
  const {$, call, num, has, fmtInt, fmtFixed, el} = P;
  const TOPIC_WORDS = 20;     // words in a topic's view
  const TOPIC_DOCUMENTS = 10; // documents in a topic's view
  const SORTS = {
    id: (a, b) => num(a.id) - num(b.id),
    weight: (a, b) => num(b.tokens) - num(a.tokens) || num(a.id) - num(b.id),
    umass: byCoherence('coherenceUmass'),
    npmi: byCoherence('coherenceNpmi'),
  };
  let last = null;  // the latest {st, lt} status.js read

  // Topics with a value first, higher first; then by id.
  function byCoherence(field) {
    return (a, b) => {
      const x = has(a[field]), y = has(b[field]);
      if (x !== y) return x ? -1 : 1;
      if (x && a[field] !== b[field]) return b[field] - a[field];
      return num(a.id) - num(b.id);
    };
  }

  // The views' state from the URL fragment.
  function state() {
    const f = P.fragment();
    const sort = f.get('sort') || 'id';
    return {
      sort: SORTS[sort] ? sort : 'id',
      q: (f.get('q') || '').trim().toLowerCase(),
      topic: /^[0-9]+$/.test(f.get('topic') || '') ? Number(f.get('topic')) : null,
      user: (f.get('user') || '').trim(),
    };
  }
  // Sets (or, for '' and null, removes) fragment fields and redraws.
  function update(changes) {
    const f = P.fragment();
    for (const k in changes) {
      const v = changes[k];
      if (v === '' || v === null || v === undefined) f.delete(k);
      else f.set(k, String(v));
    }
    P.setFragment(f);
    render().catch(() => {});
  }

  // ---- The topic table ----
  function matches(topic, q) {
    return !q || (topic.topWords || []).some((w) => w.word.toLowerCase().startsWith(q));
  }

  function showTopics(st, lt, s) {
    const all = lt.topics || [];
    const total = num(st.tokens);
    $('topics-version').textContent = all.length + ' topics at sweep ' +
        fmtInt(lt.version && lt.version.sweep);
    $('topic-sort').value = s.sort;
    if (document.activeElement !== $('topic-search')) $('topic-search').value = s.q;
    const shown = all.filter((t) => matches(t, s.q)).sort(SORTS[s.sort]);
    const count = $('topic-count');
    count.setAttribute('data-shown', String(shown.length));
    count.textContent = s.q ? shown.length + ' of ' + all.length + ' topics have a top word ' +
                                  'starting with “' + s.q + '”'
                            : '';
    const withCoherence = all.some((t) => has(t.coherenceUmass) || has(t.coherenceNpmi));
    for (const th of document.querySelectorAll('#topics th.coherence')) {
      th.hidden = !withCoherence;
    }
    const body = $('topics').tBodies[0];
    body.replaceChildren();
    for (const t of shown) {
      const row = el('tr', {'class': 'topic', 'data-topic': String(num(t.id))});
      if (num(t.id) === s.topic) row.classList.add('selected');
      const share = total > 0 ? (100 * num(t.tokens)) / total : 0;
      row.append(el('td', {'class': 'id'}, String(num(t.id))),
                 el('td', {'class': 'share'}, share.toFixed(1) + '%'),
                 el('td', {'class': 'alpha'}, fmtFixed(t.alpha, 3)));
      if (withCoherence) {
        row.append(el('td', {'class': 'coherence umass'},
                      has(t.coherenceUmass) ? fmtFixed(t.coherenceUmass, 2) : '–'),
                   el('td', {'class': 'coherence npmi'},
                      has(t.coherenceNpmi) ? fmtFixed(t.coherenceNpmi, 3) : '–'));
      }
      row.append(wordBars(t.topWords || [], s.q));
      body.append(row);
    }
  }

  // A <td> of words with bars of their weights; words matching `q` marked.
  function wordBars(top, q) {
    const words = el('td', {'class': 'words'});
    const max = top.length ? num(top[0].probability) : 1;
    for (const w of top) {
      const p = num(w.probability);
      const word = el('span', {'class': 'word', 'data-weight': String(p), title: p.toFixed(4)});
      if (q && w.word.toLowerCase().startsWith(q)) word.classList.add('match');
      const bar = el('span', {'class': 'bar'});
      bar.style.width = Math.max(2, Math.round((40 * p) / (max || 1))) + 'px';
      word.append(el('span', {'class': 'w'}, w.word), bar, el('span', {'class': 'p'}, p.toFixed(3)));
      words.append(word);
    }
    return words;
  }

  // ---- A topic's view ----
  async function showTopicView(st, s) {
    const section = $('topic-view');
    section.hidden = s.topic === null;
    if (s.topic === null) return;
    $('topic-view-id').textContent = String(s.topic);
    const error = $('topic-view-error');
    let topic, docs;
    try {
      [topic, docs] = await Promise.all([
        call('GetTopic', {topic: s.topic, topWords: TOPIC_WORDS}),
        call('TopicDocuments', {topic: s.topic, top: TOPIC_DOCUMENTS}),
      ]);
    } catch (e) {
      error.textContent = e.message;
      error.hidden = false;
      section.setAttribute('data-state', 'error');
      $('topic-view-words').tBodies[0].replaceChildren();
      $('topic-view-docs').tBodies[0].replaceChildren();
      return;
    }
    error.hidden = true;
    section.setAttribute('data-state', 'ok');
    const t = topic.topic || {};
    const total = num(st.tokens);
    const facts = [
      ['tokens', fmtInt(t.tokens)],
      ['share', (total > 0 ? (100 * num(t.tokens)) / total : 0).toFixed(1) + '%'],
      ['α', fmtFixed(t.alpha, 3)],
    ];
    if (has(t.coherenceUmass)) facts.push(['UMass', fmtFixed(t.coherenceUmass, 2)]);
    if (has(t.coherenceNpmi)) facts.push(['NPMI', fmtFixed(t.coherenceNpmi, 3)]);
    $('topic-view-facts').textContent = facts.map(([k, v]) => k + ' ' + v).join(' · ');
    const words = $('topic-view-words').tBodies[0];
    words.replaceChildren();
    for (const w of t.topWords || []) {
      const row = el('tr', {'class': 'topic-word'});
      row.append(el('td', {'class': 'w'}, w.word),
                 el('td', {'class': 'p'}, num(w.probability).toFixed(4)));
      words.append(row);
    }
    const body = $('topic-view-docs').tBodies[0];
    body.replaceChildren();
    for (const d of docs.documents || []) {
      const row = el('tr', {'class': 'topic-document', 'data-document': d.document});
      row.append(el('td', {'class': 'd'}, d.document),
                 el('td', {'class': 'weight'}, num(d.weight).toFixed(4)),
                 el('td', {'class': 'count'}, fmtInt(d.count) + ' / ' + fmtInt(d.tokens)));
      body.append(row);
    }
    $('topic-view-docs-note').textContent = (docs.documents || []).length === 0
        ? 'No document of this node is in the model yet.'
        : 'θ_dk = (n_dk + α_k) / (n_d + Σα), counts read at sweep ' +
              fmtInt(docs.version && docs.version.sweep) + ' (this node\'s documents).';
  }

  // ---- A user's profile ----
  async function showUser(s) {
    const section = $('user-view');
    section.hidden = !s.user;
    if (!s.user) return;
    if (document.activeElement !== $('user-input')) $('user-input').value = s.user;
    const error = $('user-error');
    const body = $('user-topics').tBodies[0];
    let p;
    try {
      p = await call('GetUserProfile', {user: s.user, top: 5, topWords: 5});
    } catch (e) {
      error.textContent = e.message;
      error.hidden = false;
      section.setAttribute('data-state', 'error');
      $('user-summary').textContent = '';
      body.replaceChildren();
      return;
    }
    error.hidden = true;
    section.setAttribute('data-state', 'ok');
    $('user-summary').textContent = 'user ' + p.user + ': ' + fmtInt(p.events) + ' events, ' +
        fmtInt(p.tokens) + ' tokens (model sweep ' + fmtInt(p.version && p.version.sweep) + ')';
    body.replaceChildren();
    for (const t of p.topics || []) {
      const row = el('tr', {'class': 'user-topic', 'data-topic': String(num(t.topic))});
      row.append(el('td', {'class': 'id'}, String(num(t.topic))),
                 el('td', {'class': 'weight'}, num(t.weight).toFixed(4)),
                 el('td', {'class': 'words'}, (t.topWords || []).map((w) => w.word).join(' ')));
      body.append(row);
    }
  }

  // ---- The cluster's members as Redis records them ----
  async function showRedisMembers(st) {
    if ((st.clusterMembers || []).length === 0) return;
    const note = $('cluster-source');
    let r;
    try {
      r = await call('ClusterMembers', {});
    } catch (e) {
      $('redis-view').hidden = true;
      note.textContent = 'This node\'s view only: the cluster\'s Redis records could not be ' +
          'read (' + e.message + ').';
      return;
    }
    $('redis-view').hidden = false;
    $('redis-cluster').textContent = 'cluster ' + r.cluster + ', ring epoch ' + fmtInt(r.epoch);
    note.textContent = 'Below, this node\'s view: the ring it routes by and which peers ' +
        'its heartbeats reach.';
    const body = $('redis-members').tBodies[0];
    body.replaceChildren();
    for (const m of r.members || []) {
      const row = el('tr', {'class': 'redis-member', 'data-state': m.state});
      if (m.id === r.nodeId) row.classList.add('self');
      const beat = m.hasHeartbeat;
      row.append(el('td', {'class': 'id'}, m.id),
                 el('td', {'class': 'address'}, m.address || '–'),
                 el('td', {'class': 'state ' + m.state}, m.state),
                 el('td', {'class': 'ring'}, m.inRing ? 'yes' : 'no'),
                 el('td', {'class': 'weight'}, String(num(m.weight))),
                 el('td', {'class': 'age'}, beat ? (num(m.heartbeatAgeMs) / 1000).toFixed(1) + ' s'
                                                  : 'none'),
                 el('td', {'class': 'sweep'}, beat ? fmtInt(m.sweep) : '–'),
                 el('td', {'class': 'documents'}, beat ? fmtInt(m.documents) : '–'));
      body.append(row);
    }
  }

  async function render() {
    if (last === null) return;
    const s = state();
    showTopics(last.st, last.lt, s);
    const map = window.LatentdTopicMap
        ? window.LatentdTopicMap.draw(last.st, last.lt, s.topic, update) : null;
    await Promise.all([map, showTopicView(last.st, s), showUser(s),
                       showRedisMembers(last.st)]);
  }

  function bind() {
    $('topic-sort').addEventListener('change', (ev) => update({sort: ev.target.value}));
    $('topic-search').addEventListener('input', (ev) => update({q: ev.target.value.trim()}));
    $('topics').tBodies[0].addEventListener('click', (ev) => {
      const row = ev.target.closest('tr.topic');
      if (row) update({topic: row.getAttribute('data-topic')});
    });
    $('topic-view-close').addEventListener('click', () => update({topic: ''}));
    $('user-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      update({user: $('user-input').value.trim()});
    });
    $('user-close').addEventListener('click', () => update({user: ''}));
    window.addEventListener('hashchange', () => render().catch(() => {}));
  }

  window.LatentdExplore = {
    bind,
    refresh: async (st, lt) => {
      last = {st, lt};
      await render();
    },
  };
})();
