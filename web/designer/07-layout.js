// ---------------------------------------------------------------------------------------------
// Layout: a layered layout (the inlined dagre: layers, crossing reduction, coordinates) for
// designs without positions and for Tidy, routes that take edges around node boxes, and spots
// for edge labels that no node covers.
// Invariants: positions of nodes without x/y are kept outside the graph (autoPos), so opening or
// editing fields does not rewrite the JSON; Tidy (one undoable change) writes them, and so does a
// change that adds, removes, connects or moves nodes (so no other node moves with it). Layers
// run left to right, so branches use the vertical dimension; a long layout is cut into rows of
// whole layers, one under the other, where that lets Fit show the nodes larger in the canvas
// (wrapRows). An edge is drawn on the first clear route of: the points of the last layered
// layout (while both its nodes stay where that layout put them), a curve from port to port, an
// orthogonal route around every node box (a shortest path with few bends, found with A* on the
// lines that run along the boxes at ROUTE_GAP).
// ---------------------------------------------------------------------------------------------
const LAYERED = { rankdir: 'LR', ranksep: 64, nodesep: 40, edgesep: 20, marginx: 0, marginy: 0 };
const ROUTE_GAP = 16, ROUTE_BEND = 30, LABEL_H = 18, ORIGIN = 40, ROW_GAP = 48, MAX_ROWS = 12;
/** The last layered layout: the positions it gave (by node index) and its edge points (by edge
 * index), valid for the edges it was made for. */
let layoutPlan = null;
/** The layout of the nodes without positions, kept while their ids, sizes and edges are the same. */
let autoCache = { key: null, at: [], points: new Map() };

function edgeLabelText(e) { return e.label !== undefined && e.label !== null && e.label !== '' ? clip(String(e.label), 18) : null; }
function labelWidth(text) { return text.length * 6.6 + 12; }
function boxOf(n) { const p = pos(n), s = sizeOf(n); return { x: p.x, y: p.y, w: s.w, h: s.h }; }

/** Lays out `list` (node objects of the graph): the nodes with edges in layers by dagre, wrapped
 * into rows when that shows them larger in the canvas (see wrapRows), the notes in rows above
 * them. Answers top-left positions (in the order of `list`) from (ORIGIN, ORIGIN) and the edge
 * points by edge index, in the same coordinates. */
function arrange(list) {
  const flow = list.filter((n) => n.type !== 'note'), notes = list.filter((n) => n.type === 'note');
  const { at, points } = wrapRows(flow, layered(flow));
  // Notes above the flow, left to right, in rows as wide as the flow.
  let x1 = 0, y0 = 0;
  for (const p of at.values()) y0 = Math.min(y0, p.y);
  for (const [n, p] of at) x1 = Math.max(x1, p.x + sizeOf(n).w);
  let nx = 0, ny = 0, rowH = 0;
  const placed = [];
  for (const n of notes) {
    const s = sizeOf(n);
    if (nx > 0 && nx + s.w > Math.max(x1, NOTE_W)) { nx = 0; ny += rowH + 24; rowH = 0; }
    placed.push([n, { x: nx, y: ny }]);
    nx += s.w + 24; rowH = Math.max(rowH, s.h);
  }
  for (const [n, p] of placed) at.set(n, { x: p.x, y: y0 - (ny + rowH + 40) + p.y });
  let x0 = Infinity, top = Infinity;
  for (const p of at.values()) { x0 = Math.min(x0, p.x); top = Math.min(top, p.y); }
  const dx = ORIGIN - (isFinite(x0) ? x0 : 0), dy = ORIGIN - (isFinite(top) ? top : 0);
  // Whole numbers for positions; edge points move with their nodes' rounding.
  const shift = new Map();
  for (const [n, p] of at) shift.set(n, { x: Math.round(p.x + dx), y: Math.round(p.y + dy) });
  for (const pts of points.values()) for (const p of pts) { p.x += dx; p.y += dy; }
  return { at: list.map((n) => shift.get(n)), points };
}

/** The layered layout of `flow` (nodes without notes) by dagre, left to right, with its branches
 * ordered (branchOrder): top-left positions by node and the points of the edges among them by
 * edge index, in dagre's coordinates. */
function layered(flow) {
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ ...LAYERED });
  const keyOf = new Map(), byId = new Map();
  flow.forEach((n, i) => {
    const s = sizeOf(n);
    keyOf.set(n, 'n' + i);
    g.setNode('n' + i, { width: s.w, height: s.h });
    if (!byId.has(n.id)) byId.set(n.id, 'n' + i);
  });
  for (const i of edgeOrder()) {
    const e = edges()[i];
    const a = byId.get(e.from), b = byId.get(e.to);
    if (!a || !b || a === b) continue;
    const text = edgeLabelText(e);
    g.setEdge(a, b, text ? { width: labelWidth(text), height: LABEL_H, labelpos: 'c' } : {}, 'e' + i);
  }
  dagre.layout(g);
  const at = new Map();
  for (const n of flow) {
    const d = g.node(keyOf.get(n)), s = sizeOf(n);
    at.set(n, { x: d.x - s.w / 2, y: d.y - s.h / 2 });
  }
  const points = new Map();
  for (const ed of g.edges()) points.set(Number(ed.name.slice(1)), g.edge(ed).points.map((p) => ({ x: p.x, y: p.y })));
  branchOrder(flow, at, points);
  return { at, points };
}

/** The room the canvas gives a layout at Fit, in the design's units at zoom 1 (Fit keeps a
 * 40-pixel margin); a usual window's canvas when the canvas is not shown. */
function roomForLayout() {
  const r = canvasEl.getBoundingClientRect();
  return r.width > 200 && r.height > 200 ? { w: r.width - 80, h: r.height - 80 } : { w: 1100, h: 760 };
}

/** A long layered layout cut into rows: the layers (columns of the left-to-right layout) in runs
 * of consecutive layers, each run laid out again on its own and put under the one before,
 * ROW_GAP apart (the edges from one row to a later one go round through those gaps). Of one to
 * MAX_ROWS rows, the cut whose Fit would show the nodes largest (up to full size) wins, the
 * fewest rows among near-equals; so a long chain wraps into rows that fill the canvas, and a
 * branch stays together within its rows. `whole` is layered(flow). */
function wrapRows(flow, whole) {
  const layer = layersOf(flow), count = Math.max(0, ...layer.values()) + 1;
  const room = roomForLayout();
  let best = { ...whole, score: scoreOf(extentOf(whole), room) };
  // Cut into runs of as many layers each, or of as many nodes each (a layer goes where the nodes
  // before it put it).
  const before = [];
  for (let l = 0, sum = 0; l < count; l++) { before.push(sum); sum += flow.filter((n) => layer.get(n) === l).length; }
  const ways = [(l, rows) => Math.floor((l * rows) / count), (l, rows) => Math.floor((before[l] * rows) / flow.length)];
  for (let rows = 2; rows <= Math.min(MAX_ROWS, count); rows++) {
    for (const rowOf of ways) {
      const cuts = [];
      for (let j = 0; j < rows; j++) cuts.push(flow.filter((n) => rowOf(layer.get(n), rows) === j));
      const made = stackRows(cuts.filter((c) => c.length).map((c) => layered(c)));
      const score = scoreOf(extentOf(made), room);
      if (score > best.score * 1.03) best = { ...made, score };
    }
  }
  return best;
}

/** Each node's layer: the most edges on a path to it from a node nothing leads to (the edges that
 * close a cycle left out). */
function layersOf(flow) {
  const byId = new Map(), kids = new Map(flow.map((n) => [n, []])), led = new Set();
  for (const n of flow) if (!byId.has(n.id)) byId.set(n.id, n);
  for (const e of edges()) {
    const a = isObj(e) ? byId.get(e.from) : null, b = isObj(e) ? byId.get(e.to) : null;
    if (a && b && a !== b) { kids.get(a).push(b); led.add(b); }
  }
  // Depth first from the nodes nothing leads to: reversed, the order in which nodes were left is
  // one where every edge but those back to a node still open goes forward.
  const seen = new Set(), order = [];
  const visit = (n) => { seen.add(n); for (const k of kids.get(n)) if (!seen.has(k)) visit(k); order.push(n); };
  for (const n of [...flow.filter((m) => !led.has(m)), ...flow]) if (!seen.has(n)) visit(n);
  order.reverse();
  const at = new Map(order.map((n, i) => [n, i])), layer = new Map(flow.map((n) => [n, 0]));
  for (const n of order) for (const k of kids.get(n)) if (at.get(k) > at.get(n)) layer.set(k, Math.max(layer.get(k), layer.get(n) + 1));
  return layer;
}

/** Rows (layered layouts) one under the other, each from the left, ROW_GAP apart. */
function stackRows(rows) {
  const at = new Map(), points = new Map();
  let y = 0;
  for (const row of rows) {
    const b = extentOf(row);
    const dx = -b.x0, dy = y - b.y0;
    for (const [n, p] of row.at) at.set(n, { x: p.x + dx, y: p.y + dy });
    for (const [i, pts] of row.points) points.set(i, pts.map((p) => ({ x: p.x + dx, y: p.y + dy })));
    y += b.y1 - b.y0 + ROW_GAP;
  }
  return { at, points };
}

/** The box around a layout's nodes and edge points. */
function extentOf({ at, points }) {
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  const add = (x, y) => { x0 = Math.min(x0, x); y0 = Math.min(y0, y); x1 = Math.max(x1, x); y1 = Math.max(y1, y); };
  for (const [n, p] of at) { const s = sizeOf(n); add(p.x, p.y); add(p.x + s.w, p.y + s.h); }
  for (const pts of points.values()) for (const p of pts) add(p.x, p.y);
  return isFinite(x0) ? { x0, y0, x1, y1 } : { x0: 0, y0: 0, x1: 0, y1: 0 };
}

/** How large Fit would show a layout of extent `b` in `room`: its zoom, at most 1. */
function scoreOf(b, room) {
  return Math.min(1, room.w / Math.max(1, b.x1 - b.x0 + 2 * ROUTE_GAP), room.h / Math.max(1, b.y1 - b.y0 + 2 * ROUTE_GAP));
}

/** The port a node's edge leaves, for ordering: its index, the middle for a label no port has. */
function portRank(node, label) {
  const i = node ? portIndex(node, label) : -1;
  return i >= 0 ? i : node ? (portLabels(node).length - 1) / 2 : 0;
}

/** The indices of the edges in the order dagre is given them: each node's edges together (where
 * its first one is), from its last port to its first. dagre stacks the successors it was given
 * later above the earlier ones, so a node's branches tend to lie in the order of its ports. */
function edgeOrder() {
  const list = edges(), seen = new Set(), out = [];
  list.forEach((e) => {
    if (!isObj(e) || seen.has(e.from)) return;
    seen.add(e.from);
    const from = nodeById(e.from);
    const mine = list.map((x, j) => [x, j]).filter(([x]) => isObj(x) && x.from === e.from);
    mine.sort((p, q) => portRank(from, q[0].label) - portRank(from, p[0].label) || p[1] - q[1]);
    out.push(...mine.map(([, j]) => j));
  });
  return out;
}

/** Stacks the branches of each node with several ports top to bottom in the order of its ports,
 * where the layout stacked them otherwise and they can be moved whole: a branch is a child and
 * everything below it, reached from nowhere else, and no other node lies where they go.
 * Moves the positions in `at` and the points of the edges inside a branch (the edges into the
 * branches lose theirs: they are routed port to node). Left to right, so an inner branching
 * node's branches are ordered where their outer branch put them. */
function branchOrder(flow, at, points) {
  const byId = new Map();
  for (const n of flow) if (!byId.has(n.id)) byId.set(n.id, n);
  const links = [], kids = new Map(), parents = new Map();
  edges().forEach((e, i) => {
    const a = isObj(e) ? byId.get(e.from) : null, b = isObj(e) ? byId.get(e.to) : null;
    if (!a || !b || a === b) return;
    links.push({ a, b, i, label: e.label });
    if (!kids.has(a)) kids.set(a, []);
    kids.get(a).push(b);
    if (!parents.has(b)) parents.set(b, []);
    parents.get(b).push(a);
  });
  const below = (head) => {
    const seen = new Set([head]), todo = [head];
    while (todo.length) for (const k of kids.get(todo.pop()) || []) if (!seen.has(k)) { seen.add(k); todo.push(k); }
    return seen;
  };
  const box = (n) => ({ ...at.get(n), ...sizeOf(n) });
  const branching = flow.filter((n) => portLabels(n).length > 1).sort((p, q) => at.get(p).x - at.get(q).x);
  for (const B of branching) {
    const out = links.filter((l) => l.a === B).sort((l, m) => portRank(B, l.label) - portRank(B, m.label));
    const heads = [...new Set(out.map((l) => l.b))];
    if (heads.length < 2) continue;
    const bands = heads.map(below);
    const all = new Set();
    let ok = bands.every((band) => [...band].every((n) => n !== B && !all.has(n) && all.add(n)));
    ok = ok && bands.every((band, k) => [...band].every((n) => (parents.get(n) || []).every((p) => band.has(p) || (p === B && n === heads[k]))));
    if (!ok) continue;
    const ext = bands.map((band) => {
      const bs = [...band].map(box);
      return { top: Math.min(...bs.map((b) => b.y)), bot: Math.max(...bs.map((b) => b.y + b.h)), x0: Math.min(...bs.map((b) => b.x)), x1: Math.max(...bs.map((b) => b.x + b.w)) };
    });
    // Top to bottom as drawn, then in the order of their ports (branches of one port as drawn).
    const rank = heads.map((n) => Math.min(...out.filter((l) => l.b === n).map((l) => portRank(B, l.label))));
    const drawn = heads.map((_, k) => k).sort((p, q) => box(heads[p]).y - box(heads[q]).y);
    const wanted = drawn.slice().sort((p, q) => rank[p] - rank[q]);
    if (wanted.every((k, j) => k === drawn[j])) continue;
    // From where the highest branch begins, one under the other, the layout's gap apart; where no
    // other node lies.
    let y = Math.min(...ext.map((x) => x.top));
    const area = { top: y, x0: Math.min(...ext.map((x) => x.x0)), x1: Math.max(...ext.map((x) => x.x1)) };
    const moves = [];
    for (const k of wanted) { moves[k] = y - ext[k].top; y += ext[k].bot - ext[k].top + LAYERED.nodesep; }
    area.bot = y - LAYERED.nodesep;
    const among = flow.some((n) => { if (all.has(n)) return false; const b = box(n); return b.x < area.x1 && b.x + b.w > area.x0 && b.y < area.bot && b.y + b.h > area.top; });
    if (among) continue;
    bands.forEach((band, k) => {
      for (const n of band) at.get(n).y += moves[k];
      for (const l of links) if (band.has(l.a) && band.has(l.b) && points.has(l.i)) for (const p of points.get(l.i)) p.y += moves[k];
    });
    for (const l of out) points.delete(l.i);
  }
}

/** Positions for the nodes without x/y: a layered layout of them, below the placed ones. */
function layout() {
  autoPos = new Map();
  const all = nodes().filter(isObj);
  const missing = all.filter((n) => !(isNum(n.x) && isNum(n.y)));
  if (!missing.length) return;
  const key = JSON.stringify([missing.map((n) => [n.id, n.type, sizeOf(n)]), edges()]);
  if (autoCache.key !== key) autoCache = { key, ...arrange(missing) };
  const placed = all.filter((n) => isNum(n.x) && isNum(n.y));
  const dy = placed.length ? Math.max(...placed.map((n) => n.y + sizeOf(n).h)) + 80 - ORIGIN : 0;
  missing.forEach((n, i) => autoPos.set(n, { x: autoCache.at[i].x, y: autoCache.at[i].y + dy }));
  if (!placed.length) planFrom(autoCache.points);
}

/** Writes the drawn positions of the nodes without x/y into the graph. Called inside a change
 * that adds, removes, connects or moves nodes, which would otherwise lay the others out anew. */
function settleAuto() {
  for (const n of nodes()) if (isObj(n) && !(isNum(n.x) && isNum(n.y))) { const p = pos(n); n.x = Math.round(p.x); n.y = Math.round(p.y); }
}

/** Remembers the edge points of the layout just applied (valid while its nodes stay put). */
function planFrom(points) {
  layoutPlan = { edges: JSON.stringify(edges()), at: nodes().map((n) => (isObj(n) ? pos(n) : null)), points };
}

/** Tidy: lays the whole design out again (one undoable change), then fits it in view. */
function tidy() {
  if (READ_ONLY) return;
  const list = nodes().filter(isObj);
  if (!list.length) return;
  const { at, points } = arrange(list);
  change(() => { list.forEach((n, i) => { n.x = at[i].x; n.y = at[i].y; }); planFrom(points); }, {});
  fit();
  say(`Tidied ${list.length} nodes`);
}

/** The route of every edge and the spot of its label, for the graph on screen (kept while the
 * boxes and edges are the same). */
let routeCache = { key: null, routes: [] };
function routes() {
  const list = nodes();
  const key = JSON.stringify([list.map((n) => (isObj(n) ? [n.id, boxOf(n), portLabels(n)] : null)), edges(), !!dragging]);
  if (routeCache.key === key) return routeCache.routes;
  const boxes = list.map((n, i) => (isObj(n) ? { ...boxOf(n), index: i } : null)).filter(Boolean);
  const planned = layoutPlan && layoutPlan.edges === JSON.stringify(edges()) ? layoutPlan : null;
  const taken = [];
  const out = edges().map((e, i) => {
    if (!isObj(e)) return null;
    const ia = nodeIndexById(e.from), ib = nodeIndexById(e.to);
    if (ia < 0 || ib < 0) return null;
    const same = (j) => planned && planned.at[j] && isObj(list[j]) && planned.at[j].x === pos(list[j]).x && planned.at[j].y === pos(list[j]).y;
    const pts = planned && same(ia) && same(ib) ? planned.points.get(i) : null;
    const route = routeEdge(list[ia], list[ib], ia, ib, boxes, pts, e.label);
    const text = edgeLabelText(e);
    if (text) route.label = labelSpot(route.pts, labelWidth(text), boxes, taken);
    return route;
  });
  routeCache = { key, routes: out };
  return out;
}

/** The route of an edge labelled `label` from node `a` (from the port of its label) to `b`. */
function routeEdge(a, b, ia, ib, boxes, planned, label) {
  const A = boxOf(a), B = boxOf(b);
  const start = { x: A.x + A.w, y: A.y + portY(a, label) }, end = { x: B.x, y: B.y + B.h / 2 };
  const tries = [];
  if (planned && planned.length >= 2) tries.push(smoothPath([start, ...planned.slice(1, -1), end]));
  tries.push(smoothPath([start, end]));
  if (ia === ib) return tries[tries.length - 1];
  for (const t of tries) if (clearOf(t.pts, boxes, ia, ib)) return t;
  if (dragging) return tries[tries.length - 1];
  return orthoRoute(start, end, boxes, ROUTE_GAP) || orthoRoute(start, end, boxes, ROUTE_GAP / 2) || tries[tries.length - 1];
}

/** Whether a sampled path keeps out of every box: others' with a margin, its own nodes'
 * insides (it starts and ends on their edges). */
function clearOf(pts, boxes, ia, ib) {
  for (const b of boxes) {
    const own = b.index === ia || b.index === ib, m = own ? -2 : 4;
    for (const p of pts) if (p.x > b.x - m && p.x < b.x + b.w + m && p.y > b.y - m && p.y < b.y + b.h + m) return false;
  }
  return true;
}

/** A smooth path through `points` (horizontal at each of them), with samples along it. */
function smoothPath(points) {
  let d = `M ${points[0].x} ${points[0].y}`;
  const pts = [points[0]];
  for (let i = 1; i < points.length; i++) {
    const p = points[i - 1], q = points[i];
    const k = Math.max(i === 1 || i === points.length - 1 ? 40 : 0, Math.abs(q.x - p.x) / 2);
    const c1 = { x: p.x + k, y: p.y }, c2 = { x: q.x - k, y: q.y };
    d += ` C ${c1.x} ${c1.y}, ${c2.x} ${c2.y}, ${q.x} ${q.y}`;
    const steps = Math.max(16, Math.ceil((Math.abs(q.x - p.x) + Math.abs(q.y - p.y) + 2 * k) / 6));
    for (let s = 1; s <= steps; s++) {
      const t = s / steps, u = 1 - t;
      pts.push({ x: u * u * u * p.x + 3 * u * u * t * c1.x + 3 * u * t * t * c2.x + t * t * t * q.x, y: u * u * u * p.y + 3 * u * u * t * c1.y + 3 * u * t * t * c2.y + t * t * t * q.y });
    }
  }
  return { d, pts };
}

/** A route of horizontal and vertical segments from `start` (leaving rightwards) to `end`
 * (arriving rightwards) that keeps `gap` away from every box; null when there is none. */
function orthoRoute(start, end, boxes, gap) {
  const R = boxes.map((b) => ({ x0: b.x - gap, y0: b.y - gap, x1: b.x + b.w + gap, y1: b.y + b.h + gap }));
  const s = { x: start.x + gap, y: start.y }, t = { x: end.x - gap, y: end.y };
  const uniq = (v) => [...new Set(v.map((n) => Math.round(n * 2) / 2))].sort((p, q) => p - q);
  // The lines along every box, through both ends, and one more beyond each end (so a route can
  // arrive at the target's stub from the side it comes from).
  const xs = uniq([s.x, t.x, s.x + gap, t.x - gap, ...R.flatMap((r) => [r.x0, r.x1])]);
  const ys = uniq([s.y, t.y, ...R.flatMap((r) => [r.y0, r.y1])]);
  const inside = (x, y) => R.some((r) => x > r.x0 && x < r.x1 && y > r.y0 && y < r.y1);
  const hClear = (y, xa, xb) => !R.some((r) => y > r.y0 && y < r.y1 && Math.max(xa, xb) > r.x0 && Math.min(xa, xb) < r.x1);
  const vClear = (x, ya, yb) => !R.some((r) => x > r.x0 && x < r.x1 && Math.max(ya, yb) > r.y0 && Math.min(ya, yb) < r.y1);
  const sx = xs.indexOf(Math.round(s.x * 2) / 2), sy = ys.indexOf(Math.round(s.y * 2) / 2);
  const tx = xs.indexOf(Math.round(t.x * 2) / 2), ty = ys.indexOf(Math.round(t.y * 2) / 2);
  if (inside(xs[sx], ys[sy]) || inside(xs[tx], ys[ty])) return null;
  // A* over (x line, y line, direction of arrival: 0 horizontal, 1 vertical).
  const NY = ys.length, id = (ix, iy, dir) => (ix * NY + iy) * 2 + dir;
  const h = (ix, iy) => Math.abs(xs[ix] - xs[tx]) + Math.abs(ys[iy] - ys[ty]);
  const best = new Map(), from = new Map(), heap = [];
  const push = (f, state) => {
    heap.push([f, state]);
    for (let i = heap.length - 1; i > 0;) { const p = (i - 1) >> 1; if (heap[p][0] <= heap[i][0]) break; [heap[p], heap[i]] = [heap[i], heap[p]]; i = p; }
  };
  const pop = () => {
    const top = heap[0], last = heap.pop();
    if (heap.length) {
      heap[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < heap.length && heap[l][0] < heap[m][0]) m = l;
        if (r < heap.length && heap[r][0] < heap[m][0]) m = r;
        if (m === i) break;
        [heap[m], heap[i]] = [heap[i], heap[m]]; i = m;
      }
    }
    return top;
  };
  const s0 = id(sx, sy, 0);
  best.set(s0, 0);
  push(h(sx, sy), [sx, sy, 0]);
  let goal = null, expanded = 0;
  while (heap.length && expanded++ < 60000) {
    const [f, [ix, iy, dir]] = pop();
    const here = id(ix, iy, dir), g0 = best.get(here);
    if (f > g0 + h(ix, iy) + 1e-9) continue;
    if (ix === tx && iy === ty) { goal = here; break; }
    for (const [jx, jy, nd] of [[ix + 1, iy, 0], [ix - 1, iy, 0], [ix, iy + 1, 1], [ix, iy - 1, 1]]) {
      if (jx < 0 || jy < 0 || jx >= xs.length || jy >= NY) continue;
      if (nd === 0 ? !hClear(ys[iy], xs[ix], xs[jx]) : !vClear(xs[ix], ys[iy], ys[jy])) continue;
      if (inside(xs[jx], ys[jy])) continue;
      const g = g0 + Math.abs(xs[jx] - xs[ix]) + Math.abs(ys[jy] - ys[iy]) + (nd !== dir ? ROUTE_BEND : 0);
      const next = id(jx, jy, nd);
      if (best.has(next) && best.get(next) <= g) continue;
      best.set(next, g);
      from.set(next, here);
      push(g + h(jx, jy), [jx, jy, nd]);
    }
  }
  if (goal === null) return null;
  const corners = [];
  for (let at = goal; at !== undefined; at = from.get(at)) {
    const cell = at >> 1;
    corners.push({ x: xs[Math.floor(cell / NY)], y: ys[cell % NY] });
  }
  corners.reverse();
  return roundedPath([start, ...corners, end]);
}

/** A polyline of horizontal and vertical segments drawn with rounded corners; samples along it. */
function roundedPath(raw) {
  const p = [raw[0]];
  for (let i = 1; i < raw.length; i++) {
    const q = raw[i], last = p[p.length - 1];
    if (q.x === last.x && q.y === last.y) continue;
    if (p.length >= 2) {
      const prev = p[p.length - 2];
      if ((prev.x === last.x && last.x === q.x) || (prev.y === last.y && last.y === q.y)) { p[p.length - 1] = q; continue; }
    }
    p.push(q);
  }
  let d = `M ${p[0].x} ${p[0].y}`;
  for (let i = 1; i < p.length - 1; i++) {
    const a = p[i - 1], c = p[i], b = p[i + 1];
    const r = Math.min(8, Math.hypot(c.x - a.x, c.y - a.y) / 2, Math.hypot(b.x - c.x, b.y - c.y) / 2);
    const u = (from, to) => { const l = Math.hypot(to.x - from.x, to.y - from.y) || 1; return { x: (to.x - from.x) / l, y: (to.y - from.y) / l }; };
    const ua = u(c, a), ub = u(c, b);
    d += ` L ${c.x + ua.x * r} ${c.y + ua.y * r} Q ${c.x} ${c.y}, ${c.x + ub.x * r} ${c.y + ub.y * r}`;
  }
  d += ` L ${p[p.length - 1].x} ${p[p.length - 1].y}`;
  const pts = [];
  for (let i = 1; i < p.length; i++) {
    const a = p[i - 1], b = p[i], n = Math.max(1, Math.ceil(Math.hypot(b.x - a.x, b.y - a.y) / 8));
    for (let s = i === 1 ? 0 : 1; s <= n; s++) pts.push({ x: a.x + (b.x - a.x) * s / n, y: a.y + (b.y - a.y) * s / n });
  }
  return { d, pts };
}

/** The point at fraction `f` of a sampled path's length. */
function pointAlong(pts, f) {
  let total = 0;
  for (let i = 1; i < pts.length; i++) total += Math.hypot(pts[i].x - pts[i - 1].x, pts[i].y - pts[i - 1].y);
  let left = total * f;
  for (let i = 1; i < pts.length; i++) {
    const l = Math.hypot(pts[i].x - pts[i - 1].x, pts[i].y - pts[i - 1].y);
    if (left <= l && l > 0) return { x: pts[i - 1].x + (pts[i].x - pts[i - 1].x) * left / l, y: pts[i - 1].y + (pts[i].y - pts[i - 1].y) * left / l };
    left -= l;
  }
  return pts[pts.length - 1];
}

/** Where on its path a label of width `w` goes: the spot nearest the middle that no node box
 * (nor a label placed before) covers, else the least covered one. */
function labelSpot(pts, w, boxes, taken) {
  const overlap = (r, list) => list.reduce((sum, b) => sum + Math.max(0, Math.min(r.x1, b.x + b.w) - Math.max(r.x0, b.x)) * Math.max(0, Math.min(r.y1, b.y + b.h) - Math.max(r.y0, b.y)), 0);
  let best = null;
  const consider = (p) => {
    const r = { x0: p.x - w / 2 - 3, y0: p.y - LABEL_H / 2 - 3, x1: p.x + w / 2 + 3, y1: p.y + LABEL_H / 2 + 3 };
    const cost = overlap(r, boxes) * 1000 + overlap(r, taken);
    if (!best || cost < best.cost) best = { p, cost };
    return cost === 0;
  };
  // On the path, nearest its middle first; where the path is too short for it (two nodes close
  // together), beside the middle, nearest first.
  const spots = [0.5, 0.42, 0.58, 0.34, 0.66, 0.26, 0.74, 0.18, 0.82, 0.1, 0.9].map((f) => pointAlong(pts, f));
  const mid = spots[0];
  const near = [];
  for (let dy = -96; dy <= 96; dy += 12) for (let dx = -60; dx <= 60; dx += 20) if (dx || dy) near.push({ x: mid.x + dx, y: mid.y + dy });
  near.sort((a, b) => Math.hypot(a.x - mid.x, a.y - mid.y) - Math.hypot(b.x - mid.x, b.y - mid.y));
  for (const p of [...spots, ...near]) if (consider(p)) break;
  taken.push({ x: best.p.x - w / 2, y: best.p.y - LABEL_H / 2, w, h: LABEL_H });
  return best.p;
}

