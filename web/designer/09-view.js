// ---------------------------------------------------------------------------------------------
// View: pan and zoom, Fit, semantic zoom, the minimap, full screen.
// Invariants: from Fit's zoom up, titles are whole and never under TITLE_PX on screen (zoomed out
// further by hand they shrink, and are cut last). At FULL_K and above nodes are drawn at
// full size; below it (zoomStep names the step of the zoom ladder the canvas was drawn for, null
// at full size) their text is drawn larger for that step, so a node shows what its box has room
// for: its whole title first, then its type line and what it does. Fit shows every node at the
// largest zoom that fits, but never below readableK (the zoom at which every title fits its box
// whole); a design too large for that is shown from its start, and the minimap moves the view.
// ---------------------------------------------------------------------------------------------
/** FULL_K: the zoom at which a full-size title's 13-px letters are TITLE_PX on screen. */
const TITLE_PX = 11, DETAIL_PX = 10, SMALLEST_PX = 6, FULL_K = TITLE_PX / 13;
const LADDER = 6, MIN_K = 0.05, MAX_K = 2.5;
let zoomStep = null;

/** The zoom the canvas's text is drawn for: 1 at full size, else the step of the ladder (six steps
 * a doubling) at or below the view's zoom. */
function drawZoom() { return zoomStep === null ? 1 : Math.pow(2, zoomStep / LADDER); }
/** The step of the ladder at or below zoom `k`; null from FULL_K up. */
function stepOf(k) { return k >= FULL_K ? null : Math.floor(Math.log2(k) * LADDER + 1e-9); }

function applyView() {
  viewportEl.setAttribute('transform', `translate(${view.x},${view.y}) scale(${view.k})`);
  $('zoom-level').textContent = `${Math.round(view.k * 100)}%`;
  placeNoteEditor();
  $('grid').setAttribute('patternTransform', `translate(${view.x},${view.y}) scale(${view.k})`);
  const step = stepOf(view.k);
  if (step !== zoomStep) { zoomStep = step; render(); return; }
  updateMinimap();
}

/** The smallest zoom (a step of the ladder, FULL_K at most) at which every node's title fits its
 * box whole in letters TITLE_PX high: where Fit stops shrinking. */
function readableK() {
  const list = nodes().filter((n) => isObj(n) && titleOf(n));
  const whole = (k) => list.every((n) => {
    const size = sizeOf(n), lines = nodeLines(n, size, k).filter((l) => l.cls.startsWith('title'));
    return lines.length && lines.every((l) => l.px * k >= TITLE_PX - 0.01) && lines.map((l) => l.text).join('').replace(/\s/g, '') === titleOf(n).replace(/\s/g, '');
  });
  let best = FULL_K;
  for (let step = stepOf(FULL_K * 0.999); step >= -LADDER * 3; step--) {
    const k = Math.pow(2, step / LADDER);
    if (!whole(k)) break;
    best = k;
  }
  return best;
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

/** Fit: the whole design in view, as large as fits (at most 120 %), never below readableK; a
 * design larger than that is shown from its top left (what does not fit is centred). */
function fit() {
  const r = canvasEl.getBoundingClientRect();
  const b = designBounds();
  if (!b || !r.width || !r.height) { view = { x: 0, y: 0, k: 1 }; applyView(); return; }
  const m = 40, w = b.x1 - b.x0, hgt = b.y1 - b.y0;
  const k = Math.max(MIN_K, Math.min(1.2, Math.max(readableK(), Math.min((r.width - 2 * m) / w, (r.height - 2 * m) / hgt))));
  const place = (room, size, start) => (size * k <= room - 2 * m ? (room - size * k) / 2 : m) - start * k;
  view = { k, x: place(r.width, w, b.x0), y: place(r.height, hgt, b.y0) };
  applyView();
}

/** Puts `node` in the middle of the view, at the zoom it has. */
function centerOn(node) {
  if (!node) return;
  const r = canvasEl.getBoundingClientRect(), b = boxOf(node);
  view.x = r.width / 2 - (b.x + b.w / 2) * view.k;
  view.y = r.height / 2 - (b.y + b.h / 2) * view.k;
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

