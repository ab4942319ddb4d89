// The run page's timeline: the run drawn on a time axis from its start, a row per step. A
// retried step shows each attempt as its own bar with the wait its retry policy made between
// them hatched; gates, waits, waits for an event and agent steps waiting for an answer are
// hatched too (time spent waiting, not working). A loop's passes are grouped under the loop's
// row, a row a pass (or one row for many passes), and a design step's child run is nested under
// it, its steps indented (read from the child run itself, a few levels deep). Hover or keyboard
// focus on a bar shows its details. Drawn as SVG by hand, like the charts (see charts.js for
// why), at the section's width, again on each change of the run the page follows.
// Everything drawn is read from run records (`GET /runs/{id}`) and the design version the run
// ran (`GET /designs/{name}/versions/{n}`: each node's type, and which loop a body node is in,
// the nodes its `each` edges lead to). Two things a record does not say are worked out here: the
// step that made a child run of an earlier attempt (the design step whose attempt was going when
// the child was made), and whether a finished agent step had waited for an answer (unknown: only
// a step waiting now is hatched as such).
import { api, enc, h } from '../app.js';
import { svg, fitted, niceTicks, durationText } from './charts.js';

const SETTLED = ['done', 'failed'];
/** Up to this many passes a loop gets a row each; more are one summary row. */
const PASS_ROWS = 12;
/** Child runs are nested this many levels deep; deeper ones are a row with a link. */
const CHILD_DEPTH = 3;
const ROW = 24;
const BAR = 14;
const AXIS = 28;
const LABELS = 230;
const INDENT = 16;

/** What a bar is, in words (its `data-kind`). */
const KINDS = {
  work: 'attempt', backoff: 'retry wait', gate: 'approval gate', wait: 'wait', event: 'wait for an event',
  'agent-wait': 'agent step waiting for an answer', child: 'child run', passes: 'loop passes',
};

/** The section and `show(run)`, which draws the run (called on each change and each second while
 * it moves). `#timeline` carries `data-run`, `data-updated` and `data-status` of the run drawn
 * last, set once it is on screen. */
export function timelineSection(page) {
  const plot = h('div', { class: 'plot' });
  const tip = h('div', { class: 'tl-tip', id: 'timeline-tip', role: 'tooltip', hidden: true });
  const section = h('section', { id: 'timeline' },
    h('h2', {}, 'Timeline'),
    h('p', { class: 'muted small' }, 'A row per step from the run’s start; a retried step has a bar per attempt. ', legend(),
      ' Hover over a bar, or move to it with Tab, for its details.'),
    plot, tip);
  const graphs = new Map(); // `design@version` → the promise of its node types and loops
  let designs = null; // the promise of the saved designs' names, asked once
  const settled = new Map(); // child run id → its record, once it cannot change
  let tree = null;
  let width = 0;
  let drawn = 0; // the show() whose answer is on screen
  let asked = 0;
  let active = null; // {key, focus}: the bar whose details show, kept across redraws
  let redrawing = false;
  let segments = new Map(); // data-key → the segment its bar draws
  page.onLeave(fitted(plot, (w) => { width = w; draw(); }));

  async function show(run) {
    const mine = ++asked;
    const gathered = await gather(run, 0);
    if (!page.alive || mine < drawn) return;
    drawn = mine;
    tree = gathered;
    draw();
  }

  /** The run with its design's node types and its children, each gathered the same way. */
  async function gather(run, depth) {
    const [info, children] = await Promise.all([graphInfo(run), depth < CHILD_DEPTH ? childRuns(run) : []]);
    const nested = await Promise.all(children.map((c) => gather(c, depth + 1)));
    const byStep = new Map();
    for (const child of nested) {
      const node = stepOfChild(run, child.run, info);
      if (!byStep.has(node)) byStep.set(node, []);
      byStep.get(node).push(child);
    }
    // Deeper than CHILD_DEPTH a child run is a link, not read.
    const unread = depth < CHILD_DEPTH ? [] : (run.child_runs || []);
    return { run, info, children: byStep, unread };
  }

  /** The node types and loops of the design version `run` ran; null for a design deleted since
   * (its versions answer 404, so it is not asked for: bars then go by step status alone). */
  function graphInfo(run) {
    const key = `${run.design}@${run.version ?? ''}`;
    if (!graphs.has(key)) {
      designs ??= api('GET', '/designs').then((r) => new Set(r.body.designs || []));
      const path = run.version === null || run.version === undefined
        ? `/designs/${enc(run.design)}` : `/designs/${enc(run.design)}/versions/${run.version}`;
      graphs.set(key, designs.then((names) => (names.has(run.design) ? api('GET', path) : null))
        .then((r) => (r && r.body.ok && r.body.graph ? nodeInfo(r.body.graph) : null)));
    }
    return graphs.get(key);
  }

  async function childRuns(run) {
    const ids = Array.isArray(run.child_runs) ? run.child_runs : [];
    const runs = await Promise.all(ids.map(async (id) => {
      if (settled.has(id)) return settled.get(id);
      const r = await api('GET', `/runs/${enc(id)}`);
      if (!r.body.run_id) return null;
      if (SETTLED.includes(r.body.status)) settled.set(id, r.body);
      return r.body;
    }));
    return runs.filter(Boolean);
  }

  function draw() {
    if (!tree || !width) return;
    const rows = [];
    rowsOf(tree, 0, '', rows);
    section.dataset.run = tree.run.run_id;
    if (!rows.length) {
      plot.replaceChildren(h('p', { class: 'muted', id: 'timeline-empty' }, tree.run.status === 'queued' ? 'Queued: no step has started.' : 'No step has started.'));
    } else {
      const wasFocused = plot.contains(document.activeElement);
      redrawing = true;
      segments = new Map();
      plot.replaceChildren(chart(rows, tree.run, width));
      redrawing = false;
      const again = active && plot.querySelector(`[data-key="${CSS.escape(active.key)}"]`);
      if (again) {
        if (active.focus && wasFocused) again.focus({ preventScroll: true });
        showTip(again, active.focus);
      } else hideTip();
    }
    section.dataset.updated = tree.run.updated_at;
    section.dataset.status = tree.run.status;
  }

  /** The SVG of `rows`: a time axis from the run's start, a label and bars per row. */
  function chart(rows, run, full) {
    const start = Math.min(Date.parse(run.created_at), ...rows.flatMap((r) => r.segments.map((s) => s.start)));
    const end = Math.max(endOf(run), ...rows.flatMap((r) => r.segments.map((s) => s.end)));
    const plotW = Math.max(80, full - LABELS - 16);
    const { top, ticks } = niceTicks(Math.max(1, end - start), Math.max(2, Math.floor(plotW / 110)));
    const x = (t) => LABELS + ((t - start) / top) * plotW;
    const height = AXIS + rows.length * ROW + 6;
    const root = svg('svg', { class: 'timeline', width: full, height, role: 'group', 'aria-label': `Timeline of run ${run.run_id}` },
      svg('defs', {}, ['done', 'failed', 'running', 'waiting'].map((s) => svg('pattern', {
        id: `tl-hatch-${s}`, class: `s-${s}`, width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)',
      }, svg('rect', { width: 6, height: 6 }), svg('line', { x1: 0, y1: 0, x2: 0, y2: 6 })))),
      svg('g', { class: 'axis', 'aria-hidden': 'true' }, ticks.map((t) => [
        svg('line', { x1: x(start + t), x2: x(start + t), y1: AXIS - 6, y2: height }),
        svg('text', { x: x(start + t), y: AXIS - 10, 'text-anchor': t === 0 ? 'start' : x(start + t) > full - 40 ? 'end' : 'middle' }, t === 0 ? '0' : durationText(t)),
      ])));
    rows.forEach((row, i) => root.append(rowOf(row, AXIS + i * ROW, x, i)));
    if (!SETTLED.includes(run.status)) {
      const now = x(endOf(run));
      root.append(svg('g', { class: 'now', 'aria-hidden': 'true' },
        svg('line', { x1: now, x2: now, y1: AXIS - 6, y2: height }),
        svg('text', { x: now - 3, y: height - 4, 'text-anchor': 'end' }, 'now')));
    }
    return root;
  }

  function rowOf(row, y, x, index) {
    const mid = y + ROW / 2;
    const indent = 8 + row.depth * INDENT;
    const room = Math.floor((LABELS - indent - 10) / 7);
    const text = row.label.length > room ? `${row.label.slice(0, Math.max(1, room - 1))}…` : row.label;
    const label = svg('text', { class: `label ${row.kind}`, x: indent, y: mid, 'dominant-baseline': 'middle' }, svg('title', {}, row.label), text);
    const g = svg('g', { class: 'row', 'data-row-kind': row.kind, 'data-node': row.node || null, 'data-pass': row.pass ?? null,
      'data-depth': row.depth, 'data-run': row.run, 'data-segments': row.segments.length },
    svg('rect', { class: `band${index % 2 ? ' odd' : ''}`, x: 0, y, width: '100%', height: ROW }),
    row.link ? svg('a', { href: row.link }, label) : label);
    row.segments.forEach((s, i) => {
      const x0 = x(s.start);
      const w = Math.max(2, x(Math.max(s.end, s.start)) - x0);
      const thin = s.kind === 'child';
      // A retry's backoff is the policy's wait, drawn in the colour of waiting even once over.
      const cls = s.kind === 'backoff' ? 'waiting' : statusClass(s.status);
      const key = `${row.key}|${i}`;
      segments.set(key, s);
      const seg = svg('rect', {
        class: `seg s-${cls}${s.hatched ? ' hatched' : ''}${s.open ? ' open' : ''}${thin ? ' thin' : ''}`,
        style: s.hatched ? `fill: url(#tl-hatch-${cls})` : null,
        x: x0, y: thin ? mid - 3 : mid - BAR / 2, width: w, height: thin ? 6 : BAR, rx: 2,
        tabindex: 0, role: 'img', 'aria-label': words(s).map(([k, v]) => `${k}: ${v}`).join('; '),
        'data-key': key, 'data-kind': s.kind, 'data-node': s.node, 'data-status': s.status, 'data-attempt': s.attempt ?? null,
        'data-start': new Date(s.start).toISOString(), 'data-end': s.open ? null : new Date(s.end).toISOString(),
        onpointerenter: (e) => showTip(e.currentTarget, false),
        onpointerleave: () => { if (!redrawing && !(active && active.focus)) hideTip(); },
        onfocus: (e) => showTip(e.currentTarget, true),
        onblur: () => { if (!redrawing) hideTip(); },
      });
      g.append(seg);
      // A pass row names the steps on its bars, where they are wide enough.
      if (row.kind === 'pass' && w > s.node.length * 7 + 12) {
        g.append(svg('text', { class: 'in-bar', x: x0 + 5, y: mid, 'dominant-baseline': 'middle', 'aria-hidden': 'true' }, s.node.split('#')[0]));
      }
    });
    return g;
  }

  function showTip(seg, focus) {
    const s = segments.get(seg.dataset.key);
    if (!s) return;
    active = { key: seg.dataset.key, focus };
    tip.replaceChildren(h('dl', {}, words(s).map(([k, v]) => [h('dt', {}, k), h('dd', { 'data-field': k.toLowerCase() }, v)])));
    tip.hidden = false;
    seg.setAttribute('aria-describedby', tip.id);
    const box = seg.getBoundingClientRect();
    const outer = section.getBoundingClientRect();
    const left = Math.min(Math.max(0, box.left - outer.left + box.width / 2 - 120), outer.width - 260);
    tip.style.left = `${Math.max(0, left)}px`;
    tip.style.top = `${box.bottom - outer.top + 6}px`;
  }

  function hideTip() {
    active = null;
    tip.hidden = true;
  }

  return { section, show };
}

/** The timeline's key: what each colour and the hatching mean. */
function legend() {
  const item = (cls, text, hatched) => h('span', { class: 'tl-key' }, h('span', { class: `swatch s-${cls}${hatched ? ' hatched' : ''}` }), text);
  return h('span', { class: 'tl-legend' }, item('done', 'done'), item('failed', 'failed'), item('running', 'running'),
    item('idle', 'hatched: waiting, not working (a retry’s backoff, a gate, a wait, an event, an answer)', true));
}

/** `body#3` → ['body', 3]; a plain id → [id, null] (node ids never contain `#`). */
function splitInstance(id) {
  const at = id.lastIndexOf('#');
  if (at < 0 || !/^\d+$/.test(id.slice(at + 1))) return [id, null];
  return [id.slice(0, at), Number(id.slice(at + 1))];
}

/** Each node's type, and the loop each loop-body node runs in: the nodes reached from a loop's
 * `each` edges (loops do not nest). */
function nodeInfo(graph) {
  const nodes = Array.isArray(graph.nodes) ? graph.nodes : [];
  const edges = Array.isArray(graph.edges) ? graph.edges : [];
  const types = new Map(nodes.map((n) => [n.id, n.type]));
  const loopOf = new Map();
  for (const lp of nodes.filter((n) => n.type === 'loop')) {
    const queue = edges.filter((e) => e.from === lp.id && e.label === 'each').map((e) => e.to);
    while (queue.length) {
      const id = queue.shift();
      if (id === lp.id || loopOf.has(id)) continue;
      loopOf.set(id, lp.id);
      queue.push(...edges.filter((e) => e.from === id).map((e) => e.to));
    }
  }
  return { types, loopOf };
}

/** The step record of `run` that started `child`: the one its pending names, the one whose output
 * is the child's, or else the design step whose attempt was going when the child was made (every
 * attempt of a design step starts a child of its own). `null`: none found. */
function stepOfChild(run, child, info) {
  const p = run.pending;
  if (p && p.run_id === child.run_id) return p.type === 'child' ? p.node : String(p.node).split('/')[0];
  for (const [node, out] of Object.entries(run.outputs || {})) {
    if (out && out.run_id === child.run_id) return node;
  }
  const made = Date.parse(child.created_at);
  let best = null;
  for (const step of run.steps) {
    if (info && info.types.get(splitInstance(step.node)[0]) !== 'design') continue;
    for (const t of triesOf(step)) {
      const from = Date.parse(t.started_at);
      const to = t.finished_at ? Date.parse(t.finished_at) : Infinity;
      if (from <= made + 1 && made <= to + 1 && (!best || from > best.from)) best = { from, node: step.node };
    }
  }
  return best ? best.node : null;
}

/** When the run's picture ends: its last change once settled, else now. */
function endOf(run) {
  return SETTLED.includes(run.status) ? Date.parse(run.updated_at) : Math.max(Date.now(), Date.parse(run.updated_at));
}

/** A step's attempts; a record written before attempts were kept is one. */
function triesOf(step) {
  return Array.isArray(step.tries) && step.tries.length ? step.tries
    : [{ attempt: step.attempts || 1, status: step.status, started_at: step.started_at, finished_at: step.finished_at, error: step.error }];
}

/** The rows of a gathered run at `depth`, appended to `rows`: its steps in the order they
 * started, loop passes under their loop, child runs under the steps that started them. */
function rowsOf(tree, depth, prefix, rows) {
  const { run, info } = tree;
  const types = info ? info.types : new Map();
  const entries = [];
  const loops = new Map();
  const loopEntry = (id) => {
    if (!loops.has(id)) {
      const entry = { loop: id, step: null, passes: new Map() };
      loops.set(id, entry);
      entries.push(entry);
    }
    return loops.get(id);
  };
  for (const step of run.steps) {
    const [base, pass] = splitInstance(step.node);
    if (pass === null && types.get(base) === 'loop') loopEntry(base).step = step;
    else if (pass === null) entries.push({ step });
    else {
      const passes = loopEntry((info && info.loopOf.get(base)) || base).passes;
      if (!passes.has(pass)) passes.set(pass, []);
      passes.get(pass).push(step);
    }
  }
  const end = endOf(run);
  const segmentsOf = (step) => stepSegments(step, types.get(splitInstance(step.node)[0]), run, end);
  const children = (nodes, at) => nodes.forEach((node) => (tree.children.get(node) || []).forEach((child) => childRows(child, at, prefix, rows)));
  for (const entry of entries) {
    if (entry.step && !entry.loop) {
      rows.push({ key: prefix + entry.step.node, kind: 'step', label: entry.step.node, node: entry.step.node, depth, run: run.run_id, segments: segmentsOf(entry.step) });
      children([entry.step.node], depth + 1);
      continue;
    }
    const passes = [...entry.passes.entries()].sort((a, b) => a[0] - b[0]);
    rows.push({ key: prefix + entry.loop, kind: 'loop', node: entry.loop, depth, run: run.run_id,
      label: `${entry.loop} · ${passes.length} pass${passes.length === 1 ? '' : 'es'}`,
      segments: entry.step ? segmentsOf(entry.step) : [] });
    if (passes.length > PASS_ROWS) {
      rows.push({ key: `${prefix + entry.loop}#passes`, kind: 'passes', node: entry.loop, depth: depth + 1, run: run.run_id,
        label: `${passes.length} passes`, segments: [passesSegment(entry.loop, passes, end)] });
      continue;
    }
    for (const [pass, steps] of passes) {
      rows.push({ key: `${prefix + entry.loop}#${pass}`, kind: 'pass', node: entry.loop, pass, depth: depth + 1, run: run.run_id,
        label: `pass ${pass}`, segments: steps.flatMap(segmentsOf) });
      children(steps.map((s) => s.node), depth + 2);
    }
  }
  children([null], depth);
  for (const id of tree.unread) {
    rows.push({ key: `${prefix}${id}/`, kind: 'child', label: `↳ child run ${id}`, node: null, depth, run: id, link: `#/runs/${enc(id)}`, segments: [] });
  }
}

/** A child run: a row with its span (its label links to it), then its own rows indented. */
function childRows(child, depth, prefix, rows) {
  const { run } = child;
  const key = `${prefix}${run.run_id}/`;
  rows.push({ key, kind: 'child', label: `↳ ${run.design} (${run.run_id})`, node: null, depth, run: run.run_id, link: `#/runs/${enc(run.run_id)}`,
    segments: [{ kind: 'child', node: `${run.design} run ${run.run_id}`, status: run.status, start: Date.parse(run.created_at), end: endOf(run), open: !SETTLED.includes(run.status), error: run.error }] });
  rowsOf(child, depth + 1, key, rows);
}

/** The bars of one step record: each attempt, the retry waits between them, hatched waits. */
function stepSegments(step, type, run, end) {
  const tries = triesOf(step);
  const pending = run.pending && run.pending.node === step.node ? run.pending : null;
  const segments = [];
  tries.forEach((t, i) => {
    const from = Date.parse(t.started_at);
    const wait = waitKind(type, t.status);
    segments.push({ kind: wait || 'work', hatched: Boolean(wait), node: step.node, attempt: t.attempt, attempts: step.attempts,
      status: t.status, start: from, end: t.finished_at ? Date.parse(t.finished_at) : Math.max(from, end), open: !t.finished_at, error: t.error });
    if (typeof t.delay_ms === 'number' && t.finished_at) {
      const next = tries[i + 1];
      const waited = Date.parse(t.finished_at);
      segments.push({ kind: 'backoff', hatched: true, node: step.node, attempt: t.attempt + 1, attempts: step.attempts,
        status: next ? 'waited' : 'waiting', start: waited, end: next ? Date.parse(next.started_at) : Math.max(waited, end), open: !next,
        delay_ms: t.delay_ms, resume_at: pending && pending.type === 'wait' ? pending.resume_at : null });
    }
  });
  return segments;
}

/** Whether an attempt of a node of `type` in `status` is waiting rather than working, and for
 * what. An agent step is known to wait for an answer only while it does: its record keeps no
 * trace of it afterwards. */
function waitKind(type, status) {
  if (type === 'approval' || status === 'awaiting_approval') return 'gate';
  if (type === 'wait' || status === 'waiting') return 'wait';
  if (type === 'wait_event' || status === 'awaiting_event') return 'event';
  if (status === 'awaiting_agent') return 'agent-wait';
  return null;
}

/** One bar for a loop of many passes: from the first pass's start to the last one's end. */
function passesSegment(loop, passes, end) {
  const steps = passes.flatMap(([, s]) => s);
  const failed = steps.filter((s) => s.status === 'failed').length;
  const open = steps.some((s) => !SETTLED.includes(s.status));
  return { kind: 'passes', node: loop, count: passes.length, failed,
    status: failed ? 'failed' : open ? 'running' : 'done',
    start: Math.min(...steps.map((s) => Date.parse(s.started_at))),
    end: open ? end : Math.max(...steps.map((s) => Date.parse(s.finished_at || s.started_at))), open };
}

/** The colour class of a status: style.css's status colours. */
function statusClass(status) {
  if (status === 'done' || status === 'failed') return status;
  if (['running', 'retrying', 'awaiting_child', 'queued'].includes(status)) return 'running';
  return 'waiting';
}

/** A time of day with milliseconds, in the viewer's time. */
function clock(t) {
  return new Date(t).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit', fractionalSecondDigits: 3, hour12: false });
}

/** A bar's details as [label, text] pairs (the tooltip and the bar's accessible name). */
function words(s) {
  const took = Math.max(0, s.end - s.start);
  const out = [['Step', s.node], ['What', KINDS[s.kind] || s.kind], ['Status', String(s.status).replace(/_/g, ' ')]];
  if (s.kind === 'backoff') {
    out.push(['Before', `attempt ${s.attempt}`], ['Policy wait', durationText(s.delay_ms)]);
  } else if (s.attempt !== undefined && s.attempts !== undefined) out.push(['Attempt', `${s.attempt} of ${s.attempts}`]);
  if (s.kind === 'passes') out.push(['Passes', `${s.count}${s.failed ? `, ${s.failed} step${s.failed === 1 ? '' : 's'} failed` : ''}`]);
  out.push(['Start', clock(s.start)]);
  out.push(['End', s.open ? (s.resume_at ? `attempt ${s.attempt} at ${clock(Date.parse(s.resume_at))}` : 'not yet') : clock(s.end)]);
  out.push(['Duration', `${durationText(took)}${s.open ? ' so far' : ''}`]);
  if (s.error) out.push(['Error', s.error]);
  return out;
}
