// Large designs on the canvas (web/designer.html) in a real Chromium: the layered layout of
// designs without positions and of Tidy, Fit, edge routes and labels, checked geometrically on
// generated 50-node branching designs and on every shipped example: after Fit every node is in
// view, no two nodes overlap, no edge crosses a node box it does not connect, no label is
// covered, and titles stay readable. Every wait is for a selector or a condition.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { serverAndBrowser, api, ROOT, DOCS } from './helpers.mjs';
import { openPage, openDesigner, graphOf, canvasGeometry, layoutProblems, waitFor } from './canvas.mjs';
import { branching, random } from './generate.mjs';

const ctx = serverAndBrowser();

/** Sets `graph` on the canvas (which fits it), clicks Fit, and answers the layout problems. */
async function drawn(page, graph) {
  await page.evaluate((g) => window.vwfDesigner.setGraph(g), graph);
  await page.getByTestId('btn-fit').click();
  return layoutProblems(await page.evaluate(canvasGeometry));
}

const SEEDS = [1, 2, 3, 4, 5, 6, 7, 8];

test('layout: generated 50-node branching designs without positions are laid out in layers, clean after Fit and after Tidy', async () => {
  const page = await openDesigner(ctx.browser, `${ctx.server.url}/designer.html`, { width: 1600, height: 900 });
  for (const seed of SEEDS) {
    const graph = branching(seed);
    assert.equal(graph.nodes.length, 50);
    assert.deepEqual(await drawn(page, graph), [], `seed ${seed}, laid out on opening`);
    assert.deepEqual(await graphOf(page), graph, 'opening does not write positions into the design');

    // Layers run left to right and branches use the second dimension: a condition's two
    // children sit right of it, one above the other.
    const geo = await page.evaluate(canvasGeometry);
    const box = (id) => geo.nodes.find((n) => n.id === id).box;
    for (const e of graph.edges) assert.ok(box(e.to).x0 > box(e.from).x1, `seed ${seed}: ${e.to} is right of ${e.from}`);
    const split = graph.nodes.find((n) => n.type === 'condition' && graph.edges.filter((e) => e.from === n.id).length === 2);
    if (split) {
      const [a, b] = graph.edges.filter((e) => e.from === split.id).map((e) => box(e.to));
      assert.ok(a.y1 <= b.y0 || b.y1 <= a.y0, `seed ${seed}: the branches of ${split.id} are one above the other`);
    }

    // Tidy writes the positions (one undoable change) and is as clean.
    await page.getByTestId('btn-tidy').click();
    const tidied = await graphOf(page);
    assert.ok(tidied.nodes.every((n) => Number.isInteger(n.x) && Number.isInteger(n.y)), 'Tidy writes whole-number positions');
    assert.deepEqual(layoutProblems(await page.evaluate(canvasGeometry)), [], `seed ${seed}, after Tidy`);
    await page.getByTestId('btn-undo').click();
    assert.deepEqual(await graphOf(page), graph, 'undo takes the positions away again');
  }
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('layout: Tidy untangles a design piled up by hand, and edges go round the nodes after one is moved', async () => {
  const page = await openDesigner(ctx.browser, `${ctx.server.url}/designer.html`, { width: 1600, height: 900 });
  for (const seed of SEEDS) {
    const graph = branching(100 + seed, 50, { scatter: true });
    await page.evaluate((g) => window.vwfDesigner.setGraph(g), graph);
    await page.getByTestId('btn-tidy').click();
    await page.getByTestId('btn-fit').click();
    assert.deepEqual(layoutProblems(await page.evaluate(canvasGeometry)), [], `seed ${100 + seed}, after Tidy`);
  }
  // Moving a node across others: the edges are routed around every box again.
  const graph = branching(7);
  await page.evaluate((g) => window.vwfDesigner.setGraph(g), graph);
  await page.getByTestId('btn-tidy').click();
  await page.evaluate(() => {
    const g = window.vwfDesigner.getGraph();
    const last = g.nodes.filter((n) => n.type !== 'note').at(-1);
    // Put the last node left of the trigger, level with it: its incoming edges must go round.
    const start = g.nodes.find((n) => n.id === 'start');
    last.x = start.x - 400;
    last.y = start.y;
    window.vwfDesigner.setGraph(g);
  });
  await page.getByTestId('btn-fit').click();
  const problems = layoutProblems(await page.evaluate(canvasGeometry), { minTitlePx: 0 }).filter((p) => !/out of view|overlap/.test(p));
  assert.deepEqual(problems, []);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('layout: every shipped example is clean and readable after Fit', async () => {
  const page = await openDesigner(ctx.browser, `${ctx.server.url}/designer.html`, { width: 1600, height: 900 });
  const files = readdirSync(join(ROOT, 'examples')).filter((f) => f.endsWith('.designer.json'));
  assert.ok(files.length >= 8);
  for (const f of files) {
    const graph = JSON.parse(readFileSync(join(ROOT, 'examples', f), 'utf8'));
    assert.deepEqual(await drawn(page, graph), [], f);
    // Readable at full size: titles at least 11 px, not the overview form.
    const geo = await page.evaluate(canvasGeometry);
    assert.ok(geo.titlePx >= 11, `${f}: titles ${geo.titlePx} px`);
  }
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('layout: at Fit a 50-node design shows every node with readable titles (the overview form), and full text when zoomed in', async () => {
  const page = await openDesigner(ctx.browser, `${ctx.server.url}/designer.html`, { width: 1280, height: 760 });
  const graph = branching(3);
  assert.deepEqual(await drawn(page, graph), []);
  const geo = await page.evaluate(canvasGeometry);
  assert.ok(geo.titlePx >= 9, `titles ${geo.titlePx} px`);
  assert.ok(await page.locator('g.node .title.overview').count() > 0, 'zoomed out, nodes show their titles only');
  assert.equal(await page.locator('g.node .detail').count(), 0);
  for (let i = 0; i < 12; i++) await page.getByTestId('btn-zoom-in').click();
  await waitFor(page, 'the full node form', () => document.querySelectorAll('g.node .title.overview').length === 0 && document.querySelectorAll('g.node .detail').length > 0);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('layout: the screenshot of a 50-node design after Tidy, full screen (docs/large-design.png)', async () => {
  // Opened from disk: the generated nodes have no fields, and no server judges them here.
  const page = await openDesigner(ctx.browser, pathToFileURL(join(ROOT, 'web', 'designer.html')).href, { width: 1920, height: 1080 });
  await page.evaluate((g) => window.vwfDesigner.setGraph(g), branching(3));
  await page.getByTestId('btn-tidy').click();
  await page.getByTestId('btn-full').click();
  await page.getByTestId('btn-fit').click();
  assert.deepEqual(layoutProblems(await page.evaluate(canvasGeometry)), []);
  await page.screenshot({ path: join(DOCS, 'large-design.png') });
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('room: in the dashboard the canvas takes the page\'s width, goes full screen, and a minimap moves the view', async () => {
  const graph = branching(5, 50, { loops: false });
  assert.equal((await api(ctx.server, 'POST', '/designs/roomy', { graph })).body.ok, true);
  const page = await openPage(ctx.browser, `${ctx.server.url}/#/designer/roomy`, { viewport: { width: 1920, height: 1080 } });
  const frame = page.frameLocator('iframe.canvas');
  await frame.getByTestId('node-start').waitFor();
  const canvas = () => frame.getByTestId('canvas').boundingBox();
  // The page column is not capped: the canvas gets what the palette and the panel leave.
  assert.ok((await canvas()).width >= 1920 - 40 - 150 - 330 - 10, `canvas ${(await canvas()).width} px wide`);

  // Fitted, the whole design is in view: no minimap. Zoomed in, the minimap shows, and a click
  // on it moves the view there.
  await frame.getByTestId('btn-fit').click();
  assert.equal(await frame.getByTestId('minimap').isVisible(), false);
  for (let i = 0; i < 6; i++) await frame.getByTestId('btn-zoom-in').click();
  await frame.getByTestId('minimap').waitFor();
  const transform = () => frame.locator('#viewport').getAttribute('transform');
  const before = await transform();
  const map = await frame.getByTestId('minimap').boundingBox();
  await page.mouse.click(map.x + map.width * 0.9, map.y + map.height / 2);
  assert.notEqual(await transform(), before, 'the view moved');

  // Full screen: the canvas covers the window; Escape gives the page back.
  await frame.getByTestId('btn-full').click();
  await waitFor(page, 'the canvas to cover the window', () => {
    const r = document.querySelector('iframe.canvas').getBoundingClientRect();
    return r.left === 0 && r.top === 0 && r.width === innerWidth && r.height === innerHeight;
  });
  assert.deepEqual(await canvas(), { x: 0, y: 0, width: 1920, height: 1080 });
  await page.keyboard.press('Escape');
  await waitFor(page, 'the page back', () => document.querySelector('iframe.canvas').getBoundingClientRect().top > 0);
  assert.ok((await canvas()).width < 1920);
  assert.deepEqual(page.problems, []);

  // A run's page gives its canvas the width too.
  const tiny = { nodes: [{ id: 'start', type: 'trigger', mode: 'manual' }, { id: 'out', type: 'output', template: 'hi' }], edges: [{ from: 'start', to: 'out' }] };
  assert.equal((await api(ctx.server, 'POST', '/designs/tiny', { graph: tiny })).body.ok, true);
  const run = (await api(ctx.server, 'POST', '/designs/tiny/run', {})).body;
  assert.equal(run.status, 'done');
  await page.goto(`${ctx.server.url}/#/runs/${run.run_id}`);
  await page.frameLocator('iframe.canvas.run').getByTestId('node-out').waitFor();
  const runFrame = await page.locator('iframe.canvas.run').boundingBox();
  assert.ok(runFrame.width >= 1920 - 80, `the run's canvas is ${runFrame.width} px wide`);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('layout: in a design without positions, moving or deleting a node moves no other (their positions are written then)', async () => {
  const page = await openDesigner(ctx.browser, `${ctx.server.url}/designer.html`, { width: 1600, height: 900 });
  const graph = branching(4);
  await page.evaluate((g) => window.vwfDesigner.setGraph(g), graph);
  for (let i = 0; i < 4; i++) await page.getByTestId('btn-zoom-in').click();
  const boxes = async () => Object.fromEntries((await page.evaluate(canvasGeometry)).nodes.map((n) => [n.id, n.box]));
  const before = await boxes();
  // The node nearest the middle of the canvas (in view).
  const c = (await page.evaluate(canvasGeometry)).canvas;
  const mid = (r) => Math.hypot((r.x0 + r.x1 - c.x0 - c.x1) / 2, (r.y0 + r.y1 - c.y0 - c.y1) / 2);
  const mover = Object.keys(before).sort((p, q) => mid(before[p]) - mid(before[q]))[0];
  const b = before[mover];
  await page.mouse.move(b.x0 + 20, b.y0 + 8);
  await page.mouse.down();
  await page.mouse.move(b.x0 + 20, b.y0 + 150, { steps: 4 });
  await page.mouse.up();
  const after = await boxes();
  for (const id of Object.keys(before)) if (id !== mover) assert.deepEqual(after[id], before[id], `${id} stayed`);
  assert.ok(after[mover].y0 > before[mover].y0 + 50);
  assert.ok((await graphOf(page)).nodes.every((n) => Number.isFinite(n.x) && Number.isFinite(n.y)), 'the positions are written');
  await page.keyboard.press('Control+z');
  assert.deepEqual(await graphOf(page), graph, 'undo gives the design without positions back');

  // Deleting a node: the others stay.
  await page.getByTestId(`node-${mover}`).click();
  await page.keyboard.press('Delete');
  await page.getByTestId(`node-${mover}`).waitFor({ state: 'detached' });
  const left = await boxes();
  for (const id of Object.keys(left)) assert.deepEqual(left[id], before[id], `${id} stayed after the delete`);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('layout: odd drafts (cycles, self-loops, repeated or missing ids, unknown ends, odd labels and values) are drawn, tidied and fitted without a page error', async () => {
  const page = await openDesigner(ctx.browser, pathToFileURL(join(ROOT, 'web', 'designer.html')).href, { width: 1280, height: 760 });
  const rnd = random(71);
  const pick = (list) => list[Math.floor(rnd() * list.length)];
  const ids = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
  const odd = [null, 7, 'text', [], {}, { id: 5, type: 'command' }, { type: 'agent' }, { id: 'x', type: 'nonsense', x: 'left', y: null }];
  for (let round = 0; round < 60; round++) {
    const nodes = [];
    const count = 1 + Math.floor(rnd() * 12);
    for (let i = 0; i < count; i++) {
      if (rnd() < 0.15) { nodes.push(pick(odd)); continue; }
      const n = { id: pick(ids), type: pick(['trigger', 'command', 'condition', 'note', 'loop', 'approval']) };
      if (rnd() < 0.4) { n.x = Math.round(rnd() * 800 - 400) || 0; n.y = Math.round(rnd() * 600 - 300) || 0; } // no -0: JSON has none
      if (n.type === 'note') n.text = rnd() < 0.5 ? 'a note with some words in it '.repeat(Math.floor(rnd() * 5)) : 42;
      nodes.push(n);
    }
    const edges = [];
    for (let i = 0; i < Math.floor(rnd() * 14); i++) {
      if (rnd() < 0.1) { edges.push(pick(odd)); continue; }
      const e = { from: pick([...ids, 'nobody']), to: pick([...ids, 'nobody']) };
      if (rnd() < 0.4) e.label = pick(['true', 'each', 12, { odd: 1 }, '', 'a label long enough to be cut short']);
      edges.push(e);
    }
    const graph = { nodes, edges };
    await page.evaluate((g) => window.vwfDesigner.setGraph(g), graph);
    await page.getByTestId('btn-tidy').click();
    await page.getByTestId('btn-fit').click();
    // Tidy is one undo step (with no node to lay out it changes nothing).
    if (nodes.some((n) => n !== null && typeof n === 'object' && !Array.isArray(n))) await page.getByTestId('btn-undo').click();
    assert.deepEqual(await graphOf(page), graph, `round ${round}: undo after Tidy`);
    assert.deepEqual(page.problems, [], `round ${round}: ${JSON.stringify(graph)}`);
  }
  await page.close();
});
