// ---------------------------------------------------------------------------------------------
// Notes written in place: a double-click on a sticky note opens a text box over it on the
// canvas. Ctrl+Enter or a click elsewhere keeps the text (one undo step, like the panel's Text
// field, which edits the same `text`); Escape drops the edit. While open, the box follows the
// view (pan, zoom, resize). Invariant: at most one note is being written in (`noteEdit`).
// ---------------------------------------------------------------------------------------------
/** The note being written in: {index, id, area} or null. */
let noteEdit = null;

/** Opens the text box over note `index`. */
function editNote(index) {
  const node = nodes()[index];
  if (READ_ONLY || !isObj(node) || node.type !== 'note') return;
  closeNoteEditor(true);
  const area = h('textarea', { class: 'note-editor', 'data-testid': 'note-editor', 'aria-label': `Text of note ${node.id}`, rows: 5 });
  area.value = typeof node.text === 'string' ? node.text : '';
  noteEdit = { index, id: node.id, area };
  area.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); closeNoteEditor(false); canvasEl.focus({ preventScroll: true }); }
    else if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); e.stopPropagation(); closeNoteEditor(true); canvasEl.focus({ preventScroll: true }); }
  });
  area.addEventListener('blur', () => { if (noteEdit && noteEdit.area === area) closeNoteEditor(true); });
  // In the note's own colour.
  const box = document.querySelector(`#nodes [data-node-index="${index}"] .box`);
  if (box) area.style.background = getComputedStyle(box).fill;
  canvasEl.append(area);
  placeNoteEditor();
  area.focus({ preventScroll: true });
  area.setSelectionRange(area.value.length, area.value.length);
  say(`Writing in note ${node.id}: Ctrl+Enter or a click elsewhere keeps it, Escape drops it`);
}

/** Closes the text box; `keep` writes its text into the note (when it changed). */
function closeNoteEditor(keep) {
  if (!noteEdit) return;
  const { index, id, area } = noteEdit;
  noteEdit = null;
  area.remove();
  const node = nodes()[index];
  if (!keep || !isObj(node) || node.id !== id) return;
  const text = area.value;
  if (text === (typeof node.text === 'string' ? node.text : '')) return;
  change(() => set(node, 'text', text === '' ? undefined : text), { panel: true });
  say(`Wrote in note ${id}`);
}

/** Puts the open text box over its note, as the view shows the note now. */
function placeNoteEditor() {
  if (!noteEdit) return;
  const node = nodes()[noteEdit.index];
  if (!isObj(node) || node.id !== noteEdit.id) { closeNoteEditor(false); return; }
  const p = pos(node), s = sizeOf(node), st = noteEdit.area.style;
  st.left = `${p.x * view.k + view.x}px`;
  st.top = `${p.y * view.k + view.y}px`;
  st.width = `${Math.max(200, s.w * view.k)}px`;
  st.height = `${Math.max(110, s.h * view.k)}px`;
}

svg.addEventListener('dblclick', (e) => {
  const nodeEl = e.target.closest('.node');
  const index = nodeEl ? Number(nodeEl.dataset.nodeIndex) : -1;
  if (READ_ONLY || !isObj(nodes()[index]) || nodes()[index].type !== 'note') return;
  e.preventDefault();
  editNote(index);
});
