// ---------------------------------------------------------------------------------------------
// View: pan and zoom, Fit, the overview drawing when zoomed out, the minimap, full screen.
// Invariant: Fit shows every node (and every edge's route). Below READABLE_K a node's 13-px
// title would be under 10 px on screen, so nodes are drawn in the overview form instead: only
// their title, in letters at least OVERVIEW_PX high on screen (zoomStep names the zoom that form
// was drawn for, null when nodes are drawn in full).
// ---------------------------------------------------------------------------------------------
const READABLE_K = 0.75, OVERVIEW_PX = 9, ZOOM_STEP = 1.25, MIN_K = 0.05, MAX_K = 2.5;
let zoomStep = null;

function applyView() {
  viewportEl.setAttribute('transform', `translate(${view.x},${view.y}) scale(${view.k})`);
  $('zoom-level').textContent = `${Math.round(view.k * 100)}%`;
  placeNoteEditor();
  $('grid').setAttribute('patternTransform', `translate(${view.x},${view.y}) scale(${view.k})`);
  const step = view.k >= READABLE_K ? null : Math.floor(Math.log(view.k) / Math.log(ZOOM_STEP) + 1e-9);
  if (step !== zoomStep) { zoomStep = step; render(); return; }
  updateMinimap();
}

/** The box around every node and edge route, or null for an empty design. */
function designBounds() {
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  const add = (x, y) => { x0 = Math.min(x0, x); y0 = Math.min(y0, y); x1 = Math.max(x1, x); y1 = Math.max(y1, y); };
  for (const n of nodes()) if (isObj(n)) { const b = boxOf(n); add(b.x, b.y); add(b.x + b.w, b.y + b.h); }
  if (!isFinite(x0)) return null;
  for (const r of routes()) if (r) for (const p of r.pts) add(p.x, p.y);
  return { x0, y0, x1, y1 };
}

function fit() {
  const r = canvasEl.getBoundingClientRect();
  const b = designBounds();
  if (!b || !r.width || !r.height) { view = { x: 0, y: 0, k: 1 }; applyView(); return; }
  const m = 40;
  const k = Math.max(MIN_K, Math.min(1.2, (r.width - 2 * m) / (b.x1 - b.x0), (r.height - 2 * m) / (b.y1 - b.y0)));
  view = { k, x: (r.width - (b.x1 - b.x0) * k) / 2 - b.x0 * k, y: (r.height - (b.y1 - b.y0) * k) / 2 - b.y0 * k };
  applyView();
}

function zoomAt(factor, cx, cy) { zoomTo(view.k * factor, cx, cy); }

/** Zooms to `k` (within MIN_K..MAX_K), keeping the point (cx, cy) of the canvas where it is. */
function zoomTo(k0, cx, cy) {
  const k = Math.max(MIN_K, Math.min(MAX_K, k0));
  view.x = cx - (cx - view.x) * (k / view.k);
  view.y = cy - (cy - view.y) * (k / view.k);
  view.k = k;
  applyView();
}

/** The part of the design's plane the canvas shows. */
function visibleArea() {
  const r = canvasEl.getBoundingClientRect();
  return { x0: -view.x / view.k, y0: -view.y / view.k, x1: (r.width - view.x) / view.k, y1: (r.height - view.y) / view.k };
}

/** The minimap: every node, and the visible area as a frame; shown while some of the design is
 * out of view. Clicking or dragging on it moves the view there. */
function drawMinimap() {
  const box = $('minimap-nodes');
  box.replaceChildren(...nodes().filter(isObj).map((n) => { const b = boxOf(n); return el('rect', { x: b.x, y: b.y, width: b.w, height: b.h, rx: 6, class: n.type === 'note' ? 'note' : '' }); }));
  updateMinimap();
}
function updateMinimap() {
  const map = $('minimap'), b = designBounds(), v = visibleArea();
  const inView = !b || (b.x0 >= v.x0 && b.y0 >= v.y0 && b.x1 <= v.x1 && b.y1 <= v.y1);
  map.toggleAttribute('hidden', inView); // an SVG element has no `hidden` property
  if (inView) return;
  const x0 = Math.min(b.x0, v.x0), y0 = Math.min(b.y0, v.y0), x1 = Math.max(b.x1, v.x1), y1 = Math.max(b.y1, v.y1);
  const pad = (x1 - x0 + y1 - y0) * 0.02;
  map.setAttribute('viewBox', `${x0 - pad} ${y0 - pad} ${x1 - x0 + 2 * pad} ${y1 - y0 + 2 * pad}`);
  const frame = $('minimap-view');
  for (const [k, val] of Object.entries({ x: v.x0, y: v.y0, width: v.x1 - v.x0, height: v.y1 - v.y0 })) frame.setAttribute(k, val);
  frame.setAttribute('stroke-width', (x1 - x0 + y1 - y0) * 0.006);
}
$('minimap').addEventListener('pointerdown', (e) => {
  if (e.button !== 0) return;
  e.preventDefault();
  e.stopPropagation();
  const map = $('minimap');
  const go = (ev) => {
    const q = new DOMPoint(ev.clientX, ev.clientY).matrixTransform(map.getScreenCTM().inverse());
    const r = canvasEl.getBoundingClientRect();
    view.x = r.width / 2 - q.x * view.k;
    view.y = r.height / 2 - q.y * view.k;
    applyView();
  };
  go(e);
  track(go, () => {});
});

/** Full screen: the canvas covers the window (embedded, the host makes the frame cover its
 * window when told). */
function setFull(on) {
  document.body.classList.toggle('full', on);
  $('btn-full').setAttribute('aria-pressed', String(on));
  $('btn-full').textContent = on ? 'Exit full screen' : 'Full screen';
  notify('fullscreen', { on });
  canvasEl.focus({ preventScroll: true });
  updateMinimap();
}
$('btn-full').addEventListener('click', () => setFull(!document.body.classList.contains('full')));
$('btn-tidy').addEventListener('click', tidy);

function toCanvas(clientX, clientY) {
  const r = svg.getBoundingClientRect();
  return { x: (clientX - r.left - view.x) / view.k, y: (clientY - r.top - view.y) / view.k };
}

