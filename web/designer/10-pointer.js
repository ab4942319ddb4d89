// ---------------------------------------------------------------------------------------------
// Pointer: select, drag nodes, connect ports, pan, zoom, and palette drops
// ---------------------------------------------------------------------------------------------
function track(onMove, onUp) {
  const move = (ev) => onMove(ev);
  const up = (ev) => {
    window.removeEventListener('pointermove', move);
    window.removeEventListener('pointerup', up);
    window.removeEventListener('pointercancel', up);
    onUp(ev);
  };
  window.addEventListener('pointermove', move);
  window.addEventListener('pointerup', up);
  window.addEventListener('pointercancel', up);
}

svg.addEventListener('pointerdown', (e) => {
  if (e.button !== 0) return;
  e.preventDefault();
  canvasEl.focus({ preventScroll: true });
  const portOut = e.target.closest('.port-out');
  const nodeEl = e.target.closest('.node');
  const edgeEl = e.target.closest('.edge');
  if (nodeEl && portOut && !READ_ONLY) return startConnect(Number(nodeEl.dataset.nodeIndex), e, portOut.dataset.label);
  if (nodeEl) {
    const index = Number(nodeEl.dataset.nodeIndex), picked = selectedNodes();
    // Shift-click adds a node to the selection or takes it out; a click on a selected node
    // keeps the selection, so dragging it moves them all.
    if (e.shiftKey && !READ_ONLY) { select(nodeSelection(picked.includes(index) ? picked.filter((i) => i !== index) : [...picked, index])); return; }
    if (!picked.includes(index)) select({ node: index });
    if (!READ_ONLY) startNodeDrag(index, e);
    return;
  }
  if (edgeEl) { select({ edge: Number(edgeEl.dataset.edgeIndex) }); return; }
  if (e.shiftKey && !READ_ONLY) { startBoxSelect(e); return; }
  if (sel) select(null);
  startPan(e);
});

function startNodeDrag(index, e) {
  const picked = selectedNodes().includes(index) ? selectedNodes() : [index];
  const group = picked.map((i) => nodes()[i]).filter(isObj).map((node) => ({ node, start: pos(node) }));
  const before = snapshot();
  const p0 = { x: e.clientX, y: e.clientY };
  let moved = false;
  track((ev) => {
    const dx = (ev.clientX - p0.x) / view.k, dy = (ev.clientY - p0.y) / view.k;
    if (!moved && Math.hypot(ev.clientX - p0.x, ev.clientY - p0.y) < 3) return;
    if (!moved) settleAuto();
    moved = true;
    dragging = true;
    for (const { node, start } of group) {
      node.x = Math.round(start.x + dx);
      node.y = Math.round(start.y + dy);
    }
    render();
  }, () => {
    dragging = false;
    if (!moved) return;
    undoStack.push(before);
    redoStack = [];
    lastKey = null;
    changed();
  });
}

/** Drags a wire from the port of `label` (undefined: the plain port) of node `index`; dropped
 * on a node, it becomes an edge with that label. */
function startConnect(index, e, label) {
  const from = nodes()[index];
  const wire = $('wire');
  const s = sizeOf(from), p = pos(from);
  const x1 = p.x + s.w, y1 = p.y + portY(from, label);
  wire.hidden = false;
  wire.setAttribute('d', curve(x1, y1, x1, y1));
  connecting = () => { wire.hidden = true; connecting = null; };
  track((ev) => {
    if (!connecting) return;
    const q = toCanvas(ev.clientX, ev.clientY);
    wire.setAttribute('d', curve(x1, y1, q.x, q.y));
  }, (ev) => {
    if (!connecting) return;
    connecting();
    const hit = document.elementFromPoint(ev.clientX, ev.clientY);
    const target = hit && hit.closest ? hit.closest('.node') : null;
    if (target) connect(index, Number(target.dataset.nodeIndex), label);
  });
}
let connecting = null;

function startPan(e) {
  const p0 = { x: e.clientX, y: e.clientY }, v0 = { ...view };
  canvasEl.style.cursor = 'grabbing';
  track((ev) => {
    view.x = v0.x + ev.clientX - p0.x;
    view.y = v0.y + ev.clientY - p0.y;
    applyView();
  }, () => { canvasEl.style.cursor = ''; });
}

canvasEl.addEventListener('wheel', (e) => {
  e.preventDefault();
  const r = svg.getBoundingClientRect();
  zoomAt(Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
}, { passive: false });

function zoomButton(factor) {
  const r = svg.getBoundingClientRect();
  zoomAt(factor, r.width / 2, r.height / 2);
}
$('btn-zoom-in').addEventListener('click', () => zoomButton(1.2));
$('btn-zoom-out').addEventListener('click', () => zoomButton(1 / 1.2));
$('btn-fit').addEventListener('click', fit);
/** 100%: full size, keeping what is in the middle of the view there. */
$('btn-zoom-reset').addEventListener('click', () => {
  const r = svg.getBoundingClientRect();
  zoomTo(1, r.width / 2, r.height / 2);
});

/** The node types whose name or title holds `query` (those beginning with it first), in the
 * palette's order; every type for no words. */
function typesMatching(query) {
  const q = String(query ?? '').trim().toLowerCase();
  const words = (type) => [type.toLowerCase(), typeInfo(type).title.toLowerCase()];
  const begins = TYPES.filter((t) => words(t).some((w) => w.startsWith(q)));
  return [...begins, ...TYPES.filter((t) => !begins.includes(t) && words(t).some((w) => w.includes(q)))];
}

/** Shows the palette's types that its search box's words match (name, title or what it does);
 * Enter in the box adds the first one shown, Escape empties it. */
function filterPalette() {
  const q = $('palette-search').value.trim().toLowerCase();
  const shown = new Set(typesMatching(q));
  for (const b of $('palette').querySelectorAll('.palette-item')) {
    b.hidden = !!q && !shown.has(b.dataset.type) && !typeInfo(b.dataset.type).about.toLowerCase().includes(q);
  }
  $('palette-none').hidden = !q || [...$('palette').querySelectorAll('.palette-item')].some((b) => !b.hidden);
}

/** The palette's search box (made once, above the types). */
function paletteSearch() {
  if ($('palette-search')) return;
  const box = h('input', { id: 'palette-search', type: 'search', 'data-testid': 'palette-search', placeholder: 'Search types', 'aria-label': 'Search the node types; Enter adds the first one', spellcheck: 'false', autocomplete: 'off' });
  box.addEventListener('input', filterPalette);
  box.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && box.value) { e.preventDefault(); e.stopPropagation(); box.value = ''; filterPalette(); }
    if (e.key !== 'Enter') return;
    e.preventDefault();
    const first = [...$('palette').querySelectorAll('.palette-item')].find((b) => !b.hidden);
    if (first) addNode(first.dataset.type);
  });
  $('palette').before(box);
  $('palette').after(h('p', { id: 'palette-none', class: 'muted', 'data-testid': 'palette-none', text: 'No type matches.', hidden: true }));
}

function buildPalette() {
  paletteSearch();
  const box = $('palette');
  box.replaceChildren();
  for (const type of TYPES) {
    const info = typeInfo(type);
    const b = h('button', { class: 'palette-item', 'data-testid': 'palette-' + type, 'data-type': type, title: info.about + ' (click to add, or drag onto the canvas)' },
      h('span', { class: 'swatch', style: `background: ${info.colour}` }), h('span', { text: info.title }));
    let suppressClick = false;
    b.addEventListener('pointerdown', (e) => {
      if (e.button !== 0) return;
      suppressClick = false;
      const p0 = { x: e.clientX, y: e.clientY };
      let ghost = null;
      track((ev) => {
        if (!ghost && Math.hypot(ev.clientX - p0.x, ev.clientY - p0.y) > 4) {
          ghost = h('div', { class: 'ghost', text: info.title });
          document.body.append(ghost);
        }
        if (ghost) { ghost.style.left = ev.clientX + 8 + 'px'; ghost.style.top = ev.clientY + 8 + 'px'; }
      }, (ev) => {
        const dragged = ghost || Math.hypot(ev.clientX - p0.x, ev.clientY - p0.y) > 4;
        if (ghost) ghost.remove();
        if (!dragged) return;
        suppressClick = true;
        const r = canvasEl.getBoundingClientRect();
        if (ev.type === 'pointerup' && ev.clientX >= r.left && ev.clientX <= r.right && ev.clientY >= r.top && ev.clientY <= r.bottom) {
          const q = toCanvas(ev.clientX, ev.clientY);
          addNode(type, { x: q.x - NODE_W / 2, y: q.y - NODE_H / 2 });
          canvasEl.focus({ preventScroll: true });
        }
      });
    });
    b.addEventListener('click', () => {
      if (suppressClick) { suppressClick = false; return; }
      addNode(type);
    });
    box.append(b);
  }
  filterPalette();
}

