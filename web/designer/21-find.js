// ---------------------------------------------------------------------------------------------
// Find and quick-add: a box over the canvas (Ctrl+K, or / outside a text field). Typed words find
// nodes by title, id, type and the text of their fields; the best match is selected and put in
// the middle of the view, Enter goes to the next one (Shift+Enter the one before), Escape closes.
// Typed after a "+", they name a node type instead, and Enter adds one at the pointer (where it
// is over the canvas) or in the middle of the view. The list under the box shows what Enter does.
// ---------------------------------------------------------------------------------------------
const FIND_LIST = 8;
const findBox = h('div', { class: 'find', 'data-testid': 'find', role: 'search', hidden: true });
const findInput = h('input', { type: 'search', 'data-testid': 'find-input', placeholder: 'Find a node · +type adds one', 'aria-label': 'Find a node by title, id, type or field text; +type adds a node of that type', spellcheck: 'false', autocomplete: 'off' });
const findCount = h('span', { class: 'find-count', 'data-testid': 'find-count', 'aria-live': 'polite' });
const findList = h('ul', { class: 'find-list', 'data-testid': 'find-list' });
findBox.append(h('div', { class: 'row' }, findInput, findCount), findList);
canvasEl.append(findBox);
/** What the box offers: {add: false, hits: node indices} or {add: true, hits: types}; `at` the
 * one Enter takes. */
let finding = { add: false, hits: [], at: 0 };
/** Where the pointer last was over the canvas (page coordinates), or null. */
let pointerAt = null;
canvasEl.addEventListener('pointermove', (e) => { pointerAt = { x: e.clientX, y: e.clientY }; });
canvasEl.addEventListener('pointerleave', () => { pointerAt = null; });

/** Opens the find box (the words typed last selected, so typing replaces them). */
function openFind() {
  findBox.hidden = false;
  findInput.focus();
  findInput.select();
  if (findInput.value) search(false);
}

/** Closes the find box; the canvas gets the keyboard back, the selection stays. */
function closeFind() {
  findBox.hidden = true;
  canvasEl.focus({ preventScroll: true });
}

/** The text a node is found by: its title, id, type (and its name) and every field's value. */
function findText(n) {
  const { x, y, ...fields } = n;
  return [n.label, n.id, n.type, typeInfo(n.type).title, JSON.stringify(fields)].map((v) => String(v ?? '').toLowerCase());
}

/** The indices of the nodes matching `query`: titles and ids that begin with it first, then those
 * that hold it, then a matching type, then field text; in the design's order within each. */
function nodesMatching(query) {
  const q = query.trim().toLowerCase();
  if (!q) return [];
  const ranked = [];
  nodes().forEach((n, i) => {
    if (!isObj(n)) return;
    const [label, id, type, title, fields] = findText(n);
    const rank = label.startsWith(q) || id.startsWith(q) ? 0 : label.includes(q) || id.includes(q) ? 1 : type.includes(q) || title.includes(q) ? 2 : fields.includes(q) ? 3 : -1;
    if (rank >= 0) ranked.push([rank, i]);
  });
  return ranked.sort((a, b) => a[0] - b[0] || a[1] - b[1]).map(([, i]) => i);
}

/** Runs the box's words again; `go` jumps to the first node found. */
function search(go = true) {
  const text = findInput.value;
  const add = text.trimStart().startsWith('+');
  finding = { add, hits: add ? typesMatching(text.trimStart().slice(1)) : nodesMatching(text), at: 0 };
  if (go && !add && finding.hits.length) jumpTo(finding.hits[0]);
  showFound();
}

/** The count and the list under the box. */
function showFound() {
  const { add, hits, at } = finding;
  const empty = !findInput.value.trim() || findInput.value.trim() === '+';
  findCount.textContent = empty ? '' : add ? (READ_ONLY ? 'read-only' : hits.length ? 'Enter adds' : 'no such type')
    : hits.length ? `${at + 1} of ${hits.length}` : 'no match';
  findList.replaceChildren(...(empty ? [] : hits.slice(0, FIND_LIST)).map((hit, k) => {
    const item = add
      ? h('li', { 'data-testid': 'quick-add-' + hit, 'data-type': hit }, h('span', { class: 'swatch', style: `background: ${typeInfo(hit).colour}` }), h('span', { text: `Add ${typeInfo(hit).title}` }), h('small', { text: hit }))
      : h('li', { 'data-testid': 'find-item-' + nodes()[hit].id }, h('span', { text: titleOf(nodes()[hit]) || nodes()[hit].id }), h('small', { text: `${nodes()[hit].type} · ${nodes()[hit].id}` }));
    if (k === at % FIND_LIST && (add || at < FIND_LIST)) item.classList.add('active');
    item.addEventListener('pointerdown', (e) => e.preventDefault()); // the box keeps the keyboard
    item.addEventListener('click', () => { finding.at = k; take(); });
    return item;
  }));
}

/** Selects node `index` and puts it in the middle of the view. */
function jumpTo(index) {
  select({ node: index });
  centerOn(nodes()[index]);
}

/** Enter: the next node found (or the one before), or adds the type offered. */
function take(step = 0) {
  const { add, hits } = finding;
  if (!hits.length) return;
  if (add) { quickAdd(hits[finding.at % hits.length]); return; }
  finding.at = (finding.at + step + hits.length) % hits.length;
  jumpTo(hits[finding.at]);
  showFound();
}

/** Adds a node of `type` at the pointer when it is over the canvas, else in the middle of the
 * view; closes the box (the new node is selected). */
function quickAdd(type) {
  if (READ_ONLY) return;
  const r = canvasEl.getBoundingClientRect();
  const over = pointerAt && pointerAt.x >= r.left && pointerAt.x <= r.right && pointerAt.y >= r.top && pointerAt.y <= r.bottom;
  const q = toCanvas(over ? pointerAt.x : r.left + r.width / 2, over ? pointerAt.y : r.top + r.height / 2);
  const size = sizeOf({ type, text: '' });
  findInput.value = '';
  closeFind();
  addNode(type, { x: q.x - size.w / 2, y: q.y - size.h / 2 });
}

findInput.addEventListener('input', () => search());
findInput.addEventListener('keydown', (e) => {
  if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); closeFind(); return; }
  if (e.key === 'Enter') { e.preventDefault(); take(finding.add ? 0 : e.shiftKey ? -1 : 1); return; }
  if ((e.key === 'ArrowDown' || e.key === 'ArrowUp') && finding.hits.length) {
    e.preventDefault();
    const n = Math.min(finding.hits.length, finding.add ? FIND_LIST : finding.hits.length);
    finding.at = (finding.at + (e.key === 'ArrowDown' ? 1 : -1) + n) % n;
    if (!finding.add) jumpTo(finding.hits[finding.at]);
    showFound();
  }
});
