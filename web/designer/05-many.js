// ---------------------------------------------------------------------------------------------
// Many nodes at once: the selection of several nodes (shift-click, Shift+drag a box, Ctrl+A),
// moving and deleting it, copy / paste / duplicate as design JSON, and where new nodes go.
// Invariants: `sel` is {node: i} for one node, {nodes: [i, …]} for several (never fewer than
// two), {edge: i} or null. The clipboard holds a design ({nodes, edges}: the selected nodes and
// the edges among them), so it pastes into another design or a text editor. Pasted nodes get ids
// no node has, and keep the edges and references among themselves. Every change here is one
// undo step. A new node (palette click or drop, paste) never lands on an existing one.
// ---------------------------------------------------------------------------------------------
/** The indices of the selected nodes. */
function selectedNodes() {
  if (!sel) return [];
  if (sel.node !== undefined) return [sel.node];
  return Array.isArray(sel.nodes) ? sel.nodes : [];
}
/** The selection of these node indices. */
function nodeSelection(indices) {
  const list = [...new Set(indices)].filter((i) => isObj(nodes()[i])).sort((a, b) => a - b);
  return list.length === 0 ? null : list.length === 1 ? { node: list[0] } : { nodes: list };
}
function selectAll() { select(nodeSelection(nodes().map((_, i) => i))); }

/** The selected nodes and the edges among them, as a design. */
function selectionDesign() {
  const picked = selectedNodes().map((i) => nodes()[i]).filter(isObj);
  if (!picked.length) return null;
  const ids = new Set(picked.map((n) => n.id));
  return { nodes: JSON.parse(JSON.stringify(picked.map((n) => ({ ...n, ...pos(n) })))), edges: JSON.parse(JSON.stringify(edges().filter((e) => isObj(e) && ids.has(e.from) && ids.has(e.to)))) };
}

/** The offset nearest (dx, dy) that moves `group` (boxes) where it covers no node (nor comes
 * within `gap` of one); `within`, when given, is the area the moved group must stay inside. */
function freeOffset(group, dx, dy, { gap = 16, within = null } = {}) {
  const boxes = nodes().filter(isObj).map(boxOf);
  const fits = (ox, oy) => group.every((g) => {
    const x = g.x + ox, y = g.y + oy;
    if (within && (x < within.x0 || y < within.y0 || x + g.w > within.x1 || y + g.h > within.y1)) return false;
    return !boxes.some((b) => x < b.x + b.w + gap && b.x < x + g.w + gap && y < b.y + b.h + gap && b.y < y + g.h + gap);
  });
  const step = 24, tries = [];
  for (let i = -40; i <= 40; i++) for (let j = -40; j <= 40; j++) tries.push([i * step, j * step]);
  tries.sort((a, b) => Math.hypot(a[0], a[1]) - Math.hypot(b[0], b[1]));
  for (const [ox, oy] of tries) if (fits(dx + ox, dy + oy)) return { dx: dx + ox, dy: dy + oy };
  return null;
}

/** Where a new node of `type` goes: at `at` (a drop) or, for a click, next to the selected node
 * or in the middle of the visible area; always on a free spot, a click's always in view. */
function placeNew(type, at) {
  const size = sizeOf({ type, text: '' });
  const v = visibleArea(), margin = 20 / view.k;
  const inside = { x0: v.x0 + margin, y0: v.y0 + margin, x1: v.x1 - margin, y1: v.y1 - margin };
  const box = { x: 0, y: 0, w: size.w, h: size.h };
  let anchor = at;
  if (!anchor) {
    const one = sel && sel.node !== undefined && isObj(nodes()[sel.node]) ? boxOf(nodes()[sel.node]) : null;
    anchor = one ? { x: one.x + one.w + 60, y: one.y } : { x: (v.x0 + v.x1 - size.w) / 2, y: (v.y0 + v.y1 - size.h) / 2 };
  }
  const spot = freeOffset([box], anchor.x, anchor.y, { gap: at ? 8 : 16, within: at ? null : inside })
    || freeOffset([box], anchor.x, anchor.y, { gap: 8 });
  return spot ? { x: spot.dx, y: spot.dy } : anchor;
}

/** Pastes a design (or a node, or an API answer wrapping a design) from `text`. */
function pasteDesign(text, { near = null } = {}) {
  if (READ_ONLY) return false;
  let data;
  try { data = JSON.parse(text); } catch (e) { say('Nothing to paste: the clipboard holds no design JSON', 'bad'); return false; }
  if (isObj(data) && isObj(data.graph) && data.nodes === undefined) data = data.graph;
  const list = isObj(data) && Array.isArray(data.nodes) ? data.nodes.filter(isObj) : isObj(data) && typeof data.type === 'string' ? [data] : [];
  if (!list.length) { say('Nothing to paste: a design is a JSON object with nodes', 'bad'); return false; }
  const copies = JSON.parse(JSON.stringify(list));
  // A pasted id the design has is replaced by one that neither the design nor the pasted nodes
  // have, so renaming the references among the pasted nodes never renames one twice.
  const taken = new Set(nodes().filter(isObj).map((n) => n.id));
  const olds = copies.map((n) => n.id).filter((id) => typeof id === 'string');
  const used = new Set([...taken, ...olds]);
  const renamed = new Map(), refsKnown = [...used];
  copies.forEach((n, i) => {
    let id = typeof n.id === 'string' && n.id ? n.id : String(n.type || 'node');
    if (taken.has(id)) {
      const base = id.replace(/\d+$/, '');
      for (let k = 2; ; k++) if (!used.has(base + k)) { id = base + k; break; }
    }
    used.add(id);
    taken.add(id);
    if (!renamed.has(n.id)) renamed.set(n.id, id);
    n.id = id;
    if (!(isNum(n.x) && isNum(n.y))) { n.x = (i % 5) * 230; n.y = Math.floor(i / 5) * 110; }
  });
  // A pasted title the design shows already gets a number, so no two boxes read the same
  // ("Fetch refunds" → "Fetch refunds (2)").
  const titles = new Set(nodes().filter(isObj).map((n) => n.label).filter((l) => typeof l === 'string' && l));
  for (const n of copies) {
    if (typeof n.label !== 'string' || !n.label) continue;
    if (titles.has(n.label)) {
      const base = n.label.replace(/ \(\d+\)$/, '');
      for (let k = 2; ; k++) if (!titles.has(`${base} (${k})`)) { n.label = `${base} (${k})`; break; }
    }
    titles.add(n.label);
  }
  // References among the pasted nodes follow their new ids ({{nodes.a}} → {{nodes.a2}}).
  for (const [old, neu] of renamed) if (old !== neu) for (const n of copies) renameInNode(n, old, neu, refsKnown);
  const links = (isObj(data) && Array.isArray(data.edges) ? data.edges : [])
    .filter((e) => isObj(e) && renamed.has(e.from) && renamed.has(e.to))
    .map((e) => ({ ...JSON.parse(JSON.stringify(e)), from: renamed.get(e.from), to: renamed.get(e.to) }));
  // Next to where they were copied from (a duplicate), else in the middle of the view.
  const group = copies.map((n) => ({ x: n.x, y: n.y, ...sizeOf(n) }));
  const x0 = Math.min(...group.map((g) => g.x)), y0 = Math.min(...group.map((g) => g.y));
  const x1 = Math.max(...group.map((g) => g.x + g.w)), y1 = Math.max(...group.map((g) => g.y + g.h));
  const v = visibleArea();
  const target = near || { x: (v.x0 + v.x1 - (x1 - x0)) / 2, y: (v.y0 + v.y1 - (y1 - y0)) / 2 };
  const off = freeOffset(group, Math.round(target.x - x0), Math.round(target.y - y0)) || { dx: Math.round(target.x - x0), dy: Math.round(target.y - y0) };
  for (const n of copies) { n.x = Math.round(n.x + off.dx); n.y = Math.round(n.y + off.dy); }
  change(() => {
    if (!Array.isArray(graph.nodes)) graph.nodes = [];
    if (!Array.isArray(graph.edges)) graph.edges = [];
    const first = graph.nodes.length;
    settleAuto();
    graph.nodes.push(...copies);
    graph.edges.push(...links);
    sel = nodeSelection(copies.map((_, i) => first + i));
  }, { panel: true });
  say(`Pasted ${copies.length} node${copies.length === 1 ? '' : 's'}${links.length ? ` and ${links.length} edge${links.length === 1 ? '' : 's'}` : ''}`);
  return true;
}

/** Ctrl+D: a copy of the selection beside it. */
function duplicateSelection() {
  const d = selectionDesign();
  if (!d || READ_ONLY) return;
  const x0 = Math.min(...d.nodes.map((n) => n.x)), y0 = Math.min(...d.nodes.map((n) => n.y));
  pasteDesign(JSON.stringify(d), { near: { x: x0 + 40, y: y0 + 40 } });
}

/** Moves the selected nodes by (dx, dy); `key` makes repeated moves one undo step. */
function moveSelection(dx, dy, key) {
  const picked = selectedNodes().map((i) => nodes()[i]).filter(isObj);
  if (!picked.length || READ_ONLY) return;
  change(() => { settleAuto(); for (const n of picked) { n.x += dx; n.y += dy; } }, { key });
}

function deleteNodes(indices) {
  const doomed = new Set(indices);
  const gone = nodes().filter((n, i) => doomed.has(i) && isObj(n)).map((n) => n.id);
  change(() => {
    settleAuto();
    graph.nodes = graph.nodes.filter((_, i) => !doomed.has(i));
    // An edge goes with its node, unless another node keeps that id.
    const left = new Set(graph.nodes.filter(isObj).map((n) => n.id));
    if (Array.isArray(graph.edges)) graph.edges = graph.edges.filter((e) => !(isObj(e) && ((gone.includes(e.from) && !left.has(e.from)) || (gone.includes(e.to) && !left.has(e.to)))));
    // A pin goes with its step.
    if (isObj(graph.pins)) {
      for (const id of gone) if (!left.has(id)) delete graph.pins[id];
      if (!Object.keys(graph.pins).length) delete graph.pins;
    }
    sel = null;
  }, { panel: true });
  say(gone.length === 1 ? `Deleted ${gone[0]}` : `Deleted ${gone.length} nodes`);
}

/** Shift+drag on the canvas: the nodes the box touches join the selection. */
function startBoxSelect(e) {
  const mark = $('marquee'), p0 = toCanvas(e.clientX, e.clientY), had = selectedNodes();
  let q = p0;
  const area = () => ({ x: Math.min(p0.x, q.x), y: Math.min(p0.y, q.y), w: Math.abs(q.x - p0.x), h: Math.abs(q.y - p0.y) });
  track((ev) => {
    q = toCanvas(ev.clientX, ev.clientY);
    const a = area();
    mark.removeAttribute('hidden');
    for (const [k, v] of Object.entries({ x: a.x, y: a.y, width: a.w, height: a.h })) mark.setAttribute(k, v);
  }, () => {
    mark.setAttribute('hidden', '');
    const a = area();
    const hit = nodes().map((n, i) => (isObj(n) ? [i, boxOf(n)] : null)).filter(Boolean)
      .filter(([, b]) => b.x < a.x + a.w && a.x < b.x + b.w && b.y < a.y + a.h && a.y < b.y + b.h).map(([i]) => i);
    select(nodeSelection([...had, ...hit]));
    if (hit.length) say(`Selected ${selectedNodes().length} nodes`);
  });
}

function renderManyPanel(box) {
  const picked = selectedNodes().map((i) => nodes()[i]).filter(isObj);
  box.append(h('div', { class: 'heading' }, h('h3', { text: `${picked.length} nodes selected` }), h('span', { class: 'badge', text: 'Selection' })));
  box.append(h('p', { class: 'muted', 'data-testid': 'selection-ids', text: picked.map((n) => n.id).join(', ') }));
  box.append(h('p', { class: 'muted', text: 'Drag one of them to move them all. Ctrl+C copies them as design JSON, Ctrl+D duplicates them.' }));
  box.append(h('div', { class: 'row' },
    h('button', { 'data-testid': 'btn-duplicate', onclick: duplicateSelection, text: 'Duplicate' }),
    h('button', { 'data-testid': 'btn-delete', onclick: deleteSelection, text: 'Delete nodes' })));
}

document.addEventListener('copy', (e) => {
  const t = e.target;
  if (t instanceof Element && t.closest('input, textarea, select, [contenteditable="true"], dialog')) return;
  const d = selectionDesign();
  if (!d) return;
  e.clipboardData.setData('text/plain', JSON.stringify(d, null, 2));
  e.preventDefault();
  say(`Copied ${d.nodes.length} node${d.nodes.length === 1 ? '' : 's'} as design JSON`);
});
document.addEventListener('paste', (e) => {
  const t = e.target;
  if (READ_ONLY || (t instanceof Element && t.closest('input, textarea, select, [contenteditable="true"], dialog'))) return;
  const text = e.clipboardData ? e.clipboardData.getData('text/plain') : '';
  if (!text) return;
  e.preventDefault();
  pasteDesign(text);
});

