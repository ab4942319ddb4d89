// One run (#/runs/<id>): the canvas in read-only run mode (web/designer.html colours each node by
// its step state), the run on a time axis (timeline.js), the steps, outputs and deliveries as
// recorded, and what the run waits for with the controls that answer it. Follows the run while it
// is running or waiting with long-poll reads, so a change shows as soon as it is made, on any
// instance (a gate answered elsewhere); stops when it settles. Every control calls the API and
// shows the run the server answers. A gate with a form (`fields`) or steps a person may rewrite
// (`edit`) shows them above its options; the server checks the answer whole. A gate that counts
// its answers (`approvers`) shows the answers so far and where it was announced, kept up to date
// in place (what is typed into the block stays), and asks who answers.
import { api, h, enc, badge, ago, when, elapsed, follow, say } from '../app.js';
import { testMark, keyMark } from './runs.js';
import { timelineSection } from './timeline.js';
import { lineDiff } from './linediff.js';
import { runDialog } from './run-dialog.js';
import { folded } from './versions.js';

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
  const openRows = new Set(); // the same for the originals of edited steps in the steps list
  let shown = { updated: null, status: null, pendingKey: null };
  let models = null; // whether an agent backend is configured (GET /profiles says), asked once
  let gateNow = null; // redraws the open gate's answers and notices from a newer read of the run

  let last = null; // the run shown
  let newest; // the design's newest version number (null: none recorded), asked once
  // Elapsed times move on between two changes of the run (and the timeline's open bars grow,
  // its child runs read again).
  const ticker = setInterval(() => {
    if (!last || !moving(last)) return;
    steps.replaceChildren(h('h2', {}, 'Steps'), stepTable(last, openRows));
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
    const missing = run.status === 'failed' ? missingInput(run.error) : null;
    if (missing) problem.append(h('p', { class: 'notice warn', id: 'missing-input' }, 'The run\u2019s input has no ', h('code', {}, missing),
      ': a retry would fail the same way. Run it again with that value in its input.'));
    actions.replaceChildren(...[
      missing ? h('button', { id: 'run-with-input', class: 'primary', onclick: () => runAgainWithInput(run) }, 'Run again with input\u2026') : null,
      run.status === 'failed' ? h('button', { id: 'retry', class: missing ? '' : 'primary', title: 'Resume at the failed step with the design this run started with', onclick: (e) => act(e.target, 'retry', {}) }, 'Retry') : null,
      SETTLED.includes(run.status) ? h('button', { id: 'retry-start', title: 'A new run of the design as saved now, with the same input', onclick: (e) => retryFromStart(e.target) }, 'Retry from start') : null,
      h('button', { onclick: () => refresh() }, 'Refresh'),
    ].filter(Boolean));
    steps.replaceChildren(h('h2', {}, 'Steps'), stepTable(run, openRows)); // elapsed times move on
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
      page.guard = null; // a gate's block sets its own: what typing into it would lose
      gateNow = null;
      pending.replaceChildren(...(run.pending ? pendingBlock(run.pending).filter(Boolean) : [])); // (replaceChildren writes a null as "null")
      pending.hidden = !run.pending;
    }
    // A new answer or notice at the same gate: only its part is drawn again.
    if (gateNow && run.pending) gateNow(run);
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

  /** Answers gate `p` with option `o`: the form's values, the changed texts and who answers, as
   * given. A json field that does not parse is said here and nothing is sent; anything else the
   * server checks (a 400 is said the same way, and the form keeps what was typed). */
  function answer(button, p, o, form, edit, by) {
    const body = { node: p.node, answer: o };
    if (form.asks) {
      const values = form.values();
      if (values.error) {
        say(msg, 'error', `${JSON.stringify(p.node)}: ${values.error}`);
        return;
      }
      body.fields = values.fields;
    }
    const edits = edit.changed();
    if (Object.keys(edits).length) body.edits = edits;
    if (by.name()) body.by = by.name();
    else if (p.approvers) {
      by.invalid();
      say(msg, 'error', `${JSON.stringify(p.node)}: this gate counts who answers; type your name first.`);
      return;
    }
    act(button, 'respond', body);
  }

  /** Starts a new run of the design's current version with this run's input and opens it. */
  /** The run dialog, offering this run's input to complete; the new run opens once started. */
  async function runAgainWithInput(run) {
    const input = run.trigger ? run.trigger.input : undefined;
    await runDialog(run.design, async (given) => {
      const r = await api('POST', `/designs/${enc(run.design)}/run`, given === undefined ? { wait: false } : { input: given, wait: false });
      if (r.body.run_id) location.hash = `#/runs/${r.body.run_id}`;
      else problem.append(h('p', { class: 'notice error', id: 'run-again-error' }, `Not started: ${r.body.error}`));
    }, { input: input === null ? undefined : input, from: `the input of run ${run.run_id}` });
  }

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
      // What the question is about: the text of each step (or of the input) it names; a step the
      // person may rewrite shows once, in its editor.
      const edit = gateEdits(p.edit);
      const about = Object.entries(p.outputs || {}).filter(([node]) => !edit.nodes.includes(node));
      const form = gateForm(p.fields);
      const by = nameInput(p.approvers);
      const status = gateStatus(p);
      gateNow = (run) => status.update(run.pending, run.deliveries);
      page.guard = () => (form.dirty() || edit.dirty() ? `Your answer to ${p.node} is not sent yet. Leave without sending it?` : null);
      return [title, p.run_id ? h('p', { class: 'muted small', id: 'asked-by' }, 'Asked by child run ', h('a', { href: `#/runs/${enc(p.run_id)}` }, p.run_id), '; the answer goes to it.') : null,
        h('p', { class: 'question' }, p.question),
        p.context ? h('div', { class: 'gate-context', 'data-testid': 'gate-context' }, h('h3', {}, 'Context'), h('pre', {}, p.context)) : null,
        status.el,
        about.length ? h('div', { class: 'approving', 'data-testid': 'approving' }, h('h3', {}, 'What is being approved'),
          about.map(([node, text]) => h('details', { open: true, 'data-output': node },
            h('summary', {}, h('code', {}, node === 'trigger' ? 'run input' : node)), h('pre', {}, text)))) : null,
        form.el, edit.el, by.el,
        h('div', { class: 'toolbar options' }, (p.options || []).map((o) =>
          h('button', { class: declines(o) ? 'decline' : 'primary', 'data-option': o, 'data-veto': vetoes(p, o) ? '' : null,
            title: vetoes(p, o) ? 'Ends the gate at once' : null, onclick: (e) => answer(e.target, p, o, form, edit, by) }, o))),
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

/** Each step that started: its state, attempts and time; under it its tries, its child run,
 * what a person changed of its text at a gate, and a gate's form as answered. `openRows` holds
 * the originals the person opened, kept open as the table is drawn again. */
function stepTable(run, openRows) {
  if (!run.steps.length) return h('p', { class: 'muted' }, 'No step has started.');
  return h('table', { class: 'list' },
    h('thead', {}, h('tr', {}, ['Step', 'Status', 'Attempts', 'Elapsed', 'Error'].map((c) => h('th', {}, c)))),
    h('tbody', {}, run.steps.map((s) => [h('tr', { 'data-node': s.node, 'data-status': s.status },
      h('td', {}, h('code', {}, s.node)),
      h('td', {}, badge(s.status), s.pinned ? [' ', h('span', { class: 'badge s-pinned', 'data-pinned': '' }, 'pinned')] : null),
      h('td', {}, s.attempts),
      h('td', {}, s.started_at ? elapsed(s.started_at, s.finished_at || new Date().toISOString()) : ''),
      h('td', { class: 'error' }, s.error || '')), triesRow(s), childRow(run, s), editedRow(run, s, openRows), answerRow(run, s)])),
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

/** Under a step whose text a person changed at a gate: who and when, and the original text. */
function editedRow(run, step, openRows) {
  const edited = ((run.outputs || {})[step.node] || {}).edited;
  if (!edited || typeof edited !== 'object') return null;
  const key = `edited:${step.node}`;
  const panel = h('details', { open: openRows.has(key) },
    h('summary', {}, editedLine(edited)),
    h('pre', { class: 'original', 'data-original-of': step.node }, edited.original ?? ''));
  panel.addEventListener('toggle', () => (panel.open ? openRows.add(key) : openRows.delete(key)));
  return h('tr', { class: 'edited', 'data-edited-of': step.node }, h('td', { colspan: 5 }, panel));
}

/** "✎ edited by ada at <time> · the original" (no name when none was given). */
function editedLine(edited) {
  return [h('span', { class: 'badge s-edited' }, '✎ edited'), edited.by ? [' by ', h('b', {}, edited.by)] : null,
    edited.at ? ` at ${when(edited.at)}` : null, h('span', { class: 'muted small' }, ' · the original')];
}

/** Under a gate answered with a form or a name: the option, who chose it, the values it got,
 * and each answer a gate that counts them took. */
function answerRow(run, step) {
  const view = (run.outputs || {})[step.node] || {};
  const fields = view.fields && typeof view.fields === 'object' ? Object.entries(view.fields) : [];
  const votes = Array.isArray(view.approvers) ? view.approvers : [];
  if (!fields.length && !view.by && !votes.length) return null;
  return h('tr', { class: 'gate-answer', 'data-answer-of': step.node },
    h('td', { colspan: 5 }, 'Answered ', h('b', {}, view.answer ?? view.text ?? ''), view.by ? [' by ', h('b', {}, view.by)] : null,
      votes.length ? [` · ${votes.length} answer${votes.length === 1 ? '' : 's'}:`, votesList(votes)] : null,
      fields.length ? h('dl', { class: 'fields' }, fields.map(([k, v]) => [h('dt', {}, k), h('dd', { 'data-field': k }, fieldText(v))])) : null));
}

/** A gate's answers, one a line: "approve by ann (api) at <time>". */
function votesList(votes) {
  return h('ol', { class: 'votes' }, votes.map((v) => h('li', { 'data-by': v.by ?? '', 'data-answer': v.answer ?? '' },
    h('b', {}, v.answer ?? ''), v.by ? [' by ', h('b', {}, v.by)] : null, v.via ? ` (${v.via})` : null,
    v.at ? h('span', { title: v.at }, ` at ${when(v.at)}`) : null)));
}

/** A form value as shown: a text as it is, none as "—", anything else as JSON. */
function fieldText(v) {
  if (v === null || v === undefined) return '—';
  return typeof v === 'string' ? v : JSON.stringify(v);
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
      extra.length ? h('dl', { class: 'fields' }, extra.map(([k, v]) => [h('dt', {}, k), h('dd', {}, extraValue(k, v))])) : null);
    panel.addEventListener('toggle', () => (panel.open ? open.add(node) : open.delete(node)));
    return panel;
  }));
}

/** One more field of an output as shown: a gate's form values each on its line, an edited
 * step's who and when with its original text, anything else short. */
function extraValue(key, v) {
  if (key === 'fields' && v && typeof v === 'object' && !Array.isArray(v)) {
    return h('dl', { class: 'fields' }, Object.entries(v).map(([k, x]) => [h('dt', {}, k), h('dd', {}, short(fieldText(x), 300))]));
  }
  if (key === 'approvers' && Array.isArray(v)) return votesList(v.filter((x) => x && typeof x === 'object'));
  if (key === 'edited' && v && typeof v === 'object') {
    return h('details', {}, h('summary', {}, editedLine(v)), h('pre', {}, v.original ?? ''));
  }
  return short(typeof v === 'string' ? v : JSON.stringify(v), 300);
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

/** Whether one answer `option` ends gate `p` at once (its approvers' `veto`). */
function vetoes(p, option) {
  return Boolean(p.approvers && Array.isArray(p.approvers.veto) && p.approvers.veto.includes(option));
}

/** "2 people", "one person". */
const people = (n) => (n === 1 ? 'one person' : `${n} people`);

/** What an open gate has so far, drawn again from each newer read (`update(pending, deliveries)`):
 * for a gate that counts its answers (`approvers`), how many of how many, each answer given, who
 * may answer and which answer ends it at once; for a gate that was announced (`notify`), each
 * notice sent (the run's deliveries of this gate) and whether it went out. Empty otherwise. */
function gateStatus(p) {
  const el = h('div', { class: 'gate-status', 'data-testid': 'gate-status' });
  const update = (pending, deliveries) => {
    if (!pending || pending.node !== p.node) return;
    const a = pending.approvers && typeof pending.approvers === 'object' ? pending.approvers : null;
    const sent = (Array.isArray(deliveries) ? deliveries : []).filter((d) => d.node === p.node);
    // Targets not sent to yet: none once the gate says it was announced (a child run's gate
    // records its notices with that run).
    const unsent = Array.isArray(pending.notify) && !pending.notified ? pending.notify : [];
    el.replaceChildren(...[a ? approversPart(a, Array.isArray(pending.votes) ? pending.votes : []) : null,
      sent.length || unsent.length ? notifiedPart(unsent, sent) : null].filter(Boolean));
  };
  return { el, update };
}

/** "1 of 2 answers:" and the answers, what the gate needs, who may answer, what ends it. */
function approversPart(a, votes) {
  const required = Number(a.required) || 1;
  const veto = Array.isArray(a.veto) ? a.veto : [];
  const allowed = Array.isArray(a.allowed) ? a.allowed : [];
  // The gate ends at the required-th same answer: with different answers, each counts apart.
  const answers = [...new Set(votes.map((v) => v.answer))];
  const plural = required === 1 ? 'answer' : 'answers';
  const count = answers.length > 1
    ? answers.map((o) => `${JSON.stringify(o)}: ${votes.filter((v) => v.answer === o).length} of ${required}`).join(' · ')
    : `${votes.length} of ${required} ${plural}`;
  return h('div', { class: 'gate-approvers', 'data-testid': 'gate-approvers' },
    h('h3', {}, 'Answers'),
    h('p', { 'data-testid': 'votes-count', 'data-votes': votes.length, 'data-required': required }, count, votes.length ? ':' : ' yet.'),
    votes.length ? votesList(votes) : null,
    h('p', { class: 'muted small', 'data-testid': 'approvers-rule' },
      `Needs ${people(required)} to give the same answer`,
      a.distinct === false ? '; one person may answer more than once' : required > 1 ? ', each person once' : '',
      veto.length ? ['; ', veto.map((o, i) => [i ? ' or ' : '', h('b', {}, o)]), ' ends it at once'] : '', '.'),
    allowed.length ? h('p', { class: 'muted small', 'data-testid': 'approvers-allowed' }, 'Only these may answer: ',
      allowed.map((who, i) => [i ? ', ' : '', h('code', {}, who)]), '.') : null);
}

/** Where the gate's question was sent when it opened: each target, whether it went out, why not;
 * and the targets `notify` names that nothing was recorded for yet. */
function notifiedPart(notify, sent) {
  const waiting = notify.filter((t) => !sent.some((d) => d.target === t));
  return h('div', { class: 'gate-notified', 'data-testid': 'gate-notified' },
    h('h3', {}, 'Notified'),
    sent.length ? h('ul', {}, sent.map((d) => h('li', { 'data-target': d.target, 'data-ok': String(Boolean(d.ok)) },
      h('code', {}, d.target), ' ', badge(d.ok ? 'delivered' : 'failed'), d.detail ? ` ${d.detail}` : '',
      d.at ? h('span', { class: 'muted small', title: d.at }, ` · ${when(d.at)}`) : null))) : null,
    waiting.length ? h('p', { class: 'muted small' }, 'Not sent yet: ', waiting.map((t, i) => [i ? ', ' : '', h('code', {}, t)]), '.') : null);
}

/** Whether a gate's option says no (reject, skip, hold…): drawn apart from the ones that go on. */
function declines(option) {
  return /^(reject|rejected|no|deny|denied|decline|skip|hold|cancel|stop|abort|block|veto|disapprove|refuse)\b/i.test(String(option).trim());
}

// Gates with forms and edits: the inputs a gate's `fields` declare, the steps its `edit` lets a
// person rewrite, and who answers. The browser only gathers what was given; the server checks it
// (README, "Gates with forms and edits").

/** The characters a text field takes when its declaration says none (the server's default). */
const TEXT_LENGTH = 10000;
/** Past this many characters a text field is a textarea. */
const SHORT_TEXT = 200;
/** Where the dashboard remembers the name a person answers gates with. */
const NAME_KEY = 'vwf-answer-by';
/** Lines of unchanged text kept beside a change in an edit's diff; longer stretches fold. */
const CONTEXT = 2;

/** The form of a gate's `fields`, one input per field, defaults filled in. `values()` is
 * `{fields}` to send (an empty optional input left out, so the server applies its default; a
 * checkbox always sent) or `{error}` for a json field that does not parse; `dirty()` whether
 * anything changed since it was drawn. */
function gateForm(declared) {
  const rows = (Array.isArray(declared) ? declared : [])
    .filter((f) => f && typeof f.name === 'string')
    .map((f) => ({ f, input: fieldInput(f) }));
  const state = (input) => (input.type === 'checkbox' ? String(input.checked) : input.value);
  const initial = rows.map(({ input }) => state(input));
  return {
    asks: rows.length > 0,
    el: rows.length ? h('div', { class: 'gate-form', 'data-testid': 'gate-form' }, h('h3', {}, 'Your answer'), rows.map(fieldRow)) : null,
    dirty: () => rows.some(({ input }, i) => state(input) !== initial[i]),
    values() {
      const fields = {};
      for (const { f, input } of rows) {
        input.removeAttribute('aria-invalid');
        if (f.type === 'boolean') { fields[f.name] = input.checked; continue; }
        if (input.value.trim() === '') continue;
        if (f.type === 'number') fields[f.name] = Number(input.value);
        else if (f.type === 'json') {
          try {
            fields[f.name] = JSON.parse(input.value);
          } catch (e) {
            input.setAttribute('aria-invalid', 'true');
            input.focus();
            return { error: `fields.${f.name}: is not valid JSON (${e.message})` };
          }
        } else fields[f.name] = input.value;
      }
      return { fields };
    },
  };
}

/** The input of one declared field, by its type, its default filled in. */
function fieldInput(f) {
  const attrs = { id: `gate-field-${f.name}`, name: f.name, 'data-field': f.name, required: Boolean(f.required) };
  const given = f.default;
  if (f.type === 'number') return h('input', { ...attrs, type: 'number', step: 'any', value: typeof given === 'number' ? String(given) : null });
  if (f.type === 'boolean') return h('input', { ...attrs, type: 'checkbox', required: false, checked: given === true });
  if (f.type === 'choice') {
    return h('select', attrs, f.required ? null : h('option', { value: '' }, '—'),
      (Array.isArray(f.options) ? f.options : []).map((o) => h('option', { value: o, selected: o === given }, o)));
  }
  if (f.type === 'json') {
    return h('textarea', { ...attrs, rows: 4, spellcheck: 'false', value: given === undefined || given === null ? null : JSON.stringify(given, null, 2) });
  }
  const max = Number(f.max_length) || TEXT_LENGTH;
  const text = { ...attrs, maxlength: max, value: typeof given === 'string' ? given : null };
  return max > SHORT_TEXT ? h('textarea', { ...text, rows: 3 }) : h('input', { ...text, type: 'text' });
}

/** A field's label (its name when it has none), a mark when it is required, and its input. */
function fieldRow({ f, input }) {
  const label = h('label', { for: input.id }, f.label || f.name,
    f.required ? h('span', { class: 'required', title: 'required' }, ' *') : null);
  const hint = f.type === 'json' ? h('span', { class: 'muted small' }, 'A JSON value.') : null;
  return h('div', { class: `field ${f.type === 'boolean' ? 'check' : ''}`, 'data-field-row': f.name },
    f.type === 'boolean' ? [input, ' ', label] : [label, input], hint);
}

/** For each step a gate lets the person rewrite: its text to edit beside the original
 * (read-only) and a line diff of the change that follows the typing. `changed()` is the steps
 * whose text changed, with the new text; `dirty()` whether there is one. */
function gateEdits(edit) {
  const steps = Object.entries(edit && typeof edit === 'object' ? edit : {}).map(([node, text]) => editor(node, String(text ?? '')));
  const changed = () => Object.fromEntries(steps.filter((s) => s.changed()).map((s) => [s.node, s.text()]));
  return {
    nodes: steps.map((s) => s.node),
    el: steps.length ? h('div', { class: 'gate-edits', 'data-testid': 'gate-edits' }, h('h3', {}, 'Edit before answering'),
      h('p', { class: 'muted small' }, 'Later steps read the text as you leave it; the original is kept with the step.'), steps.map((s) => s.el)) : null,
    changed,
    dirty: () => Object.keys(changed()).length > 0,
  };
}

/** One step's editor: the original read-only, the text to change, the diff between them. */
function editor(node, text) {
  const original = text.replace(/\r\n?/g, '\n'); // what a textarea holds of it
  const rows = Math.min(16, Math.max(4, original.split('\n').length + 1));
  const area = h('textarea', { rows, name: `edit-${node}`, 'data-edit': node, 'aria-label': `New text of ${node}`, spellcheck: 'false', value: original });
  const diff = h('div', { class: 'line-diff', 'data-diff-of': node, 'aria-live': 'polite' });
  let frame = 0;
  const redraw = () => { frame = 0; diff.replaceChildren(...diffLines(original, area.value)); };
  area.addEventListener('input', () => { if (!frame) frame = requestAnimationFrame(redraw); });
  redraw();
  return {
    node,
    text: () => area.value,
    changed: () => area.value !== original,
    el: h('div', { class: 'gate-edit', 'data-edit-of': node }, h('h4', {}, h('code', {}, node)),
      h('div', { class: 'side-by-side' },
        h('label', {}, h('span', { class: 'muted small' }, 'Original'),
          h('textarea', { rows, readonly: true, 'data-original': node, 'aria-label': `Original text of ${node}`, value: original })),
        h('label', {}, h('span', { class: 'muted small' }, 'Your text'), area)),
      diff),
  };
}

/** The part of the run's input a failure says is missing (`trigger.who: no value at "who"` →
 * `who`); `null` for any other failure. */
function missingInput(error) {
  const m = /^trigger(?:\.([^:\s]*))?: no value at "([^"]*)"/.exec(error || '');
  return m ? (m[1] || m[2]) : null;
}

/** The change from `before` to `after`, line by line: removed lines marked −, added +, a few
 * unchanged lines kept beside each change and the rest folded; or that nothing changed. */
function diffLines(before, after) {
  if (before === after) return [h('p', { class: 'muted small' }, 'No change.')];
  const { lines } = lineDiff(before.split('\n'), after.split('\n'));
  const count = (op) => lines.filter((l) => l.op === op).length;
  const shown = folded(lines, CONTEXT);
  return [h('p', { class: 'muted small' }, `${count('added')} line${count('added') === 1 ? '' : 's'} added, ${count('removed')} removed`), h('div', { class: 'lines' }, shown)];
}

/** "Your name": sent as the answer's `by`, remembered in this browser; optional, except at a
 * gate that counts who answers (`approvers`, the gate's declaration). `name()` is what was
 * typed, trimmed; `invalid()` marks it missing. */
function nameInput(approvers) {
  const needed = Boolean(approvers && typeof approvers === 'object');
  const input = h('input', { id: 'answer-by', type: 'text', maxlength: 200, autocomplete: 'name', placeholder: needed ? 'required' : 'optional',
    required: needed, 'aria-describedby': 'answer-by-hint', value: remembered() });
  input.addEventListener('input', () => { input.removeAttribute('aria-invalid'); remember(input.value.trim()); });
  const n = needed ? Number(approvers.required) || 1 : 0;
  const hint = !needed ? ' Recorded with the answer; remembered in this browser.'
    : ` Required: this gate needs ${people(n)} to give the same answer${n > 1 ? ', each under their own name' : ''}`
      + `${Array.isArray(approvers.allowed) && approvers.allowed.length ? ', and only the names it allows' : ''}. Remembered in this browser.`;
  return {
    name: () => input.value.trim(),
    invalid() { input.setAttribute('aria-invalid', 'true'); input.focus(); },
    el: h('div', { class: 'field answer-by' }, h('label', { for: 'answer-by' }, 'Your name', needed ? h('span', { class: 'required', title: 'required' }, ' *') : null), input,
      h('span', { class: 'muted small', id: 'answer-by-hint', 'data-testid': 'answer-by-hint' }, hint)),
  };
}

/** The name this browser answered with last, or ''. */
function remembered() {
  try {
    return localStorage.getItem(NAME_KEY) || '';
  } catch {
    return ''; // storage refused (a sandboxed host page): nothing remembered
  }
}

/** Remembers `name` for the next gate (none: forgets it). */
function remember(name) {
  try {
    if (name) localStorage.setItem(NAME_KEY, name);
    else localStorage.removeItem(NAME_KEY);
  } catch {
    // storage refused: the name is still sent with this answer
  }
}
