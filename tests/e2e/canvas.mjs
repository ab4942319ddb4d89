// Page actions and reads shared by the browser tests: building on the canvas (web/designer.html)
// with the mouse, and reading the dashboard's run page with its embedded canvas in run mode.
// Every wait is for a selector or a condition; nothing sleeps.
import { newPage } from './helpers.mjs';

/** A page of `browser` on `url` that records page errors in `page.problems` (each test ends by
 * asserting there were none). `ready` is a function run in the page that must come true first. */
export async function openPage(browser, url, { viewport = { width: 1600, height: 900 }, ready } = {}) {
  const page = await newPage(browser, { viewport });
  const problems = [];
  page.on('pageerror', (e) => problems.push(e.message));
  await page.goto(url);
  if (ready) await page.waitForFunction(ready);
  page.problems = problems;
  return page;
}

/** The canvas at `url`, once `window.vwfDesigner` is there. */
export function openDesigner(browser, url, viewport) {
  return openPage(browser, url, { viewport, ready: () => !!window.vwfDesigner });
}

/** The graph the canvas holds. */
export const graphOf = (page) => page.evaluate(() => window.vwfDesigner.getGraph());

/** The node of `graph` with this id. */
export const byId = (graph, id) => graph.nodes.find((n) => n.id === id);

/** An element's box on screen; a node redrawn at that instant (the server's verdict arriving)
 * has none, so it is asked again, a bounded number of times. */
export async function boxOf(page, testid) {
  for (let i = 0; i < 20; i++) {
    const b = await page.getByTestId(testid).boundingBox();
    if (b) return b;
  }
  throw new Error(`${testid} has no box`);
}

/** Drags a palette item onto the canvas at (x, y) of the canvas and waits for the new node. */
export async function drop(page, type, x, y, id = `${type}1`) {
  await page.getByTestId(`palette-${type}`).dragTo(page.getByTestId('canvas'), { targetPosition: { x, y } });
  await page.getByTestId(`node-${id}`).waitFor();
}

/** Drags from `from`'s output port (the port of branch `label`, when given: a condition's
 * `true`, an answer of an approval, a loop's `each`) onto node `to`. */
export async function connect(page, from, to, label) {
  await page.getByTestId(label === undefined ? `port-out-${from}` : `port-out-${from}:${label}`).dragTo(page.getByTestId(`node-${to}`));
  await page.getByTestId(`edge-${from}-${to}`).waitFor();
}

/** Reads the export dialog's text area: the exact graph JSON. */
export async function exported(page) {
  await page.getByTestId('btn-export').click();
  const text = await page.getByTestId('export-text').inputValue();
  await page.getByTestId('dialog-export').getByRole('button', { name: 'Close' }).click();
  return JSON.parse(text);
}

/** Waits for `fn` (a function or an expression, run in the page) to come true, at most `timeout`
 * ms; a timeout says what was awaited. */
export async function waitFor(page, what, fn, arg, { timeout = 15000 } = {}) {
  try {
    await page.waitForFunction(fn, arg, { timeout, polling: 100 });
  } catch (e) {
    throw new Error(`waiting for ${what}: ${e.message}`);
  }
}

/** Run in the dashboard page: the embedded canvas's state of each node in run mode,
 * `{id: state}`: each node element (`data-testid="node-<id>"`) carries `data-state` and the class
 * `state-<state>`; a node with neither (a note, a step not reached) is `null`. Read through the
 * parent page (same origin), so it survives the frame reloading. */
export function canvasStates() {
  const doc = document.querySelector('iframe.canvas')?.contentDocument;
  const states = {};
  for (const el of doc ? doc.querySelectorAll('[data-testid^="node-"]') : []) {
    const id = el.dataset.testid.slice('node-'.length);
    states[id] = el.dataset.state && el.classList.contains(`state-${el.dataset.state}`) ? el.dataset.state : null;
  }
  return states;
}

/** Run in the dashboard page: whether every node of the embedded canvas can be seen (the element
 * at its centre is itself). */
export function canvasShowsEveryNode() {
  const doc = document.querySelector('iframe.canvas')?.contentDocument;
  const all = doc ? [...doc.querySelectorAll('[data-testid^="node-"]')] : [];
  return all.length > 0 && all.every((n) => {
    const r = n.getBoundingClientRect();
    const at = doc.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return r.width > 0 && at !== null && n.contains(at);
  });
}

/** Waits until the embedded canvas shows exactly `expected` (`{id: state or null}`, every node
 * and no other); a timeout says what it showed instead. */
export async function waitForCanvasStates(page, what, expected) {
  const same = `((got, want) => Object.keys(got).length === Object.keys(want).length
    && Object.entries(want).every(([id, s]) => id in got && got[id] === s))((${canvasStates})(), ${JSON.stringify(expected)})`;
  try {
    await waitFor(page, what, same);
  } catch (e) {
    throw new Error(`${e.message}\n  the canvas showed ${JSON.stringify(await page.evaluate(canvasStates))}`);
  }
}

/** The run page's status (`.title[data-status]`) reaching `status`. */
export async function waitForRunStatus(page, status) {
  await waitFor(page, `the run page to say ${status}`, (s) => document.querySelector('.title')?.dataset.status === s, status);
}

/** Run in the canvas page: what is on screen, in the page's pixels. `canvas` is the visible
 * canvas; each node its box; each edge its ends, points sampled every 2 units along its drawn
 * path, and its label's box; `titlePx` the smallest title letters on screen. */
export function canvasGeometry() {
  const rect = (r) => ({ x0: r.left, y0: r.top, x1: r.right, y1: r.bottom });
  const canvas = rect(document.querySelector('[data-testid="canvas"]').getBoundingClientRect());
  const nodes = [...document.querySelectorAll('g.node')].map((g) => ({ id: g.dataset.nodeId, box: rect(g.querySelector('.box').getBoundingClientRect()) }));
  const edges = [...document.querySelectorAll('g.edge')].map((g) => {
    const path = g.querySelector('path.line');
    const m = path.getScreenCTM();
    const pts = [];
    const len = path.getTotalLength();
    for (let l = 0; l <= len; l += 2) {
      const p = path.getPointAtLength(l);
      const q = new DOMPoint(p.x, p.y).matrixTransform(m);
      pts.push([q.x, q.y]);
    }
    const tag = g.querySelector('.tag rect');
    return { from: g.dataset.from, to: g.dataset.to, label: g.dataset.label, pts, tag: tag ? rect(tag.getBoundingClientRect()) : null };
  });
  const titles = [...document.querySelectorAll('g.node .title')].map((t) => parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a);
  return { canvas, nodes, edges, titlePx: titles.length ? Math.min(...titles) : null };
}

/** The problems of a drawn design (canvasGeometry's answer): nodes out of `canvas`, nodes that
 * overlap, edges through a node box they do not connect (or through their own nodes' insides),
 * labels a node covers, titles under `minTitlePx`. An empty list when it is clean. */
export function layoutProblems(geo, { minTitlePx = 9 } = {}) {
  const problems = [];
  const inside = (p, b, m) => p[0] > b.x0 + m && p[0] < b.x1 - m && p[1] > b.y0 + m && p[1] < b.y1 - m;
  const meet = (a, b, m = 0) => Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0) > m && Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0) > m;
  const c = geo.canvas;
  for (const n of geo.nodes) {
    if (n.box.x0 < c.x0 - 0.5 || n.box.y0 < c.y0 - 0.5 || n.box.x1 > c.x1 + 0.5 || n.box.y1 > c.y1 + 0.5) problems.push(`${n.id} is out of view`);
  }
  for (let i = 0; i < geo.nodes.length; i++) {
    for (let j = i + 1; j < geo.nodes.length; j++) {
      if (meet(geo.nodes[i].box, geo.nodes[j].box, 0.5)) problems.push(`${geo.nodes[i].id} and ${geo.nodes[j].id} overlap`);
    }
  }
  for (const e of geo.edges) {
    for (const n of geo.nodes) {
      const own = n.id === e.from || n.id === e.to;
      const hit = e.pts.find((p) => inside(p, n.box, own ? 3 : 1));
      if (hit) problems.push(`edge ${e.from} → ${e.to} crosses ${own ? 'its own node ' : ''}${n.id} at ${hit.map(Math.round)}`);
    }
    if (e.tag) for (const n of geo.nodes) if (meet(e.tag, n.box)) problems.push(`the label "${e.label}" of ${e.from} → ${e.to} is covered by ${n.id}`);
  }
  if (geo.titlePx !== null && geo.titlePx < minTitlePx) problems.push(`titles are ${geo.titlePx.toFixed(1)} px on screen`);
  return problems;
}

/** Run in the canvas page with `graph`: the titles drawn cut short, smaller than `minPx` on screen,
 * or out of their node's box: a node's title lines (`.title`), joined, must be its whole title
 * (its label, else its id; a note's label), each inside its box. An empty list when none is. */
export function cutTitles({ graph, minPx = 11 }) {
  const problems = [];
  for (const n of graph.nodes) {
    const want = n.type === 'note' ? n.label : n.label || n.id;
    if (!want) continue;
    const g = document.querySelector(`g.node[data-node-id="${CSS.escape(n.id)}"]`);
    if (!g) { problems.push(`${n.id} is not drawn`); continue; }
    const box = g.querySelector('.box').getBoundingClientRect();
    const lines = [...g.querySelectorAll('.title')];
    const text = lines.map((t) => t.textContent).join('');
    if (text.replace(/\s/g, '') !== String(want).replace(/\s/g, '')) problems.push(`${n.id} shows "${text}" for "${want}"`);
    for (const t of lines) {
      const r = t.getBoundingClientRect(), px = parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a;
      if (r.right > box.right + 0.5 || r.bottom > box.bottom + 0.5) problems.push(`${n.id}: "${t.textContent}" goes past its box`);
      if (px < minPx - 0.01) problems.push(`${n.id}: "${t.textContent}" is ${px.toFixed(1)} px`);
    }
  }
  return problems;
}
