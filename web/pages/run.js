// One run (#/runs/<id>): the canvas in read-only run mode (web/designer.html colours each node by
// its step state), the run on a time axis (timeline.js), the steps, outputs and deliveries as
// recorded, and what the run waits for with the controls that answer it. Follows the run while it
// is running or waiting with long-poll reads, so a change shows as soon as it is made, on any
// instance (a gate answered elsewhere); stops when it settles. Every control calls the API and
// shows the run the server answers.
import { api, h, enc, badge, ago, when, elapsed, follow, say } from '../app.js';
import { testMark, keyMark } from './runs.js';
import { timelineSection } from './timeline.js';

// A run in any other status may still change: it runs, waits, or is parked at a gate or an agent
// step that someone may answer (here or on another instance).
const SETTLED = ['done', 'failed'];
const moving = (run) => !SETTLED.includes(run.status);

export async function render(root, page) {
  const [id] = page.params;
  const head = h('div', { class: 'title' });
  const meta = h('p', { class: 'muted' });
  const queue = h('p', { id: 'queue', class: 'notice info', hidden: true });
  const msg = h('div', { id: 'notice', class: 'notice', hidden: true });
  const problem = h('div');
  const actions = h('div', { class: 'toolbar' });
  const pending = h('section', { id: 'pending', hidden: true });
  const frame = h('iframe', { class: 'canvas run', title: `Run ${id}`, src: `designer.html?run=${enc(id)}&embed=1` });
  const timeline = timelineSection(page);
  const steps = h('section', { id: 'steps' });
  const outputs = h('section', { id: 'outputs' });
  const deliveries = h('section', { id: 'deliveries' });
  root.classList.add('wide');
  root.append(head, meta, queue, problem, actions, msg, pending, frame, timeline.section, steps, outputs, deliveries);

  const open = new Set(); // output panels the user opened, kept open across refreshes
  let shown = { updated: null, status: null, pendingKey: null };
  let models = null; // whether an agent backend is configured (GET /profiles says), asked once

  let last = null; // the run shown
  let newest; // the design's newest version number (null: none recorded), asked once
  // Elapsed times move on between two changes of the run (and the timeline's open bars grow,
  // its child runs read again).
  const ticker = setInterval(() => {
    if (!last || !moving(last)) return;
    steps.replaceChildren(h('h2', {}, 'Steps'), stepTable(last));
    timeline.show(last);
  }, 1000);
  page.onLeave(() => clearInterval(ticker));

  const refresh = follow(page, `/runs/${enc(id)}`, async (r) => {
    if (!r.body.run_id) {
      head.replaceChildren(h('h1', {}, `Run ${id}`));
      say(msg, 'error', r.body.error || 'This run cannot be read.');
      return false;
    }
    await show(r.body);
    return moving(r.body);
  });

  async function show(run) {
    last = run;
    head.replaceChildren(h('h1', {}, 'Run ', h('code', {}, run.run_id), ' ', badge(run.status), run.test ? [' ', testMark()] : null));
    if (newest === undefined) newest = await newestVersion(run.design);
    meta.replaceChildren('Design ', h('a', { href: `#/designer/${enc(run.design)}` }, run.design),
      ...versionNote(run, newest),
      ` · ${run.trigger && run.trigger.mode ? `${run.trigger.mode} run` : 'run'} · started ${when(run.created_at)} (${ago(run.created_at)}) · updated ${when(run.updated_at)}`,
      ...(run.retry_of ? [' · retry of ', h('a', { id: 'retry-of', href: `#/runs/${enc(run.retry_of)}` }, run.retry_of)] : []),
      ...(run.failure_of ? [' · started by the failure of ', h('a', { id: 'failure-of', href: `#/runs/${enc(run.failure_of)}` }, run.failure_of)] : []),
      ...(run.failure_run ? [' · its failure started ', h('a', { id: 'failure-run', href: `#/runs/${enc(run.failure_run)}` }, run.failure_run)] : []),
      ...(run.parent_run ? [' · started by a design step of ', h('a', { id: 'parent-run', href: `#/runs/${enc(run.parent_run)}` }, run.parent_run)] : []),
      ...(keyMark(run) ? [' · ', keyMark(run)] : []),
      ...(run.test ? [h('span', { id: 'test-note' }, ' · a test run: steps marked pinned gave their pinned output and did nothing (no command, call, model or delivery)')] : []));
    queue.replaceChildren(...queueLine(run).flat());
    queue.hidden = run.status !== 'queued';
    const handled = run.handled || [];
    problem.replaceChildren(run.error
      ? h('p', { class: 'notice error', id: 'run-error' }, run.failed_node ? [h('b', {}, run.failed_node), ': '] : null, run.error)
      : '', handled.length
      ? h('div', { class: 'notice warn', id: 'handled' },
        h('p', {}, `${run.status === 'done' ? 'Done with' : 'So far'} ${handled.length} handled error${handled.length === 1 ? '' : 's'}: the design took its error path${handled.length === 1 ? '' : 's'}.`),
        h('ul', {}, handled.map((e) => h('li', { 'data-handled': e.node }, h('b', {}, e.node), ': ', e.error))))
      : '');
    actions.replaceChildren(...[
      run.status === 'failed' ? h('button', { id: 'retry', class: 'primary', title: 'Resume at the failed step with the design this run started with', onclick: (e) => act(e.target, 'retry', {}) }, 'Retry') : null,
      SETTLED.includes(run.status) ? h('button', { id: 'retry-start', title: 'A new run of the design as saved now, with the same input', onclick: (e) => retryFromStart(e.target) }, 'Retry from start') : null,
      h('button', { onclick: () => refresh() }, 'Refresh'),
    ].filter(Boolean));
    steps.replaceChildren(h('h2', {}, 'Steps'), stepTable(run)); // elapsed times move on
    timeline.show(run); // not awaited: it reads the run's children and design version
    if (shown.updated !== run.updated_at) {
      // The canvas follows a run it sees moving; once it has shown a settled run it stops, so a
      // new status or a retried run makes it read the run afresh.
      const settled = SETTLED.includes(shown.status);
      if (shown.updated !== null && (run.status !== shown.status || settled) && frame.contentWindow) frame.contentWindow.location.reload();
      shown.updated = run.updated_at;
      shown.status = run.status;
      outputs.replaceChildren(h('h2', {}, 'Inputs and outputs'), outputList(run, open));
      deliveries.replaceChildren(...deliveryList(run));
    }
    const key = run.pending ? `${run.pending.type}:${run.pending.node}` : null;
    if (key !== shown.pendingKey) {
      shown.pendingKey = key;
      if (run.pending && run.pending.type === 'agent' && models === null) {
        models = Boolean((await api('GET', '/profiles')).body.backend);
      }
      pending.replaceChildren(...(run.pending ? pendingBlock(run.pending) : []));
      pending.hidden = !run.pending;
    }
    // Said last, once the page shows everything about this status (what it waits for included):
    // the page's readers (and its tests) take `data-status` as the page being up to date.
    head.dataset.status = run.status;
  }

  /** Posts `respond` or `retry`; shows the run it answers, or why not. */
  async function act(button, what, body) {
    const buttons = [...root.querySelectorAll('#pending button, #retry')];
    buttons.forEach((b) => { b.disabled = true; });
    const label = button.textContent;
    button.textContent = what === 'retry' ? 'Retrying…' : 'Sending…';
    const r = await api('POST', `/runs/${enc(id)}/${what}`, body);
    if (!page.alive) return;
    buttons.forEach((b) => { b.disabled = false; });
    button.textContent = label;
    if (r.body.run_id) {
      shown.pendingKey = undefined; // rebuild the pending block from the answer
      const verb = what === 'retry' ? 'Retried' : 'Answered';
      say(msg, r.body.status === 'failed' ? 'error' : 'ok', `${verb}: the run is now ${r.body.status.replace(/_/g, ' ')}.`);
      await show(r.body);
      if (moving(r.body)) refresh();
    } else {
      say(msg, 'error', r.body.error || `HTTP ${r.status}`);
      shown.updated = undefined;
      refresh();
    }
  }

  /** Starts a new run of the design's current version with this run's input and opens it. */
  async function retryFromStart(button) {
    button.disabled = true;
    button.textContent = 'Starting…';
    const r = await api('POST', `/runs/${enc(id)}/retry`, { from: 'start' });
    if (!page.alive) return;
    if (r.body.run_id) {
      location.hash = `#/runs/${enc(r.body.run_id)}`;
      return;
    }
    button.disabled = false;
    button.textContent = 'Retry from start';
    say(msg, 'error', r.body.error || `HTTP ${r.status}`);
  }

  function pendingBlock(p) {
    const title = h('h2', {}, 'Waiting for ', h('code', {}, p.node));
    if (p.type === 'approval') {
      // What the question is about: the text of each step (or of the input) it names.
      const about = Object.entries(p.outputs || {});
      return [title, p.run_id ? h('p', { class: 'muted small', id: 'asked-by' }, 'Asked by child run ', h('a', { href: `#/runs/${enc(p.run_id)}` }, p.run_id), '; the answer goes to it.') : null,
        h('p', { class: 'question' }, p.question),
        about.length ? h('div', { class: 'approving', 'data-testid': 'approving' }, h('h3', {}, 'What is being approved'),
          about.map(([node, text]) => h('details', { open: true, 'data-output': node },
            h('summary', {}, h('code', {}, node === 'trigger' ? 'run input' : node)), h('pre', {}, text)))) : null,
        h('div', { class: 'toolbar options' }, (p.options || []).map((o) =>
          h('button', { class: declines(o) ? 'decline' : 'primary', 'data-option': o, onclick: (e) => act(e.target, 'respond', { node: p.node, answer: o }) }, o))),
        h('p', { class: 'muted small' }, p.deadline
          ? `Answer by ${when(p.deadline)} (${ago(p.deadline)}); then the run ${p.on_timeout === 'escalate' ? 'fails and asks for escalation' : 'fails'}.`
          : 'No deadline.')];
    }
    if (p.type === 'agent') {
      const text = h('textarea', { rows: 6, name: 'output', 'aria-label': 'Agent output', placeholder: 'Paste the agent step’s output here' });
      const submit = h('button', { class: 'primary', onclick: (e) => act(e.target, 'respond', { node: p.node, output: text.value }) }, 'Submit output');
      const generate = models
        ? h('button', { onclick: (e) => act(e.target, 'respond', { node: p.node, agent_generate: true }) }, 'Generate')
        : null;
      return [title,
        h('p', { class: 'muted small' }, `Agent step${p.profile ? ` · profile ${p.profile}` : ''}${p.model ? ` · model ${p.model}` : ''}`),
        h('details', { open: true }, h('summary', {}, 'Prompt'), h('pre', {}, p.prompt)),
        text, h('div', { class: 'toolbar' }, submit, generate,
          models ? null : h('span', { class: 'muted small' }, 'No agent backend is configured: paste the output.'))];
    }
    if (p.type === 'wait' && p.next_attempt) {
      return [title, h('p', { id: 'retry-wait' }, `Attempt ${p.next_attempt} starts at ${when(p.resume_at)} (${ago(p.resume_at)}), as the step's retry policy says.`)];
    }
    if (p.type === 'wait') return [title, h('p', {}, `Resumes at ${when(p.resume_at)} (${ago(p.resume_at)}).`)];
    if (p.type === 'child') {
      return [title, h('p', { id: 'child-wait' }, p.started ? 'Waits for its child run ' : 'Starting its child run ',
        h('a', { href: `#/runs/${enc(p.run_id)}` }, p.run_id), ' of design ', h('code', {}, p.design), ' to end.')];
    }
    if (p.type === 'event') {
      return [title,
        h('p', { id: 'event-wait' }, 'Event ', h('code', {}, p.event), p.match ? [' where ', h('code', {}, p.match)] : ' (any payload)'),
        h('p', { class: 'muted small' }, p.deadline
          ? `Until ${when(p.deadline)} (${ago(p.deadline)}); then the run ${p.on_timeout === 'continue' ? 'goes on without it' : 'fails'}.`
          : 'No deadline.'),
        h('p', { class: 'muted small' }, 'Send it with ', h('code', {}, `POST /events/${p.event}`), ' or ', h('code', {}, `vwf emit ${p.event} --payload '…'`), '.')];
    }
    return [title, h('pre', {}, JSON.stringify(p, null, 2))];
  }

  await refresh();
}

/** What a queued run waits for: a slot of its design's runs-at-once limit, behind the oldest run
 * holding one, at its place in the line (1 is next). */
function queueLine(run) {
  if (run.status !== 'queued') return [];
  const q = run.queue;
  if (!q) return ['Queued: waiting for a slot (the design limits its runs at once).'];
  return ['Queued', q.behind ? [' behind run ', h('a', { id: 'queue-behind', href: `#/runs/${enc(q.behind)}` }, q.behind)] : '',
    ' · ', h('span', { id: 'queue-place', 'data-place': q.place }, `place ${q.place}`),
    q.key ? [' · key ', h('code', { id: 'queue-key' }, q.key)] : ''];
}

function stepTable(run) {
  if (!run.steps.length) return h('p', { class: 'muted' }, 'No step has started.');
  return h('table', { class: 'list' },
    h('thead', {}, h('tr', {}, ['Step', 'Status', 'Attempts', 'Elapsed', 'Error'].map((c) => h('th', {}, c)))),
    h('tbody', {}, run.steps.map((s) => [h('tr', { 'data-node': s.node, 'data-status': s.status },
      h('td', {}, h('code', {}, s.node)),
      h('td', {}, badge(s.status), s.pinned ? [' ', h('span', { class: 'badge s-pinned', 'data-pinned': '' }, 'pinned')] : null),
      h('td', {}, s.attempts),
      h('td', {}, s.started_at ? elapsed(s.started_at, s.finished_at || new Date().toISOString()) : ''),
      h('td', { class: 'error' }, s.error || '')), triesRow(s), childRow(run, s)])),
    run.skipped.length ? h('caption', { class: 'muted small' }, `Skipped: ${run.skipped.join(', ')}`) : null);
}

/** Under a design step, the run it started, nested and clickable: the one it waits for, or
 * the one whose outputs it took. */
function childRow(run, step) {
  const out = (run.outputs || {})[step.node.split('#')[0]];
  const p = run.pending;
  let child = null;
  if (p && p.type === 'child' && p.node === step.node) child = { id: p.run_id, design: p.design, status: p.started ? 'running' : 'starting' };
  else if (p && p.run_id && typeof p.node === 'string' && p.node.startsWith(`${step.node}/`)) child = { id: p.run_id, design: '', status: p.type === 'approval' ? 'awaiting_approval' : 'awaiting_agent' };
  else if (out && typeof out.run_id === 'string' && typeof out.design === 'string') child = { id: out.run_id, design: out.design, status: out.status };
  if (!child) return null;
  return h('tr', { class: 'child-run', 'data-child-of': step.node },
    h('td', { colspan: 5 }, '↳ child run ', h('a', { href: `#/runs/${enc(child.id)}`, 'data-child-run': child.id }, child.id),
      child.design ? [' of ', h('code', {}, child.design)] : null, ' ', badge(child.status)));
}

/** Every attempt of a step that took more than one (retries, run retries), or that waits for
 * its next, under its row. */
function triesRow(step) {
  const tries = Array.isArray(step.tries) ? step.tries : [];
  if (tries.length < 2 && !tries.some((t) => typeof t.delay_ms === 'number')) return null;
  return h('tr', { class: 'tries', 'data-tries-of': step.node },
    h('td', { colspan: 5 }, h('ol', { class: 'tries small' }, tries.map((t) => h('li', { 'data-attempt': t.attempt, 'data-status': t.status },
      `Attempt ${t.attempt} `, badge(t.status), ` started ${when(t.started_at)}`,
      t.finished_at ? ` · took ${elapsed(t.started_at, t.finished_at)}` : '',
      typeof t.output_bytes === 'number' ? ` · ${t.output_bytes} bytes of output` : '',
      t.error ? [' · ', h('span', { class: 'error' }, t.error)] : null,
      typeof t.delay_ms === 'number' ? h('span', { class: 'muted', 'data-delay': t.delay_ms }, ` · next attempt ${seconds(t.delay_ms)} later`) : null)))));
}

/** A wait in milliseconds as people say it. */
function seconds(ms) {
  return ms < 60000 ? `${Math.round(ms / 100) / 10} s` : `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

const VIEW_BASICS = ['text', 'data', 'deliveries'];

/** Each step's output, next to what it received (its rendered inputs, secrets shown as ***). */
function outputList(run, open) {
  // In the order the steps ran (the map itself is keyed by id).
  const inputs = Object.fromEntries(run.steps.filter((s) => s.inputs).map((s) => [s.node, s.inputs]));
  const ids = [...new Set([...run.steps.map((s) => s.node), ...Object.keys(run.outputs)])].filter((id) => id in run.outputs || id in inputs);
  if (!ids.length) return h('p', { class: 'muted' }, 'No outputs yet.');
  return h('div', {}, ids.map((node) => {
    const view = run.outputs[node] || {};
    const extra = Object.entries(view).filter(([k]) => !VIEW_BASICS.includes(k));
    const panel = h('details', { 'data-node': node, open: open.has(node) },
      h('summary', {}, h('code', {}, node), h('span', { class: 'muted small' }, ` ${short(view.text, 80)}`)),
      h('div', { class: 'received-output' },
        node in inputs ? h('div', { class: 'inputs', 'data-inputs-of': node }, h('h3', {}, 'Received'), h('pre', {}, JSON.stringify(inputs[node], null, 2))) : null,
        h('div', { class: 'output' }, node in inputs ? h('h3', {}, 'Output') : null, h('pre', {}, view.text ?? ''))),
      view.data !== null && view.data !== undefined
        ? h('details', {}, h('summary', {}, 'data'), h('pre', {}, JSON.stringify(view.data, null, 2))) : null,
      extra.length ? h('dl', { class: 'fields' }, extra.map(([k, v]) => [h('dt', {}, k), h('dd', {}, short(typeof v === 'string' ? v : JSON.stringify(v), 300))])) : null);
    panel.addEventListener('toggle', () => (panel.open ? open.add(node) : open.delete(node)));
    return panel;
  }));
}

function deliveryList(run) {
  if (!run.deliveries.length) return [];
  return [h('h2', {}, 'Deliveries'), h('table', { class: 'list' },
    h('thead', {}, h('tr', {}, ['Node', 'Target', 'Result', 'Detail', 'At'].map((c) => h('th', {}, c)))),
    h('tbody', {}, run.deliveries.map((d) => h('tr', { 'data-ok': String(d.ok) },
      h('td', {}, h('code', {}, d.node)), h('td', {}, d.target),
      h('td', {}, badge(d.ok ? 'delivered' : 'failed')), h('td', {}, d.detail || ''), h('td', { title: d.at }, when(d.at))))))];
}

function short(text, n) {
  const s = String(text ?? '').replace(/\s+/g, ' ').trim();
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

/** The newest recorded version of a design, or null. */
async function newestVersion(design) {
  // A deleted design's history answers 404 (it is shown again once the name is saved again):
  // ask only about a design that exists.
  const list = await api('GET', '/designs');
  if (!(list.body.designs || []).includes(design)) return null;
  const r = await api('GET', `/designs/${enc(design)}/versions`);
  const versions = (r.body.ok && r.body.versions) || [];
  return versions.length ? versions[versions.length - 1].version : null;
}

/** ` (version N)` linking to that version on the design page, and a mark when the design has a
 * newer version than the one the run ran. */
function versionNote(run, newest) {
  if (run.version === null || run.version === undefined) return [];
  const link = h('a', { id: 'run-version', href: `#/designer/${enc(run.design)}?version=${run.version}` }, `version ${run.version}`);
  const changed = newest !== null && newest !== run.version
    ? [' ', h('span', { id: 'design-changed', class: 'badge', title: `The design is at version ${newest} now.` }, 'design changed since this run')]
    : [];
  return [' (', link, ')', ...changed];
}

/** Whether a gate's option says no (reject, skip, hold…): drawn apart from the ones that go on. */
function declines(option) {
  return /^(reject|rejected|no|deny|denied|decline|skip|hold|cancel|stop|abort|block|veto|disapprove|refuse)\b/i.test(String(option).trim());
}
