// ---------------------------------------------------------------------------------------------
// Read-only run view (?run=<id>)
// ---------------------------------------------------------------------------------------------
const STEP_STATE = { done: 'done', failed: 'failed', running: 'running', retrying: 'running', waiting: 'pending', awaiting_approval: 'pending', awaiting_agent: 'pending', awaiting_event: 'pending' };
const STATE_RANK = { failed: 4, running: 3, pending: 2, done: 1 };

function stepRecords(id) {
  if (!runState || !Array.isArray(runState.steps)) return [];
  return runState.steps.filter((s) => isObj(s) && (s.node === id || (typeof s.node === 'string' && s.node.startsWith(id + '#'))));
}

/** A node's state in the run: done, failed, skipped, running or pending (loop passes aggregated). */
function nodeState(n) {
  if (!runState || n.type === 'note') return null;
  // The trigger fired when the run began: "started" while it works, "done" once it has finished;
  // a run waiting for a slot (the design's runs-at-once limit) has not started.
  if (n.type === 'trigger' && runState.status === 'queued') return { state: 'pending', text: 'queued' };
  if (n.type === 'trigger') return { state: 'done', text: ['done', 'failed'].includes(runState.status) ? 'done' : 'started' };
  const pend = runState.pending;
  if (isObj(pend) && pend.node === n.id) return { state: 'pending', text: runState.status === 'awaiting_approval' ? 'awaiting answer' : runState.status === 'awaiting_agent' ? 'awaiting agent' : runState.status === 'awaiting_event' ? 'awaiting event' : 'waiting' };
  if (Array.isArray(runState.skipped) && runState.skipped.includes(n.id)) return { state: 'skipped', text: 'skipped' };
  const recs = stepRecords(n.id);
  if (!recs.length) return runState.failed_node === n.id ? { state: 'failed', text: 'failed' } : null;
  let best = null;
  for (const r of recs) {
    const s = STEP_STATE[r.status] || 'running';
    if (!best || STATE_RANK[s] > STATE_RANK[best]) best = s;
  }
  const passes = recs.filter((r) => r.node !== n.id).length;
  if (best === 'done' && recs.every((r) => r.pinned)) return { state: best, text: 'pinned' };
  // A failure the design handled (an error path, `on_error: continue`): failed, and handled.
  const handled = Array.isArray(runState.handled) ? runState.handled.filter((h) => isObj(h) && recs.some((r) => r.node === h.node)).length : 0;
  if (best === 'failed' && handled) return { state: 'handled', text: passes ? `handled ×${handled}` : 'failed · handled' };
  return { state: best, text: passes ? `${best} ×${passes}` : best };
}

/** The graph a run's plan describes: its trigger, its steps, and edges from their parents. */
function graphFromPlan(plan) {
  const out = { nodes: [], edges: [] };
  if (isObj(plan.trigger)) out.nodes.push(plan.trigger);
  for (const step of Array.isArray(plan.steps) ? plan.steps : []) {
    if (!isObj(step) || !isObj(step.node)) continue;
    out.nodes.push(step.node);
    for (const p of Array.isArray(step.parents) ? step.parents : []) {
      if (!isObj(p)) continue;
      const e = { from: p.from, to: step.id };
      if (p.label !== undefined && p.label !== null) e.label = p.label;
      out.edges.push(e);
    }
  }
  return out;
}

let runTimer = null;
async function loadRun(first) {
  clearTimeout(runTimer);
  const r = await api('GET', `/runs/${enc(RUN_ID)}?plan=1`);
  const body = r.body || {};
  if (!body.run_id) { say(`Cannot open run ${RUN_ID}: ${body.error || 'HTTP ' + r.status}`, 'bad'); showRunError(body.error || `HTTP ${r.status}`); return; }
  if (first) {
    if (isObj(body.plan)) graph = graphFromPlan(body.plan);
    else {
      const d = await api('GET', `/designs/${enc(body.design)}`);
      if (d.body && d.body.ok && isObj(d.body.graph)) graph = d.body.graph;
      else { runState = body; showRunError(`the run's design ${body.design} cannot be loaded (${d.body.error || 'HTTP ' + d.status}); its steps are listed here`); }
    }
    setName(body.design);
    layout();
  }
  runState = body;
  version++;
  render();
  renderPanel();
  if (first) fit();
  say(`Run ${body.run_id} of ${body.design}: ${body.status}`, body.status === 'failed' ? 'bad' : body.status === 'done' ? 'good' : '');
  if (body.status !== 'done' && body.status !== 'failed') runTimer = setTimeout(() => loadRun(false), 700);
}
let runError = null;
function showRunError(message) { runError = message; renderPanel(); }

function kv(label, value) {
  return h('div', { class: 'field' }, h('label', { text: label }), typeof value === 'string' ? h('div', { text: value }) : value);
}
function renderRunPanel(box) {
  if (VERSION) { renderVersionPanel(box); return; }
  const r = runState;
  if (!r) { box.append(h('p', { class: 'muted', text: runError ? 'Error: ' + runError : 'Loading the run…' })); return; }
  if (runError) box.append(h('p', { class: 'muted', text: runError }));
  const node = sel && sel.node !== undefined ? nodes()[sel.node] : null;
  if (!isObj(node)) {
    box.append(h('div', { class: 'heading' }, h('h3', { text: `Run ${r.run_id}` }), h('span', { class: 'badge', 'data-testid': 'run-status', text: r.status })));
    box.append(kv('Design', String(r.design)));
    if (r.error) box.append(kv('Error', h('pre', { text: r.error + (r.failed_node ? `\n(at ${r.failed_node})` : '') })));
    if (isObj(r.pending)) box.append(kv('Waiting for', pendingView(r.pending)));
    if (Array.isArray(r.deliveries) && r.deliveries.length) box.append(kv('Deliveries', deliveriesList(r.deliveries)));
    box.append(kv('Started', String(r.created_at || '')));
    box.append(kv('Updated', String(r.updated_at || '')));
    if (!EMBED) box.append(h('p', {}, h('a', { href: 'index.html#/runs/' + r.run_id, 'data-testid': 'run-link', text: 'Open this run in the dashboard' })));
    box.append(h('p', { class: 'muted', text: 'Select a node to see its step.' }));
    return;
  }
  const st = nodeState(node);
  box.append(h('div', { class: 'heading' }, h('h3', { text: node.label || node.id }),
    h('span', { class: 'badge', 'data-testid': 'step-state', text: st ? st.state : node.type === 'note' ? 'note' : 'not reached' })));
  box.append(h('p', { class: 'muted', text: `${node.type} · ${node.id}` }));
  if (isObj(r.pending) && r.pending.node === node.id) box.append(kv('Waiting for', pendingView(r.pending)));
  const recs = stepRecords(node.id);
  for (const rec of recs) {
    const lines = [`${rec.node}: ${rec.status}`, `attempts: ${rec.attempts}`, `started: ${rec.started_at}`];
    if (rec.finished_at) lines.push(`finished: ${rec.finished_at}`);
    if (rec.error) lines.push(`error: ${rec.error}`);
    for (const f of Array.isArray(rec.failures) ? rec.failures : []) lines.push(`earlier failure: ${f}`);
    box.append(h('pre', { 'data-testid': 'step-' + rec.node, text: lines.join('\n') }));
  }
  if (r.failed_node === node.id && r.error) box.append(kv('Error', h('pre', { 'data-testid': 'step-error', text: r.error })));
  const out = isObj(r.outputs) ? r.outputs[node.id] : undefined;
  if (out !== undefined) {
    const text = isObj(out) && typeof out.text === 'string' ? out.text : JSON.stringify(out, null, 2);
    box.append(kv('Output', h('pre', { 'data-testid': 'step-output', text })));
    box.append(h('details', {}, h('summary', { text: 'Output view (JSON)' }), h('pre', { text: JSON.stringify(out, null, 2) })));
  }
  const dels = Array.isArray(r.deliveries) ? r.deliveries.filter((d) => isObj(d) && d.node === node.id) : [];
  if (dels.length) box.append(kv('Deliveries', deliveriesList(dels)));
}
/** What a parked run waits for, in words (answering it is the dashboard's job). */
function pendingView(p) {
  const lines = [];
  if (p.type === 'approval') {
    lines.push(`A person answers ${p.node}: ${p.question}`, `Options: ${(Array.isArray(p.options) ? p.options : []).join(', ')}`);
    lines.push(p.deadline ? `Deadline: ${p.deadline} (then ${p.on_timeout})` : 'No deadline');
    // What is being approved: the outputs the question names.
    for (const [id, text] of Object.entries(isObj(p.outputs) ? p.outputs : {})) lines.push('', `${id === 'trigger' ? 'run input' : id}:`, String(text));
  } else if (p.type === 'agent') {
    lines.push(`Agent step ${p.node}${p.profile ? ' (profile ' + p.profile + ')' : ''}${p.model ? ' (model ' + p.model + ')' : ''}`, '', String(p.prompt ?? ''));
  } else if (p.type === 'wait') {
    lines.push(`${p.node} resumes at ${p.resume_at}`);
  } else lines.push(JSON.stringify(p, null, 2));
  return h('pre', { 'data-testid': 'pending', text: lines.join('\n') });
}

function deliveriesList(dels) {
  return h('ul', { 'data-testid': 'deliveries' }, ...dels.map((d) => h('li', { text: `${d.ok ? '✓' : '✗'} ${d.target}: ${d.detail}${d.at ? ' (' + d.at + ')' : ''}` })));
}

