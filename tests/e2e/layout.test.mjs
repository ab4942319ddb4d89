// Large designs on the canvas (web/designer.html) in a real Chromium: the layered layout of
// designs without positions and of Tidy (wrapped into rows to fit the canvas), Fit, semantic zoom,
// edge routes and labels, checked geometrically on generated designs (branching ones, and chains,
// fans, nested branches and loops of 10 to 50 nodes) and on every shipped example: after Fit
// every node is in view (or, past the readable size, the view scrolls), no two nodes overlap, no
// edge crosses a node box it does not connect, no label is covered, and titles are whole and
// readable; a node whose fields run to thousands of lines is drawn, and redrawn at every zoom, at
// once. Every wait is for a selector or a condition.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { serverAndBrowser, api, ROOT, DOCS } from './helpers.mjs';
import { openPage, openDesigner, graphOf, canvasGeometry, layoutProblems, cutTitles, waitFor } from './canvas.mjs';
import { branching, random, shaped } from './generate.mjs';

const ctx = serverAndBrowser();

/** Sets `graph` on the canvas (which fits it), clicks Fit, and answers the layout problems. */
async function drawn(page, graph) {
  await page.evaluate((g) => window.vwfDesigner.setGraph(g), graph);
  await page.getByTestId('btn-fit').click();
  return layoutProblems(await page.evaluate(canvasGeometry));
}

/** The layout problems after Fit. A design too large to show whole with titles of 11 px is
 * shown at that size and scrolls: nodes out of view are no problem then, while the minimap shows. */
async function fitProblems(page) {
  const geo = await page.evaluate(canvasGeometry);
  const problems = layoutProblems(geo);
  const scrolls = geo.titlePx >= 11 && await page.getByTestId('minimap').isVisible();
  return scrolls ? problems.filter((p) => !/out of view/.test(p)) : problems;
}

const SEEDS = [1, 2, 3, 4, 5, 6, 7, 8];

test('layout: generated 50-node branching designs without positions are laid out in layers, clean after Fit and after Tidy', async () => {
  const page = await openDesigner(ctx.browser, `${ctx.server.url}/designer.html`, { width: 1600, height: 900 });
  for (const seed of SEEDS) {
    const graph = branching(seed);
    assert.equal(graph.nodes.length, 50);
    assert.deepEqual(await drawn(page, graph), [], `seed ${seed}, laid out on opening`);
    assert.deepEqual(await graphOf(page), graph, 'opening does not write positions into the design');

    // Layers run left to right, wrapped into rows, and branches use the second dimension: a
    // node's children sit right of it or in a later row, a condition's two one above the other.
    const geo = await page.evaluate(canvasGeometry);
    const box = (id) => geo.nodes.find((n) => n.id === id).box;
    for (const e of graph.edges) assert.ok(box(e.to).x0 > box(e.from).x1 || box(e.to).y0 > box(e.from).y1, `seed ${seed}: ${e.to} is right of ${e.from} or below`);
    const split = graph.nodes.find((n) => n.type === 'condition' && graph.edges.filter((e) => e.from === n.id).length === 2);
    if (split) {
      const [a, b] = graph.edges.filter((e) => e.from === split.id).map((e) => box(e.to));
      assert.ok(a.y1 <= b.y0 || b.y1 <= a.y0, `seed ${seed}: the branches of ${split.id} are one above the other`);
    }

    // Tidy writes the positions (one undoable change) and is as clean.
    await page.getByTestId('btn-tidy').click();
    const tidied = await graphOf(page);
    assert.ok(tidied.nodes.every((n) => Number.isInteger(n.x) && Number.isInteger(n.y)), 'Tidy writes whole-number positions');
    assert.deepEqual(await fitProblems(page), [], `seed ${seed}, after Tidy`);
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
    assert.deepEqual(await fitProblems(page), [], `seed ${100 + seed}, after Tidy`);
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

/** Tidy + Fit of each of `graphs` ([name, graph]): no problem of layoutProblems with titles of
 * 11 px or more, and every title whole. Answers the smallest title on screen. */
async function shapesClean(page, graphs) {
  let smallest = Infinity;
  for (const [name, graph] of graphs) {
    await page.evaluate((g) => window.vwfDesigner.setGraph(g), graph);
    await page.getByTestId('btn-tidy').click();
    await page.getByTestId('btn-fit').click();
    const geo = await page.evaluate(canvasGeometry);
    assert.deepEqual(layoutProblems(geo, { minTitlePx: 11 }), [], `${name}: overlaps, edges through nodes, out of view, small titles`);
    assert.deepEqual(await page.evaluate(cutTitles, { graph }), [], `${name}: every title whole`);
    smallest = Math.min(smallest, geo.titlePx);
  }
  return smallest;
}

const SHAPES = ['chain', 'fan', 'nested', 'loops'].flatMap((kind) => [10, 25, 50].map((count) => [`${kind} of ${count}`, shaped(kind, count)]));

test('layout: chains, wide fans, nested branches and loops of 10, 25 and 50 nodes, tidied at 1440×900: Fit shows every node, no overlap, every title whole at 11 px or more, no edge through a node', async (t) => {
  const page = await openDesigner(ctx.browser, pathToFileURL(join(ROOT, 'web', 'designer.html')).href, { width: 1440, height: 900 });
  for (const [name, graph] of SHAPES) assert.equal(graph.nodes.length, Number(name.split(' of ')[1]));
  const smallest = await shapesClean(page, SHAPES);
  t.diagnostic(`smallest title ${smallest.toFixed(1)} px`);
  // A long chain wraps into rows that fill the canvas instead of one line of tiny nodes.
  await page.evaluate((g) => window.vwfDesigner.setGraph(g), shaped('chain', 50));
  await page.getByTestId('btn-tidy').click();
  const rows = new Set((await graphOf(page)).nodes.map((n) => n.y));
  assert.ok(rows.size >= 4, `the chain is in ${rows.size} rows`);
  // In full screen the same hold.
  await page.getByTestId('btn-full').click();
  t.diagnostic(`full screen: smallest title ${(await shapesClean(page, SHAPES.filter(([name]) => name.endsWith(' 50')))).toFixed(1)} px`);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('layout: semantic zoom: a 50-node design shows whole titles of 11 px or more at every zoom from Fit up, each node its details where it has room, and Fit scrolls instead of shrinking past readable', async () => {
  const page = await openDesigner(ctx.browser, pathToFileURL(join(ROOT, 'web', 'designer.html')).href, { width: 1280, height: 760 });
  const graph = branching(3);
  await page.evaluate((g) => window.vwfDesigner.setGraph(g), graph);
  await page.getByTestId('btn-fit').click();
  const zoom = async () => Number((await page.getByTestId('zoom-level').textContent()).replace('%', ''));
  for (let i = 0; i < 8; i++) {
    const geo = await page.evaluate(canvasGeometry);
    assert.ok(geo.titlePx >= 11, `at ${await zoom()}%: titles ${geo.titlePx} px`);
    assert.deepEqual(await page.evaluate(cutTitles, { graph }), [], `at ${await zoom()}%`);
    // A node whose title takes one line has room for its type line from about 60 % on.
    const oneLine = await page.evaluate(() => [...document.querySelectorAll('g.node:not(.note)')].filter((g) => g.querySelectorAll('.title').length === 1).map((g) => !!g.querySelector('.sub')));
    if (await zoom() >= 60) assert.ok(oneLine.every(Boolean), `at ${await zoom()}%: every one-line title has its type line`);
    await page.getByTestId('btn-zoom-in').click();
  }
  // From about 85 % on, every node is drawn in full: title, type line and what it does.
  await waitFor(page, 'the full node form', () => document.querySelectorAll('g.node .title.overview').length === 0 && document.querySelectorAll('g.node:not(.note) .detail').length > 0);

  // A design too large for readable titles: Fit stops at the readable zoom and shows its start,
  // with the minimap to move about.
  await page.evaluate((g) => window.vwfDesigner.setGraph(g), branching(9, 150));
  await page.getByTestId('btn-fit').click();
  const geo = await page.evaluate(canvasGeometry);
  assert.ok(geo.titlePx >= 11, `titles ${geo.titlePx} px`);
  assert.ok(layoutProblems(geo).some((p) => /out of view/.test(p)), 'some of it is out of view');
  await page.getByTestId('minimap').waitFor();
  const start = geo.nodes.find((n) => n.id === 'start').box;
  assert.ok(start.x0 >= geo.canvas.x0 && start.y0 >= geo.canvas.y0 && start.x1 <= geo.canvas.x1 && start.y1 <= geo.canvas.y1, 'the start is in view');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('layout: the screenshot of a 50-node design after Tidy at 1440×900, full screen (docs/large-design.png)', async () => {
  // Opened from disk: the generated nodes have no fields, and no server judges them here.
  const page = await openDesigner(ctx.browser, pathToFileURL(join(ROOT, 'web', 'designer.html')).href, { width: 1440, height: 900 });
  const graph = branching(3);
  await page.evaluate((g) => window.vwfDesigner.setGraph(g), graph);
  await page.getByTestId('btn-full').click();
  await page.getByTestId('btn-tidy').click();
  await page.getByTestId('btn-fit').click();
  assert.deepEqual(layoutProblems(await page.evaluate(canvasGeometry), { minTitlePx: 11 }), []);
  assert.deepEqual(await page.evaluate(cutTitles, { graph }), []);
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

test('layout: a node with a very long field (a command of 3000 lines, a prompt of 200,000 characters on one line) is drawn and answers within 10 s, its text cut to its box, and Fit and zoom still draw it', async (t) => {
  const run = Array.from({ length: 3000 }, (_, i) => `echo "step ${i}: a line of a long generated script" && test -d /tmp/step-${i}`).join('\n');
  const prompt = 'Summarise-the-report-'.repeat(10000).slice(0, 200000);
  const graph = {
    nodes: [
      { id: 'start', type: 'trigger', mode: 'manual' },
      { id: 'build', type: 'command', run },
      { id: 'think', type: 'agent', prompt },
    ],
    edges: [{ from: 'start', to: 'build' }, { from: 'build', to: 'think' }],
  };
  assert.equal((await api(ctx.server, 'POST', '/designs/long-fields', { graph })).body.ok, true);
  // Every step below must show within 10 s (each takes well under a second; measuring and
  // wrapping the whole fields took many minutes).
  const opened = Date.now();
  const page = await openPage(ctx.browser, `${ctx.server.url}/designer.html?design=long-fields`, { viewport: { width: 1440, height: 900 } });
  const within = (what, fn, arg) => waitFor(page, `${what} (10 s at most)`, fn, arg, { timeout: 10000 });
  // Opened: each long field shows as one line cut short with an ellipsis.
  await within('the long fields drawn', () => ['build', 'think'].every((id) => {
    const detail = document.querySelector(`g.node[data-node-id="${id}"] .detail`);
    return detail && detail.textContent.endsWith('…') && detail.textContent.length < 80;
  }));
  t.diagnostic(`drawn ${Date.now() - opened} ms after opening`);

  // It answers: a click selects the node and shows its fields.
  await page.getByTestId('node-build').click({ timeout: 10000 });
  await within('the panel of the selected command', () => document.querySelector('[data-testid="field-run"]')?.value.split('\n').length === 3000);
  // Fit, then zoom out into the overview's larger letters and back in: each step draws the
  // nodes again, their text cut to their boxes.
  const level = () => page.getByTestId('zoom-level').textContent();
  const drawnAt = (zoom) => document.getElementById('zoom-level').textContent === zoom
    && ['start', 'build', 'think'].every((id) => document.querySelector(`g.node[data-node-id="${id}"] .title`))
    && [...document.querySelectorAll('g.node .title, g.node .detail')].every((e) => e.textContent.length < 200);
  await page.getByTestId('btn-fit').click({ timeout: 10000 });
  await within('Fit to draw', drawnAt, await level());
  for (let i = 0; i < 6; i++) {
    await page.getByTestId('btn-zoom-out').click({ timeout: 10000 });
    await within(`zoom out ${i + 1} to draw`, drawnAt, await level());
  }
  assert.ok(await page.locator('g.node .title.overview').count() > 0, 'zoomed out, the nodes are drawn in the overview form');
  for (let i = 0; i < 6; i++) {
    await page.getByTestId('btn-zoom-in').click({ timeout: 10000 });
    await within(`zoom in ${i + 1} to draw`, drawnAt, await level());
  }
  await page.getByTestId('btn-fit').click({ timeout: 10000 });
  await within('Fit to draw again', drawnAt, await level());
  assert.deepEqual(layoutProblems(await page.evaluate(canvasGeometry)), []);
  assert.deepEqual(page.problems, []);
  await page.close();
});
