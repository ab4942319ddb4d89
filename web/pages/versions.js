// A design's recorded versions, on its design page (#/designer/<name>): the list (number, hash,
// when saved, node and edge counts), a diff of two chosen versions and restore, which saves an old
// version's content as the newest. The server's diff says which nodes, edges and fields differ;
// the values come from the two versions' contents, read here: each changed field old and new (a
// text line by line), and nodes that only moved listed apart from changes of content. A version's
// number links to it on the canvas, read-only (`?version=N`, as the run page links; designs.js).
import { api, h, enc, say, when, ago } from '../app.js';
import { lineDiff } from './linediff.js';

/** A node's position: a change to it alone is a move, not a change of content. */
const POSITION = ['x', 'y'];
/** Unchanged lines kept on each side of a change in a text; the rest are folded. */
const CONTEXT = 3;
/** A value this short, on one line, is shown inline (`old → new`) rather than line by line. */
const INLINE = 80;

/** The section; `restored(graph, said)` hears of a restore (the version's content, or null when
 * it cannot be read, and what was said of it) so the canvas shows the design it made. Answers
 * `{section, reload, compare(version), restore(version, button)}`. */
export function versionsSection(name, page, restored) {
  const msg = h('div', { class: 'notice', hidden: true });
  const body = h('tbody');
  const diffBox = h('div', { id: 'version-diff' });
  const diffButton = h('button', { id: 'diff-versions', disabled: true, onclick: () => diff() }, 'Diff the two chosen');
  const section = h('section', { id: 'versions' }, h('h2', {}, 'Versions'),
    h('p', { class: 'muted small' }, 'Every save that changes the design records a version. Open one to see it on the canvas, read-only; choose two to compare them.'),
    h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, ''), h('th', {}, 'Version'), h('th', {}, 'Hash'), h('th', {}, 'Saved'), h('th', {}, 'Nodes'), h('th', {}, 'Edges'), h('th', {}, ''))), body),
    h('div', { class: 'toolbar' }, diffButton), msg, diffBox);
  const chosen = () => [...body.querySelectorAll('input[type=checkbox]:checked')].map((c) => Number(c.value)).sort((a, b) => a - b);
  const onChoose = () => { diffButton.disabled = chosen().length !== 2; };
  const graphs = new Map(); // version → content: a recorded version never changes

  async function load() {
    const r = await api('GET', `/designs/${enc(name)}/versions`);
    if (!page.alive) return;
    if (!r.body.ok) return say(msg, 'error', `Cannot list the versions: ${r.body.error}`);
    const versions = r.body.versions;
    const newest = versions.length ? versions[versions.length - 1].version : null;
    const marked = Number(page.query.get('version')) || null;
    body.replaceChildren(...versions.slice().reverse().map((v) => h('tr', { 'data-version': String(v.version), class: v.version === marked ? 'marked' : '' },
      h('td', {}, h('input', { type: 'checkbox', value: String(v.version), 'aria-label': `Choose version ${v.version}`, onchange: onChoose })),
      h('td', {}, h('a', { href: `#/designer/${enc(name)}?version=${v.version}`, 'data-action': 'open-version', title: 'Show this version on the canvas, read-only' }, `v${v.version}`),
        v.version === newest ? h('span', { class: 'muted small' }, ' (newest)') : '', v.version === marked ? h('span', { class: 'muted small' }, ' (on the canvas)') : ''),
      h('td', {}, h('code', {}, v.hash.replace(/^sha256:/, '').slice(0, 12))),
      h('td', { title: when(v.saved_at) }, ago(v.saved_at)),
      h('td', {}, String(v.nodes)), h('td', {}, String(v.edges)),
      h('td', { class: 'actions' }, v.version === newest ? '' : h('button', { 'data-action': 'restore', onclick: (e) => restore(v.version, e.currentTarget) }, 'Restore')))));
    if (!versions.length) body.append(h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'No versions recorded yet: the next save records one.')));
    onChoose();
  }

  /** A version's content (read once), or null when it cannot be read. */
  async function contentOf(version) {
    if (!graphs.has(version)) {
      const r = await api('GET', `/designs/${enc(name)}/versions/${version}`);
      if (!r.body.ok) return null;
      graphs.set(version, r.body.graph);
    }
    return graphs.get(version);
  }

  /** Diffs version `a` against `b` (the newest when not given): the server's diff, with the
   * values of both versions' contents (without them, the names of the fields alone). */
  async function diff([a, b] = chosen()) {
    const r = await api('GET', `/designs/${enc(name)}/diff?a=${a}${b ? `&b=${b}` : ''}`);
    if (!page.alive) return;
    if (!r.body.ok) return say(msg, 'error', `Cannot diff: ${r.body.error}`);
    const [before, after] = await Promise.all([contentOf(r.body.a), contentOf(r.body.b)]);
    if (!page.alive) return;
    diffBox.replaceChildren(diffView(r.body, before && after ? { before, after } : null));
  }

  /** "Compare with now": version `version` against the newest, brought into view. */
  async function compare(version) {
    await diff([version]);
    diffBox.scrollIntoView({ block: 'nearest' });
  }

  async function restore(version, button) {
    button.disabled = true;
    const r = await api('POST', `/designs/${enc(name)}/restore`, { version });
    button.disabled = false;
    if (!r.body.ok) return say(msg, 'error', `Not restored: ${r.body.error}`);
    const said = `Restored version ${version}: it is now version ${r.body.version}.`;
    say(msg, 'ok', said);
    diffBox.replaceChildren();
    restored(await contentOf(version), said);
    await load();
  }

  load();
  return { section, reload: load, compare, restore };
}

/** The diff as lists: what was added, removed and changed (each changed field old and new, when
 * `sides` has the two contents), then the nodes that moved. */
function diffView(d, sides) {
  const content = [], moved = [];
  for (const [kind, what] of [['nodes', 'node'], ['edges', 'edge']]) {
    const [a, b] = sides ? [keyed(sides.before, kind), keyed(sides.after, kind)] : [new Map(), new Map()];
    content.push(...d[kind].added.map((id) => itemRow('added', `+ ${what} ${id}`, id, b.get(id))));
    content.push(...d[kind].removed.map((id) => itemRow('removed', `− ${what} ${id}`, id, a.get(id))));
    for (const c of d[kind].changed) {
      const fields = kind === 'nodes' ? c.fields.filter((f) => !POSITION.includes(f)) : c.fields;
      if (fields.length) content.push(changedRow(`${what} ${c.id}`, c.id, fields, a.get(c.id), b.get(c.id)));
      if (fields.length < c.fields.length) moved.push(movedRow(c.id, a.get(c.id), b.get(c.id)));
    }
  }
  if (d.design.length) content.push(changedRow('design', 'design', d.design, sides && sides.before, sides && sides.after));
  const parts = [h('h3', {}, `v${d.a} → v${d.b}`)];
  if (content.length) parts.push(h('ul', { class: 'diff' }, content));
  else parts.push(h('p', { class: 'muted' }, moved.length ? 'Same content: nodes only moved.' : 'Same nodes and edges.'));
  if (moved.length) parts.push(h('h4', {}, 'Moved'), h('ul', { class: 'diff moved' }, moved));
  return h('div', { 'data-a': String(d.a), 'data-b': String(d.b) }, parts);
}

/** The nodes (by id) or edges (by `from->to`, the n-th between the same two nodes `from->to#n`)
 * of `graph`, keyed as the server's diff names them. */
function keyed(graph, kind) {
  const out = new Map(), seen = new Map();
  const items = graph && Array.isArray(graph[kind]) ? graph[kind] : [];
  items.forEach((item, i) => {
    const end = (k) => (item && typeof item[k] === 'string' ? item[k] : '?');
    const base = kind === 'nodes' ? (item && typeof item.id === 'string' ? item.id : `#${i}`) : `${end('from')}->${end('to')}`;
    const n = (seen.get(base) || 0) + 1;
    seen.set(base, n);
    let key = n === 1 ? base : `${base}#${n}`;
    while (out.has(key)) key += '\'';
    out.set(key, item !== null && typeof item === 'object' && !Array.isArray(item) ? item : { value: item });
  });
  return out;
}

/** An added or removed node or edge, its content folded under it. */
function itemRow(kind, text, id, item) {
  return h('li', { class: kind, 'data-item': id }, text, item && item.type ? ` (${item.type})` : '',
    item ? h('details', {}, h('summary', {}, 'content'), h('pre', {}, JSON.stringify(item, null, 2))) : null);
}

/** A node, an edge or the design whose content changed: the fields, each old and new. */
function changedRow(what, id, fields, before, after) {
  return h('li', { class: 'changed', 'data-item': id }, `~ ${what}: ${fields.join(', ')}`,
    before && after ? h('div', { class: 'fields' }, fields.map((f) => fieldDiff(f, before[f], after[f]))) : null);
}

/** A node that moved: from where to where. */
function movedRow(id, before, after) {
  const at = (n) => `(${n.x ?? '–'}, ${n.y ?? '–'})`;
  return h('li', { class: 'moved', 'data-item': id }, `↦ node ${id}`, before && after ? `: ${at(before)} → ${at(after)}` : '');
}

/** One field old and new: short values inline (`old → new`), anything longer (a prompt, a
 * command, an object) line by line, added and removed lines marked. */
function fieldDiff(key, before, after) {
  const a = textLines(before), b = textLines(after);
  const short = (lines) => lines.length <= 1 && (lines[0] || '').length <= INLINE;
  if (short(a) && short(b)) {
    return h('div', { class: 'field-diff inline', 'data-field': key }, h('b', {}, `${key}:`), ' ', inline('del', before), ' → ', inline('ins', after));
  }
  const { lines, whole } = lineDiff(a, b);
  return h('div', { class: 'field-diff', 'data-field': key }, h('b', {}, key),
    whole ? h('span', { class: 'muted small' }, ' (too long to compare line by line: the old text, then the new)') : '',
    h('div', { class: 'lines' }, folded(lines)));
}

/** A value as the lines of its text: a string as it is, anything else as JSON; absent, none. */
function textLines(value) {
  if (value === undefined) return [];
  return (typeof value === 'string' ? value : JSON.stringify(value, null, 2)).split('\n');
}

/** A short value inline: old in `del`, new in `ins`; absent or empty said so. */
function inline(tag, value) {
  if (value === undefined) return h('span', { class: 'absent' }, '(absent)');
  if (value === '') return h('span', { class: 'absent' }, '(empty)');
  return h(tag, {}, typeof value === 'string' ? value : JSON.stringify(value));
}

/** The lines of a diff in runs of one kind (`pre.same|removed|added`, each line marked ` `, `−`
 * or `+`); an unchanged stretch keeps `context` lines beside a change and says how many it
 * folds. The run page draws a gate's edits with it too. */
export function folded(lines, context = CONTEXT) {
  const runs = [];
  for (const l of lines) {
    const last = runs[runs.length - 1];
    if (last && last.op === l.op) last.texts.push(l.text);
    else runs.push({ op: l.op, texts: [l.text] });
  }
  const block = (op, texts) => h('pre', { class: op }, texts.map((t) => `${{ same: ' ', removed: '−', added: '+' }[op]} ${t}`).join('\n'));
  return runs.flatMap((run, i) => {
    if (run.op !== 'same') return [block(run.op, run.texts)];
    const head = i > 0 ? run.texts.slice(0, context) : [];
    const tail = i < runs.length - 1 ? run.texts.slice(-context) : [];
    const hidden = run.texts.length - head.length - tail.length;
    if (hidden <= 1) return [block('same', run.texts)];
    return [head.length ? block('same', head) : null, h('div', { class: 'fold muted small' }, `⋯ ${hidden} unchanged lines`), tail.length ? block('same', tail) : null].filter(Boolean);
  });
}
