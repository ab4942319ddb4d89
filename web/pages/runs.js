// Runs (#/runs): the newest runs first, as the server lists them. The list refreshes itself
// while any run is still moving (running or waiting on a timer).
import { api, h, enc, badge, ago, poll } from '../app.js';

const LIMIT = 50;
const MOVING = ['running', 'waiting'];

export async function render(root, page) {
  const body = h('tbody');
  const note = h('p', { class: 'muted small' });
  const refresh = poll(page, 2000, async () => {
    const r = await api('GET', `/runs?limit=${LIMIT}`);
    if (!page.alive) return false;
    if (!r.body.ok) {
      note.textContent = `Cannot list runs: ${r.body.error}`;
      return false;
    }
    body.replaceChildren(...r.body.runs.map(row));
    if (r.body.runs.length === 0) body.append(h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'No runs yet. Open a design and run it.')));
    const moving = r.body.runs.some((run) => MOVING.includes(run.status));
    note.textContent = moving ? 'Refreshing while runs are in progress…' : `Showing the newest ${LIMIT} runs.`;
    return moving;
  });
  root.append(
    h('div', { class: 'title' }, h('h1', {}, 'Runs'), h('button', { onclick: () => refresh() }, 'Refresh')),
    h('table', { id: 'runs', class: 'list' },
      h('thead', {}, h('tr', {}, ['Run', 'Design', 'Status', 'Started', 'Pending', 'Error'].map((c) => h('th', {}, c)))),
      body),
    note);
  await refresh();
}

function row(run) {
  if (!run.status) {
    // An entry the store could not read: listed with its error, never hidden.
    return h('tr', { 'data-run': run.run_id }, h('td', {}, h('code', {}, run.run_id)), h('td', { colspan: 5, class: 'error' }, run.error));
  }
  const pending = run.pending ? `${run.pending.node} (${run.pending.type})` : '';
  return h('tr', { 'data-run': run.run_id, 'data-status': run.status },
    h('td', {}, h('a', { href: `#/runs/${enc(run.run_id)}` }, h('code', {}, run.run_id))),
    h('td', {}, h('a', { href: `#/designer/${enc(run.design)}` }, run.design)),
    h('td', {}, badge(run.status)),
    h('td', { title: run.created_at }, ago(run.created_at)),
    h('td', {}, pending),
    h('td', { class: 'error' }, run.error ? `${run.failed_node ? `${run.failed_node}: ` : ''}${run.error}` : ''));
}
