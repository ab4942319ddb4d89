// ---------------------------------------------------------------------------------------------
// The API
// ---------------------------------------------------------------------------------------------
function token() {
  try { return sessionStorage.getItem('vwf-token') || localStorage.getItem('vwf-token'); } catch (e) { return null; }
}
async function api(method, path, body) {
  if (!SERVED) return { status: 0, body: { ok: false, error: 'opened from a file: no server to ask' } };
  const headers = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  const t = token();
  if (t) headers.authorization = 'Bearer ' + t;
  try {
    const res = await fetch(API + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    let data;
    try { data = await res.json(); } catch (e) { data = { ok: false, error: `HTTP ${res.status}: the answer is not JSON` }; }
    return { status: res.status, body: data };
  } catch (e) {
    return { status: 0, body: { ok: false, error: 'cannot reach the server: ' + e.message } };
  }
}
const enc = encodeURIComponent;

let validateTimer = null, validateSeq = 0;
function scheduleValidate() {
  if (!SERVED || READ_ONLY) return;
  clearTimeout(validateTimer);
  setIssuesStatus('pending');
  validateTimer = setTimeout(validate, 400);
}

/** Asks the server for its verdict on the graph on screen; resolves to {ok, errors, warnings}. */
async function validate() {
  clearTimeout(validateTimer);
  if (!SERVED) { renderIssues(); return { ok: null, offline: true, errors: [], warnings: [] }; }
  if (READ_ONLY) return { ok: null, errors: [], warnings: [] };
  const v = version, seq = ++validateSeq;
  setIssuesStatus('checking');
  const r = await api('POST', `/designs/${enc(designName.trim() || 'draft')}/validate?scope=1`, { graph });
  if (seq !== validateSeq || v !== version) return r.body;
  if (r.status === 200 && Array.isArray(r.body.errors)) {
    scopes = isObj(r.body.scopes) ? r.body.scopes : null;
    if (acShow) acShow();
    delete r.body.scopes;
    issues = { errors: r.body.errors, warnings: Array.isArray(r.body.warnings) ? r.body.warnings : [] };
    issuesVersion = v;
    issuesEdges = JSON.stringify(edges());
    $('issues').dataset.status = 'done';
    render(); renderIssues(); markPanel();
  } else {
    issues = { errors: [], warnings: [] };
    issuesVersion = v;
    $('issues').dataset.status = 'error';
    render(); renderIssues('Could not validate: ' + (r.body.error || `HTTP ${r.status}`)); markPanel();
  }
  return r.body;
}

/** Shows a save's refusal (`{ok:false, error, errors}`) as the current issues. */
function showRefusal(body) {
  issues = { errors: Array.isArray(body.errors) ? body.errors : [], warnings: Array.isArray(body.warnings) ? body.warnings : [] };
  issuesVersion = version;
  issuesEdges = JSON.stringify(edges());
  $('issues').dataset.status = 'done';
  render(); renderIssues(issues.errors.length ? undefined : body.error); markPanel();
}

async function save() {
  if (!SERVED) { say('Saving needs the server: export the JSON instead', 'bad'); return { ok: false, error: 'offline' }; }
  if (READ_ONLY) { say('A read-only view is not saved', 'bad'); return { ok: false, error: 'read-only' }; }
  const name = $('design-name').value.trim();
  setName(name);
  if (!name) { say('Give the design a name first', 'bad'); $('design-name').focus(); return { ok: false, error: 'the design has no name' }; }
  const text = JSON.stringify(graph);
  say('Saving…');
  const create = name !== savedAs;
  const r = await api('POST', `/designs/${enc(name)}`, create ? { graph, create: true } : { graph });
  if (r.body && r.body.ok) {
    savedText = text;
    savedAs = name;
    updateDirty();
    say(`Saved ${name} (${r.body.nodes ?? nodes().length} nodes)`, 'good');
    notify('saved');
    validate();
  } else if (r.status === 409 && create) {
    say(`Not saved: a design named ${name} already exists; choose another name, or open ${name} to change it`, 'bad');
    showRefusal(r.body || {});
  } else {
    say(`Not saved: ${r.body.error || 'HTTP ' + r.status}`, 'bad');
    showRefusal(r.body || {});
  }
  return r.body;
}

/** The run input box as the run's input: {input} (undefined when empty) or {error}. */
function readRunInput() {
  if (!runInput.trim()) return { input: undefined };
  try { return { input: JSON.parse(runInput) }; } catch (e) { return { error: 'Run input is not JSON: ' + e.message }; }
}

/** Saves if needed and starts a run with the run input box (or `input`); answers once the run
 * has started, then colours the canvas as its steps settle. */
async function run(input, scope = {}) {
  if (!SERVED) { say('Running needs the server (vwf serve)', 'bad'); return { ok: false, error: 'offline' }; }
  if (READ_ONLY) { say('A read-only view is not run', 'bad'); return { ok: false, error: 'read-only' }; }
  if (input === undefined) {
    const given = readRunInput();
    if (given.error) { say(given.error, 'bad'); return { ok: false, error: 'bad input' }; }
    input = given.input;
  }
  if (!designName || savedText !== JSON.stringify(graph)) {
    const saved = await save();
    if (!saved || !saved.ok) return saved;
  }
  const test = scope.test || scope.only || scope.until;
  say(scope.only ? `Running ${scope.only} alone…` : scope.until ? `Running up to ${scope.until}…` : test ? 'Starting a test run…' : 'Starting a run…');
  const r = await api('POST', `/designs/${enc(designName)}/run`, input === undefined ? { ...scope, wait: false } : { ...scope, input, wait: false });
  const body = r.body || {};
  if (body.run_id) {
    showRun(body);
    // A run of one step (or up to one) is looked at here, on the nodes: the host stays.
    const step = scope.only || scope.until;
    notify('ran', step ? { run_id: body.run_id, step } : { run_id: body.run_id });
    followRun(body.run_id, version);
  } else {
    say(`Not run: ${body.error || 'HTTP ' + r.status}`, 'bad');
    if (Array.isArray(body.errors)) showRefusal(body);
  }
  return body;
}

/** Draws a run over the canvas and says where it stands, with a link to its page. */
function showRun(body) {
  runState = body;
  render();
  showRunStatus(body);
}

/** Says where a run stands, with a link to its page. */
function showRunStatus(body) {
  const status = $('status');
  status.replaceChildren(document.createTextNode(`${body.test ? 'Test run' : 'Run'} ${body.run_id}: ${String(body.status).replace(/_/g, ' ')}${body.error ? ' — ' + body.error : ''} · `),
    h('a', { href: 'index.html#/runs/' + body.run_id, 'data-testid': 'run-link', target: EMBED ? '_top' : undefined, text: 'open in the dashboard' }));
  status.className = 'status ' + (body.status === 'failed' ? 'bad' : 'good');
  status.title = status.textContent;
}

/** Reads a started run until it settles or parks. It is drawn over the canvas while the graph
 * is the one it ran; once the graph has changed, only the status line follows it. */
async function followRun(id, at) {
  for (;;) {
    const r = await api('GET', `/runs/${enc(id)}`);
    if (!r.body || r.body.run_id !== id) return;
    if (version === at) showRun(r.body);
    else showRunStatus(r.body);
    if (r.body.status !== 'running' && r.body.status !== 'queued') break;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  if (version !== at) return;
  lastRun = runState;
  if (isObj(runState.outputs)) Object.assign(lastSeen, runState.outputs);
  // The open node's panel shows the output the run gave it (unless someone is typing in it).
  const typing = document.activeElement && /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName) && document.activeElement.closest('#panel');
  if (!READ_ONLY && sel && sel.node !== undefined && !typing) renderPanel();
}

async function loadDesign(name) {
  if (READ_ONLY) return false;
  const r = await api('GET', `/designs/${enc(name)}`);
  if (r.body && r.body.ok && isObj(r.body.graph)) {
    if (!runInput.trim() && r.body.graph.example_input !== undefined) runInput = JSON.stringify(r.body.graph.example_input, null, 2);
    replaceGraph(r.body.graph, name);
    savedText = JSON.stringify(graph);
    savedAs = name;
    undoStack = []; redoStack = [];
    updateDirty();
    say(`Opened ${name}`);
    lastRun = null;
    lastSeen = {};
    loadLastRun();
    validate();
    return true;
  }
  if (r.status === 404) {
    setName(name);
    savedAs = '';
    say(`${name} is not saved yet: a blank design`);
    renderPanel();
    return false;
  }
  say(`Cannot open ${name}: ${r.body.error || 'HTTP ' + r.status}`, 'bad');
  return false;
}

/** Served: the server's model replaces the embedded copy (the two differ only when this page
 * and the binary come from different versions); `body[data-schema]` says which is in use. */
async function loadSchema() {
  const r = await api('GET', '/schema');
  if (r.status !== 200 || !isObj(r.body) || !Array.isArray(r.body.node_types)) return;
  if (useSchema(r.body, 'served')) {
    buildPalette();
    renderPanel();
  }
}

async function loadLists() {
  const [p, c, d] = await Promise.all([api('GET', '/profiles'), api('GET', '/channels'), api('GET', '/designs')]);
  // The designs a design step may call: every saved one but this.
  if (isObj(d.body) && d.body.ok && Array.isArray(d.body.designs)) {
    lists.designs = d.body.designs.map((x) => (isObj(x) ? x.name : x)).filter((x) => typeof x === 'string' && x !== designName);
  }
  // The catalog only when a backend is configured (without one, /models answers 503).
  const m = p.body.backend ? await api('GET', '/models') : { body: {} };
  if (p.body.ok && Array.isArray(p.body.profiles)) lists.profiles = p.body.profiles.map((x) => (isObj(x) ? x.name : x)).filter((x) => typeof x === 'string');
  if (m.body.ok && Array.isArray(m.body.models)) lists.models = m.body.models.map((x) => (isObj(x) ? x.id : x)).filter((x) => typeof x === 'string');
  if (c.body.ok && Array.isArray(c.body.channels)) {
    const t = new Set();
    for (const ch of c.body.channels) {
      if (!isObj(ch)) continue;
      if (typeof ch.target === 'string') t.add(ch.target);
      if (ch.home !== null && ch.home !== undefined && typeof ch.platform === 'string') t.add(`${ch.platform}:${ch.home}`);
    }
    lists.targets = [...t];
  }
  fillDatalists();
}
function fillDatalists() {
  for (const key of Object.keys(lists)) {
    let dl = document.getElementById('list-' + key);
    if (!dl) { dl = h('datalist', { id: 'list-' + key }); document.body.append(dl); }
    dl.replaceChildren(...lists[key].map((v) => h('option', { value: v })));
  }
}

