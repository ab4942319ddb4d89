// Many nodes at once and placing nodes on the canvas (web/designer.html) in a real Chromium:
// shift-click, box selection and select all; moving, deleting, copying, pasting and duplicating a
// selection, each one undo step; the clipboard holding design JSON; Ctrl+S and the shortcut list;
// and new nodes from the palette (click or drop) always on a free spot, a click's always in view.
// Every wait is for a selector or a condition; nothing sleeps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { serverAndBrowser, api, ROOT } from './helpers.mjs';
import { openDesigner, openPage, graphOf, byId, drop, canvasGeometry, waitFor, boxOf } from './canvas.mjs';
import { random } from './generate.mjs';

const ctx = serverAndBrowser();

const small = () => ({
  nodes: [
    { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 200 },
    { id: 'a', type: 'command', run: 'echo a', label: 'Fetch refunds', x: 280, y: 200 },
    { id: 'b', type: 'command', run: 'echo {{nodes.a}}', x: 520, y: 200 },
    { id: 'out', type: 'output', x: 760, y: 200 },
    { id: 'tip', type: 'note', text: 'kept', x: 40, y: 40 },
  ],
  edges: [{ from: 'start', to: 'a' }, { from: 'a', to: 'b' }, { from: 'b', to: 'out' }],
});

const selected = (page) => page.evaluate(() => [...document.querySelectorAll('g.node.selected')].map((g) => g.dataset.nodeId).sort());

/** The node boxes on screen overlap nowhere. */
function assertNoOverlap(geo, what) {
  const n = geo.nodes;
  for (let i = 0; i < n.length; i++) {
    for (let j = i + 1; j < n.length; j++) {
      const a = n[i].box, b = n[j].box;
      const meet = Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0) > 0.5 && Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0) > 0.5;
      assert.ok(!meet, `${what}: ${n[i].id} and ${n[j].id} overlap`);
    }
  }
}

test('selection: shift-click, box, select all; move, copy as design JSON, paste, duplicate, delete, all undoable; Ctrl+S and ?', async () => {
  assert.equal((await api(ctx.server, 'POST', '/designs/many', { graph: small() })).body.ok, true);
  const page = await openDesigner(ctx.browser, `${ctx.server.url}/designer.html?design=many`, { width: 1600, height: 900 });
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: ctx.server.url });
  await page.getByTestId('node-b').waitFor();
  const original = await graphOf(page);
  /** Selects a, then adds b with a shift-click. */
  const pickAB = async () => {
    await page.keyboard.press('Escape');
    await page.getByTestId('node-a').click();
    await page.getByTestId('node-b').click({ modifiers: ['Shift'] });
  };

  // Shift-click builds a selection; the panel says what is selected.
  await page.getByTestId('node-a').click();
  await page.getByTestId('node-b').click({ modifiers: ['Shift'] });
  assert.deepEqual(await selected(page), ['a', 'b']);
  assert.equal(await page.getByTestId('selection-ids').innerText(), 'a, b');
  await page.getByTestId('node-start').click({ modifiers: ['Shift'] });
  await page.getByTestId('node-start').click({ modifiers: ['Shift'] });
  assert.deepEqual(await selected(page), ['a', 'b'], 'a second shift-click takes it out');

  // Dragging one moves both by the same amount: one undo step.
  const box = await boxOf(page, 'node-a');
  await page.mouse.move(box.x + 60, box.y + 20);
  await page.mouse.down();
  await page.mouse.move(box.x + 60, box.y + 200, { steps: 5 });
  await page.mouse.up();
  let g = await graphOf(page);
  const dy = byId(g, 'a').y - 200;
  assert.ok(dy > 100, `moved down ${dy}`);
  assert.equal(byId(g, 'b').y - 200, dy);
  assert.equal(byId(g, 'start').y, 200);
  assert.deepEqual(await selected(page), ['a', 'b'], 'the selection stays');
  await page.keyboard.press('Control+z');
  assert.deepEqual(await graphOf(page), original);

  // Shift+arrows move the selection.
  await page.keyboard.press('Shift+ArrowRight');
  await page.keyboard.press('Shift+ArrowRight');
  g = await graphOf(page);
  assert.deepEqual([byId(g, 'a').x, byId(g, 'b').x], [300, 540]);
  await page.keyboard.press('Control+z');
  assert.deepEqual(await graphOf(page), original, 'repeated arrow moves are one undo step');

  // Ctrl+C: the clipboard holds a design, the two nodes and the edge between them.
  await page.keyboard.press('Control+c');
  const copied = JSON.parse(await page.evaluate(() => navigator.clipboard.readText()));
  assert.deepEqual(copied, { nodes: [byId(original, 'a'), byId(original, 'b')], edges: [{ from: 'a', to: 'b' }] });

  // Ctrl+V: fresh ids, the edge among them kept, nothing covered; one undo step.
  await page.keyboard.press('Control+v');
  await page.getByTestId('node-a2').waitFor();
  g = await graphOf(page);
  assert.deepEqual(g.nodes.slice(5).map((n) => n.id), ['a2', 'b2']);
  assert.deepEqual(g.edges.at(-1), { from: 'a2', to: 'b2' });
  assert.equal(byId(g, 'b2').run, 'echo {{nodes.a2}}', 'references among the pasted nodes follow them');
  assert.equal(byId(g, 'a2').label, 'Fetch refunds (2)', 'a pasted title the design shows already gets a number');
  assert.equal(byId(g, 'b2').label, undefined, 'a node without a title gets none');
  assert.deepEqual(await selected(page), ['a2', 'b2'], 'the pasted nodes are selected');
  assertNoOverlap(await page.evaluate(canvasGeometry), 'after paste');
  await page.keyboard.press('Control+z');
  assert.deepEqual(await graphOf(page), original);

  // Ctrl+D duplicates beside the originals.
  await pickAB();
  await page.keyboard.press('Control+d');
  await page.getByTestId('node-b2').waitFor();
  assert.deepEqual((await graphOf(page)).edges.at(-1), { from: 'a2', to: 'b2' });
  assert.equal(byId(await graphOf(page), 'a2').label, 'Fetch refunds (2)');
  assertNoOverlap(await page.evaluate(canvasGeometry), 'after duplicate');
  await page.keyboard.press('Control+z');
  assert.deepEqual(await graphOf(page), original);

  // Delete removes the selection and the edges that touch it; undo brings them back.
  await pickAB();
  await page.keyboard.press('Delete');
  g = await graphOf(page);
  assert.deepEqual(g.nodes.map((n) => n.id), ['start', 'out', 'tip']);
  assert.deepEqual(g.edges, []);
  await page.keyboard.press('Control+z');
  assert.deepEqual(await graphOf(page), original);

  // Ctrl+A selects every node; Shift+drag selects those a box touches (added to the selection).
  await page.getByTestId('canvas').focus();
  await page.keyboard.press('Control+a');
  assert.deepEqual(await selected(page), ['a', 'b', 'out', 'start', 'tip']);
  await page.keyboard.press('Escape');
  const s = await boxOf(page, 'node-start'), a = await boxOf(page, 'node-a');
  await page.keyboard.down('Shift');
  await page.mouse.move(s.x - 10, s.y - 10);
  await page.mouse.down();
  await page.mouse.move(a.x + 20, a.y + a.height + 10, { steps: 4 });
  await page.mouse.up();
  await page.keyboard.up('Shift');
  assert.deepEqual(await selected(page), ['a', 'start']);

  // The clipboard's text pastes into a text editor (the import box) as it is …
  await page.keyboard.press('Control+c');
  await page.getByTestId('btn-import').click();
  await page.getByTestId('import-text').focus();
  await page.keyboard.press('Control+v');
  assert.deepEqual(JSON.parse(await page.getByTestId('import-text').inputValue()), { nodes: [byId(original, 'start'), byId(original, 'a')], edges: [{ from: 'start', to: 'a' }] });
  await page.getByTestId('dialog-import').getByRole('button', { name: 'Cancel' }).click();

  // … and into another design, here a canvas in another page.
  const other = await openDesigner(ctx.browser, `${ctx.server.url}/designer.html`, { width: 1280, height: 760 });
  await other.evaluate((g2) => window.vwfDesigner.setGraph(g2), { nodes: [{ id: 'start', type: 'trigger', mode: 'manual', x: 0, y: 0 }], edges: [] });
  const text = await page.evaluate(() => navigator.clipboard.readText());
  await other.evaluate((t) => {
    const data = new DataTransfer();
    data.setData('text/plain', t);
    document.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data }));
  }, text);
  const pasted = await graphOf(other);
  assert.deepEqual(pasted.nodes.map((n) => n.id), ['start', 'start2', 'a']);
  assert.deepEqual(pasted.edges, [{ from: 'start2', to: 'a' }]);
  assert.equal(byId(pasted, 'a').run, 'echo a');
  assertNoOverlap(await other.evaluate(canvasGeometry), 'pasted into another design');
  // Text that is not a design is refused and changes nothing.
  await other.evaluate(() => {
    const data = new DataTransfer();
    data.setData('text/plain', 'hello');
    document.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data }));
  });
  assert.deepEqual(await graphOf(other), pasted);
  assert.match(await other.getByTestId('status').innerText(), /Nothing to paste/);
  await other.close();

  // Ctrl+S saves; ? lists the shortcuts.
  await page.keyboard.press('Escape');
  await page.getByTestId('node-a').click();
  await page.keyboard.press('Shift+ArrowDown');
  await page.keyboard.press('Control+s');
  await page.getByTestId('status').filter({ hasText: 'Saved many' }).waitFor();
  assert.equal(byId((await api(ctx.server, 'GET', '/designs/many')).body.graph, 'a').y, 210);
  await page.getByTestId('canvas').focus();
  await page.keyboard.press('?');
  await page.getByTestId('dialog-keys').waitFor();
  assert.match(await page.getByTestId('dialog-keys').innerText(), /Ctrl\s*\+\s*D/);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('placing: palette clicks land in view next to the selected node or in the middle, never on a node; a drop never hides one', async () => {
  const page = await openDesigner(ctx.browser, `${ctx.server.url}/designer.html`, { width: 1280, height: 760 });
  const rnd = random(13);
  const types = ['agent', 'command', 'condition', 'output', 'note', 'http'];
  const inView = async (id) => {
    const geo = await page.evaluate(canvasGeometry);
    const n = geo.nodes.find((x) => x.id === id).box, c = geo.canvas;
    assert.ok(n.x0 >= c.x0 && n.y0 >= c.y0 && n.x1 <= c.x1 && n.y1 <= c.y1, `${id} is in view`);
    assertNoOverlap(geo, `after adding ${id}`);
  };

  // The first one lands in the middle of the view.
  await page.getByTestId('palette-trigger').click();
  await page.getByTestId('node-trigger1').waitFor();
  await inView('trigger1');

  // Next to the selected node: to its right, on a free spot, in view.
  await page.getByTestId('palette-command').click();
  await page.getByTestId('node-command1').waitFor();
  let g = await graphOf(page);
  assert.ok(byId(g, 'command1').x >= byId(g, 'trigger1').x + 180, 'right of the selected trigger');
  await inView('command1');

  // Twenty more clicks, each with a random node selected (or none): all in view, none covered.
  for (let i = 0; i < 20; i++) {
    g = await graphOf(page);
    const pick = Math.floor(rnd() * (g.nodes.length + 1));
    if (pick < g.nodes.length) await page.evaluate((id) => window.vwfDesigner.select(id), g.nodes[pick].id);
    else await page.evaluate(() => window.vwfDesigner.select(null));
    const type = types[Math.floor(rnd() * types.length)];
    const before = (await graphOf(page)).nodes.length;
    await page.getByTestId(`palette-${type}`).click();
    await waitFor(page, 'a new node', (n) => window.vwfDesigner.getGraph().nodes.length === n + 1, before);
    await inView((await graphOf(page)).nodes.at(-1).id);
  }

  // A drop onto an existing node puts the new one beside it.
  await page.getByTestId('btn-fit').click();
  const target = await boxOf(page, 'node-command1');
  const canvas = await page.getByTestId('canvas').boundingBox();
  await drop(page, 'wait', target.x - canvas.x + target.width / 2, target.y - canvas.y + target.height / 2, 'wait1');
  assertNoOverlap(await page.evaluate(canvasGeometry), 'after a drop on a node');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('placing: in the dashboard the first palette click lands in view', async () => {
  const created = await api(ctx.server, 'POST', '/designs/placed', { graph: { nodes: [{ id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 120 }], edges: [] } });
  assert.equal(created.body.ok, true);
  const page = await openPage(ctx.browser, `${ctx.server.url}/#/designer/placed`, { viewport: { width: 1920, height: 1080 } });
  const frame = page.frameLocator('iframe.canvas');
  await frame.getByTestId('node-start').waitFor();
  await frame.getByTestId('palette-agent').click();
  await frame.getByTestId('node-agent1').waitFor();
  const n = await frame.getByTestId('node-agent1').locator('.box').boundingBox();
  const c = await frame.getByTestId('canvas').boundingBox();
  assert.ok(n.x >= c.x && n.y >= c.y && n.x + n.width <= c.x + c.width && n.y + n.height <= c.y + c.height, `agent1 at ${JSON.stringify(n)} in ${JSON.stringify(c)}`);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('paste: over generated designs and fragments whose ids collide, every id is unique and the fragment keeps its edges and references', async () => {
  const page = await openDesigner(ctx.browser, pathToFileURL(join(ROOT, 'web', 'designer.html')).href, { width: 1280, height: 760 });
  const rnd = random(29);
  const pool = ['a', 'a2', 'a3', 'b', 'b2', 'c', 'node', 'node1'];
  const some = (k) => pool.filter(() => rnd() < k);
  for (let round = 0; round < 40; round++) {
    const base = { nodes: some(0.5).map((id, i) => ({ id, type: 'command', run: 'echo base', x: i * 220, y: 0 })), edges: [] };
    const ids = some(0.5);
    if (!ids.length) continue;
    const fragment = {
      nodes: ids.map((id, i) => ({ id, type: 'command', run: `echo {{nodes.${ids[(i + 1) % ids.length]}}} {{nodes.outside}}`, x: i * 220, y: 300 })),
      edges: ids.slice(1).map((id, i) => ({ from: ids[i], to: id })),
    };
    const problems = await page.evaluate(([b, f]) => {
      window.vwfDesigner.setGraph(b);
      const data = new DataTransfer();
      data.setData('text/plain', JSON.stringify(f));
      document.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data }));
      const g = window.vwfDesigner.getGraph();
      const out = [];
      const all = g.nodes.map((n) => n.id);
      if (new Set(all).size !== all.length) out.push(`ids repeat: ${all}`);
      const pasted = g.nodes.slice(b.nodes.length);
      if (pasted.length !== f.nodes.length) out.push(`pasted ${pasted.length} of ${f.nodes.length}`);
      const now = Object.fromEntries(f.nodes.map((n, i) => [n.id, pasted[i].id]));
      for (const n of b.nodes) if (now[n.id] === n.id) out.push(`${n.id} kept an id the design had`);
      f.edges.forEach((e, i) => {
        const got = g.edges[i];
        if (!got || got.from !== now[e.from] || got.to !== now[e.to]) out.push(`edge ${e.from}→${e.to} became ${JSON.stringify(got)}`);
      });
      f.nodes.forEach((n, i) => {
        const want = n.run.replace(/\{\{nodes\.([a-z0-9]+)\}\}/g, (w, id) => (id in now ? `{{nodes.${now[id]}}}` : w));
        if (pasted[i].run !== want) out.push(`${pasted[i].id}.run is ${pasted[i].run}, not ${want}`);
      });
      return out;
    }, [base, fragment]);
    assert.deepEqual(problems, [], `round ${round}: ${JSON.stringify(base.nodes.map((n) => n.id))} + ${JSON.stringify(ids)}`);
  }
  assert.deepEqual(page.problems, []);
  await page.close();
});
