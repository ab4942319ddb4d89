// Finding and adding nodes on the canvas (web/designer.html) in a real Chromium: the find box
// (Ctrl+K, or / outside a text field) finds nodes by title, id, type and field text, selects the
// match and puts it in the middle of the view, Enter goes to the next one, Escape closes it; a
// "+" before a type's name adds a node of that type at the pointer; the palette's search box
// filters the types as you type, and Enter in it adds the first one. Every wait is for a selector
// or a condition; nothing sleeps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serverAndBrowser } from './helpers.mjs';
import { openDesigner, graphOf, canvasGeometry, waitFor } from './canvas.mjs';
import { shaped } from './generate.mjs';

const ctx = serverAndBrowser();

const selected = (page) => page.evaluate(() => [...document.querySelectorAll('g.node.selected')].map((g) => g.dataset.nodeId));

/** How far node `id`'s middle is from the canvas's middle, in pixels. */
async function offCentre(page, id) {
  const geo = await page.evaluate(canvasGeometry);
  const b = geo.nodes.find((n) => n.id === id).box, c = geo.canvas;
  return Math.hypot((b.x0 + b.x1 - c.x0 - c.x1) / 2, (b.y0 + b.y1 - c.y0 - c.y1) / 2);
}

test('find: Ctrl+K finds a node by title, id, type or field text, selects it and centres it; Enter goes to the next match, Escape closes', async () => {
  const page = await openDesigner(ctx.browser, `${ctx.server.url}/designer.html`, { width: 1440, height: 900 });
  const graph = shaped('chain', 50);
  graph.nodes.find((n) => n.id === 'agent40').prompt = 'Count the penguins';
  await page.evaluate((g) => window.vwfDesigner.setGraph(g), graph);
  for (let i = 0; i < 4; i++) await page.getByTestId('btn-zoom-in').click();

  // By field text: the one node whose prompt says penguins.
  await page.getByTestId('canvas').click({ position: { x: 5, y: 5 } });
  await page.keyboard.press('Control+k');
  await page.getByTestId('find-input').waitFor();
  await page.keyboard.type('penguins');
  await waitFor(page, 'agent40 selected', () => document.querySelector('g.node.selected')?.dataset.nodeId === 'agent40');
  assert.equal(await page.getByTestId('find-count').textContent(), '1 of 1');
  assert.ok(await offCentre(page, 'agent40') < 2, 'in the middle of the view');

  // By title: several match; Enter goes to the next, Shift+Enter back.
  await page.getByTestId('find-input').fill('post to the channel');
  const posts = graph.nodes.filter((n) => n.label === 'Post to the channel').map((n) => n.id);
  assert.ok(posts.length >= 2);
  await waitFor(page, 'the first match', (id) => document.querySelector('g.node.selected')?.dataset.nodeId === id, posts[0]);
  assert.equal(await page.getByTestId('find-count').textContent(), `1 of ${posts.length}`);
  await page.keyboard.press('Enter');
  await waitFor(page, 'the second match', (id) => document.querySelector('g.node.selected')?.dataset.nodeId === id, posts[1]);
  assert.equal(await page.getByTestId('find-count').textContent(), `2 of ${posts.length}`);
  assert.ok(await offCentre(page, posts[1]) < 2, 'the next match in the middle of the view');
  await page.keyboard.press('Shift+Enter');
  assert.deepEqual(await selected(page), [posts[0]]);

  // By id and by type; the list under the box names the matches.
  await page.getByTestId('find-input').fill('http47');
  await waitFor(page, 'http47 selected', () => document.querySelector('g.node.selected')?.dataset.nodeId === 'http47');
  await page.getByTestId('find-input').fill('trigger');
  await waitFor(page, 'the trigger selected', () => document.querySelector('g.node.selected')?.dataset.nodeId === 'start');
  await page.getByTestId('find-item-start').waitFor();
  await page.getByTestId('find-input').fill('no such thing');
  assert.equal(await page.getByTestId('find-count').textContent(), 'no match');

  // Escape closes the box and leaves the selection; / opens it again outside a text field.
  await page.keyboard.press('Escape');
  await page.getByTestId('find').waitFor({ state: 'hidden' });
  assert.deepEqual(await selected(page), ['start']);
  await page.keyboard.press('/');
  await page.getByTestId('find-input').waitFor();
  assert.equal(await page.evaluate(() => document.activeElement.dataset.testid), 'find-input');
  await page.keyboard.press('Escape');
  await page.getByTestId('find').waitFor({ state: 'hidden' });
  // In a text field, / is a letter.
  await page.getByTestId('design-name').click();
  await page.keyboard.type('a/b');
  assert.equal(await page.getByTestId('design-name').inputValue(), 'a/b');
  assert.equal(await page.getByTestId('find').isVisible(), false);
  assert.deepEqual(await graphOf(page), graph, 'finding changes nothing');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('find: the palette search filters the node types as you type, Enter adds the first; "+type" in the find box adds a node at the pointer', async () => {
  const page = await openDesigner(ctx.browser, `${ctx.server.url}/designer.html`, { width: 1440, height: 900 });
  await page.getByTestId('palette-trigger').waitFor();
  const shown = () => page.evaluate(() => [...document.querySelectorAll('.palette-item')].filter((b) => !b.hidden).map((b) => b.dataset.type));
  const all = await shown();
  assert.ok(all.length >= 10);
  await page.getByTestId('palette-search').fill('wa');
  assert.deepEqual(await shown(), ['wait', 'wait_event']);
  await page.getByTestId('palette-search').fill('http');
  assert.deepEqual(await shown(), ['http']);
  await page.getByTestId('palette-search').fill('shell'); // what the type does
  assert.deepEqual(await shown(), ['command']);
  await page.getByTestId('palette-search').fill('zzz');
  assert.deepEqual(await shown(), []);
  await page.getByTestId('palette-none').waitFor();
  await page.getByTestId('palette-search').fill('cond');
  await page.getByTestId('palette-search').press('Enter');
  await page.getByTestId('node-condition1').waitFor();
  await page.getByTestId('palette-search').press('Escape');
  assert.deepEqual(await shown(), all, 'Escape shows every type again');

  // Quick-add: Ctrl+K, "+loop", Enter adds a loop where the pointer is.
  const canvas = await page.getByTestId('canvas').boundingBox();
  const at = { x: canvas.x + canvas.width * 0.7, y: canvas.y + canvas.height * 0.7 };
  await page.mouse.move(at.x, at.y);
  await page.keyboard.press('Control+k');
  await page.keyboard.type('+lo');
  await page.getByTestId('quick-add-loop').waitFor();
  assert.equal(await page.getByTestId('find-count').textContent(), 'Enter adds');
  await page.keyboard.press('Enter');
  await page.getByTestId('node-loop1').waitFor();
  await page.getByTestId('find').waitFor({ state: 'hidden' });
  assert.deepEqual(await selected(page), ['loop1']);
  const b = (await page.evaluate(canvasGeometry)).nodes.find((n) => n.id === 'loop1').box;
  assert.ok(b.x0 <= at.x && at.x <= b.x1 && b.y0 <= at.y && at.y <= b.y1, `the loop is under the pointer: ${JSON.stringify(b)} ${JSON.stringify(at)}`);
  // An unknown type adds nothing.
  await page.keyboard.press('Control+k');
  await page.getByTestId('find-input').fill('+nonsense');
  assert.equal(await page.getByTestId('find-count').textContent(), 'no such type');
  await page.keyboard.press('Enter');
  assert.equal((await graphOf(page)).nodes.length, 2);
  // Adding is one undo step.
  await page.keyboard.press('Escape');
  await page.keyboard.press('Control+z');
  await page.getByTestId('node-loop1').waitFor({ state: 'detached' });
  assert.deepEqual(page.problems, []);
  await page.close();
});
