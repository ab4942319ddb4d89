// Runs (#/runs?design=&status=&trigger=&id=&from=&to=&min=&before=): the runs newest first,
// filtered by design, status and trigger, searched by run id, by the days they started between
// (`from`, `to`: days in the viewer's time, sent to the server as the instants they begin and
// end) and how long they took at least (`min`: 30s, 5m, 1h30m, the server's `min_duration`), a
// page at a time. The filters live in the address, so a filtered page can be linked and Back
// returns to it; paging follows the server's `next` cursor.
// The list follows the server with long-poll reads: on the newest page always (a run started
// anywhere, on any instance, shows as soon as the server sees it, even while every run listed has
// settled), on an older page while any run on it may still change (running, waiting, parked at a
// gate or an agent step).
import { api, h, enc, badge, ago, elapsed, follow, navigate } from '../app.js';

const LIMIT = 50;
const SETTLED = ['done', 'failed'];
const FILTERS = ['design', 'status', 'trigger', 'id'];
/** Filters the page words its own way: days and a duration. */
const PERIOD_FILTERS = ['from', 'to', 'min'];

/** How long a settled run took, in seconds (start to last change). */
function runSeconds(run) {
  return (Date.parse(run.updated_at) - Date.parse(run.created_at)) / 1000;
}

/** The server's period parameters for the page's `from`/`to` days (the viewer's time: `from` at
 * its first moment, `to` up to its end) and `min` duration. */
function periodQuery(q, query) {
  const day = (d) => (/^\d{4}-\d{2}-\d{2}$/.test(d || '') ? new Date(`${d}T00:00`) : null);
  const from = day(q.get('from'));
  const to = day(q.get('to'));
  if (from) query.set('from', from.toISOString());
  if (to) query.set('to', new Date(to.getFullYear(), to.getMonth(), to.getDate() + 1).toISOString());
  if (q.get('min')) query.set('min_duration', q.get('min').trim());
}

/** The values `GET /runs` takes for its `status` and `trigger` filters, as its OpenAPI document
 * states them (the server's own lists; none is copied here). */
async function filterValues() {
  const doc = (await api('GET', '/openapi.json')).body;
  const params = doc?.paths?.['/runs']?.get?.parameters || [];
  const values = (name) => params.find((p) => p.name === name)?.schema?.enum || [];
  // A run waiting for a slot of its design's runs-at-once limit is `queued`: offered even by a
  // document that does not list it yet.
  const status = values('status');
  return { status: status.length && !status.includes('queued') ? ['queued', ...status] : status, trigger: values('trigger') };
}

export async function render(root, page) {
  const q = page.query;
  const [listed, values] = await Promise.all([api('GET', '/designs'), filterValues()]);
  const designs = listed.body.designs || [];
  if (!page.alive) return;
  const select = (name, label, values) => h('select', { name, 'aria-label': label },
    h('option', { value: '' }, `any ${name}`), values.map((v) => h('option', { value: v, selected: q.get(name) === v }, v.replace(/_/g, ' '))));
  const f = {
    design: select('design', 'Design', designs.includes(q.get('design')) || !q.get('design') ? designs : [...designs, q.get('design')]),
    status: select('status', 'Status', values.status),
    trigger: select('trigger', 'Trigger', values.trigger),
    id: h('input', { name: 'id', type: 'search', placeholder: 'run id', size: 14, value: q.get('id') || '', 'aria-label': 'Run id (or its start)' }),
    from: h('input', { name: 'from', type: 'date', value: q.get('from') || '', 'aria-label': 'Started on or after (day)', title: 'Started on or after this day' }),
    to: h('input', { name: 'to', type: 'date', value: q.get('to') || '', 'aria-label': 'Started on or before (day)', title: 'Started on or before this day' }),
    min: h('input', { name: 'min', type: 'search', placeholder: 'took at least', size: 11, value: q.get('min') || '', 'aria-label': 'Took at least (30s, 5m, 1h)', title: 'Took at least: 30s, 5m, 1h' }),
  };
  const apply = (extra = {}) => {
    const params = new URLSearchParams();
    // Design names keep their case; run ids are lowercase hex.
    for (const key of [...FILTERS, ...PERIOD_FILTERS]) if (f[key].value.trim()) params.set(key, key === 'id' ? f[key].value.trim().toLowerCase() : f[key].value.trim());
    for (const [k, v] of Object.entries(extra)) params.set(k, v);
    const qs = params.toString();
    navigate(`#/runs${qs ? `?${qs}` : ''}`);
  };
  const form = h('form', { id: 'run-filters', class: 'inline filters', onsubmit: (e) => { e.preventDefault(); apply(); } },
    f.design, f.status, f.trigger, f.id,
    h('label', { class: 'muted small' }, 'from ', f.from), h('label', { class: 'muted small' }, 'to ', f.to), f.min,
    h('button', { type: 'submit' }, 'Search'),
    [...FILTERS, ...PERIOD_FILTERS].some((k) => q.get(k)) ? h('a', { class: 'button', href: '#/runs' }, 'Clear') : null);
  for (const key of ['design', 'status', 'trigger', 'from', 'to']) f[key].addEventListener('change', () => apply());

  const body = h('tbody');
  const note = h('p', { class: 'muted small', id: 'runs-note' });
  const pager = h('p', { class: 'pager', id: 'runs-pager' });
  const query = new URLSearchParams({ limit: String(LIMIT) });
  for (const key of [...FILTERS, 'before']) if (q.get(key)) query.set(key, q.get(key));
  periodQuery(q, query);
  const filtered = [...FILTERS, ...PERIOD_FILTERS].some((k) => q.get(k));
  const refresh = follow(page, `/runs?${query}`, async (r) => {
    if (!r.body.ok) {
      body.replaceChildren();
      note.className = 'notice error';
      note.textContent = `Cannot list runs: ${r.body.error}`;
      return false;
    }
    const runs = r.body.runs;
    body.replaceChildren(...runs.map(runRow));
    if (runs.length === 0) {
      const empty = filtered || q.get('before')
        ? (r.body.next ? 'No matching runs among these; older runs may match.' : 'No matching runs.')
        : 'No runs yet. Open a design and run it.';
      body.append(h('tr', {}, h('td', { colspan: COLUMNS.length, class: 'muted' }, empty)));
    }
    const older = r.body.next;
    // replaceChildren writes a null as the text "null": only the buttons there are.
    const buttons = [
      q.get('before') ? h('button', { 'data-page': 'newest', onclick: () => apply() }, '« Newest') : null,
      older ? h('button', { 'data-page': 'older', onclick: () => apply({ before: r.body.next }) }, 'Older »') : null,
    ].filter(Boolean);
    pager.replaceChildren(...buttons.flatMap((b, i) => (i ? [' ', b] : [b])));
    const moving = r.body.runs.some((run) => run.status && !SETTLED.includes(run.status));
    note.className = 'muted small';
    // The filters this list is for, as the page's address gave them: a filter changed twice in a
    // row (a date box's change, then Search) shows for a moment the list of the first.
    note.dataset.filters = q.toString();
    note.textContent = moving ? 'Following the runs still in progress or waiting…'
      : `${runs.length} run${runs.length === 1 ? '' : 's'}${filtered ? ' matching' : ''}${q.get('before') ? ', older than ' + q.get('before') : ', newest first'}.`;
    // New runs land on the newest page only: an older one is followed while its runs move.
    return moving || !q.get('before');
  });
  root.append(
    h('div', { class: 'title' }, h('h1', {}, 'Runs'), h('button', { onclick: () => refresh() }, 'Refresh')),
    form,
    runsTable(body),
    note, pager);
  await refresh();
}

const COLUMNS = ['Run', 'Design', 'Status', 'Trigger', 'Started', 'Took', 'Pending', 'Error'];

/** The runs table around `body` (rows from `runRow`). */
export function runsTable(body) {
  return h('table', { id: 'runs', class: 'list' },
    h('thead', {}, h('tr', {}, COLUMNS.map((c) => h('th', {}, c)))),
    body);
}

/** One run of a listing as a table row. */
export function runRow(run) {
  if (!run.status) {
    // An entry the store could not read: listed with its error, never hidden.
    return h('tr', { 'data-run': run.run_id }, h('td', {}, h('code', {}, run.run_id)), h('td', { colspan: COLUMNS.length - 1, class: 'error' }, run.error));
  }
  // A queued run waits for a slot of its design's runs-at-once limit: its place in the line.
  const pending = run.pending ? `${run.pending.node} (${run.pending.type})`
    : run.queue ? h('span', { 'data-place': run.queue.place }, `place ${run.queue.place} in line`) : '';
  return h('tr', { 'data-run': run.run_id, 'data-status': run.status },
    h('td', {}, h('a', { href: `#/runs/${enc(run.run_id)}` }, h('code', {}, run.run_id))),
    h('td', {}, h('a', { href: `#/designer/${enc(run.design)}` }, run.design)),
    h('td', {}, badge(run.status), run.test ? [' ', testMark()] : null, handledMark(run)),
    h('td', { class: 'trigger' }, run.trigger ? run.trigger.mode : '', keyMark(run) ? [' · ', keyMark(run)] : null),
    h('td', { title: run.created_at }, ago(run.created_at)),
    h('td', { class: 'took', 'data-seconds': SETTLED.includes(run.status) ? runSeconds(run) : null }, SETTLED.includes(run.status) ? elapsed(run.created_at, run.updated_at) : ''),
    h('td', {}, pending),
    h('td', { class: 'error' }, run.error ? `${run.failed_node ? `${run.failed_node}: ` : ''}${run.error}` : ''));
}

/** The key a run counts under for its design's runs-at-once limit, when the design has one. */
export function keyMark(run) {
  if (typeof run.concurrency_key !== 'string' || !run.concurrency_key) return null;
  return h('span', { class: 'muted small', 'data-concurrency-key': run.concurrency_key, title: 'Its design limits the runs at once per key' }, `key ${run.concurrency_key}`);
}

/** The mark of a run done with failures its design handled (error paths, `on_error: continue`). */
export function handledMark(run) {
  const n = (run.handled || []).length;
  if (!n) return null;
  const what = `${n} handled error${n === 1 ? '' : 's'}`;
  if (run.status !== 'done') return [' ', h('span', { class: 'muted small', 'data-handled': n }, `(${what})`)];
  return [' ', h('span', { class: 'badge s-handled', 'data-handled': n, title: run.handled.map((e) => `${e.node}: ${e.error}`).join('\n') }, `with ${what}`)];
}

/** The mark of a test run: pinned steps gave their pinned output, and it may have run part of the design. */
export function testMark() {
  return h('span', { class: 'badge s-test', 'data-test-run': '', title: 'A test run: pinned steps gave their pinned output instead of running' }, 'test run');
}

/** A design page's section of its most recent runs, with a link to all of them. */
export function recentRuns(design, page, count = 10) {
  const body = h('tbody');
  const more = h('p', { class: 'muted small' });
  const section = h('section', { id: 'recent-runs' }, h('h2', {}, 'Recent runs'), runsTable(body), more);
  (async () => {
    const r = await api('GET', `/runs?design=${enc(design)}&limit=${count}`);
    if (!page.alive) return;
    if (!r.body.ok) return more.replaceChildren(`Cannot list its runs: ${r.body.error}`);
    body.replaceChildren(...r.body.runs.map(runRow));
    if (!r.body.runs.length) body.append(h('tr', {}, h('td', { colspan: COLUMNS.length, class: 'muted' }, 'No runs of this design yet.')));
    more.replaceChildren(h('a', { href: `#/runs?design=${enc(design)}` }, `All runs of ${design} »`));
  })();
  return section;
}
