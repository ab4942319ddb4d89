// A design's recorded versions, on its design page (#/designer/<name>): the list (number, hash,
// when saved, node and edge counts), a diff of two chosen versions as the server computes it
// (node by node, edge by edge), and restore, which saves an old version's content as the newest.
// `?version=N` in the page's address (the run page links so) marks that version and diffs it
// against the newest.
import { api, h, enc, say, when, ago } from '../app.js';

/** The section; `restored(graph)` hears of a restore so the canvas shows the design it made. */
export function versionsSection(name, page, restored) {
  const msg = h('div', { class: 'notice', hidden: true });
  const body = h('tbody');
  const diffBox = h('div', { id: 'version-diff' });
  const diffButton = h('button', { id: 'diff-versions', disabled: true, onclick: () => diff() }, 'Diff the two chosen');
  const section = h('section', { id: 'versions' }, h('h2', {}, 'Versions'),
    h('p', { class: 'muted small' }, 'Every save that changes the design records a version. Choose two to compare them.'),
    h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, ''), h('th', {}, 'Version'), h('th', {}, 'Hash'), h('th', {}, 'Saved'), h('th', {}, 'Nodes'), h('th', {}, 'Edges'), h('th', {}, ''))), body),
    h('div', { class: 'toolbar' }, diffButton), msg, diffBox);
  const chosen = () => [...body.querySelectorAll('input[type=checkbox]:checked')].map((c) => Number(c.value)).sort((a, b) => a - b);
  const onChoose = () => { diffButton.disabled = chosen().length !== 2; };

  async function load() {
    const r = await api('GET', `/designs/${enc(name)}/versions`);
    if (!page.alive) return;
    if (!r.body.ok) return say(msg, 'error', `Cannot list the versions: ${r.body.error}`);
    const versions = r.body.versions;
    const newest = versions.length ? versions[versions.length - 1].version : null;
    const marked = Number(page.query.get('version')) || null;
    body.replaceChildren(...versions.slice().reverse().map((v) => h('tr', { 'data-version': String(v.version), class: v.version === marked ? 'marked' : '' },
      h('td', {}, h('input', { type: 'checkbox', value: String(v.version), 'aria-label': `Choose version ${v.version}`, onchange: onChoose })),
      h('td', {}, `v${v.version}`, v.version === newest ? h('span', { class: 'muted small' }, ' (newest)') : '', v.version === marked ? h('span', { class: 'muted small' }, ' (the run\'s)') : ''),
      h('td', {}, h('code', {}, v.hash.replace(/^sha256:/, '').slice(0, 12))),
      h('td', { title: when(v.saved_at) }, ago(v.saved_at)),
      h('td', {}, String(v.nodes)), h('td', {}, String(v.edges)),
      h('td', { class: 'actions' }, v.version === newest ? '' : h('button', { 'data-action': 'restore', onclick: (e) => restore(v.version, e.target) }, 'Restore')))));
    if (!versions.length) body.append(h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'No versions recorded yet: the next save records one.')));
    onChoose();
    if (marked && newest && marked !== newest && !diffBox.hasChildNodes()) await diff([marked, newest]);
  }

  async function diff(pair = chosen()) {
    const [a, b] = pair;
    const r = await api('GET', `/designs/${enc(name)}/diff?a=${a}&b=${b}`);
    if (!r.body.ok) return say(msg, 'error', `Cannot diff: ${r.body.error}`);
    diffBox.replaceChildren(diffView(r.body));
  }

  async function restore(version, button) {
    button.disabled = true;
    const r = await api('POST', `/designs/${enc(name)}/restore`, { version });
    button.disabled = false;
    if (!r.body.ok) return say(msg, 'error', `Not restored: ${r.body.error}`);
    const v = await api('GET', `/designs/${enc(name)}/versions/${version}`);
    if (v.body.ok) restored(v.body.graph);
    say(msg, 'ok', `Restored version ${version}: it is now version ${r.body.version}.`);
    diffBox.replaceChildren();
    await load();
  }

  load();
  return { section, reload: load };
}

/** The server's diff as lists: what was added, removed and changed (with the fields). */
function diffView(d) {
  const part = (what, items) => {
    const rows = [
      ...items.added.map((id) => h('li', { class: 'added', 'data-item': id }, `+ ${what} ${id}`)),
      ...items.removed.map((id) => h('li', { class: 'removed', 'data-item': id }, `− ${what} ${id}`)),
      ...items.changed.map((c) => h('li', { class: 'changed', 'data-item': c.id }, `~ ${what} ${c.id}: ${c.fields.join(', ')}`)),
    ];
    return rows;
  };
  const rows = [...part('node', d.nodes), ...part('edge', d.edges)];
  if (d.design.length) rows.push(h('li', { class: 'changed', 'data-item': 'design' }, `~ design: ${d.design.join(', ')}`));
  return h('div', { 'data-a': String(d.a), 'data-b': String(d.b) },
    h('h3', {}, `v${d.a} → v${d.b}`),
    rows.length ? h('ul', { class: 'diff' }, rows) : h('p', { class: 'muted' }, 'Same nodes and edges.'));
}
