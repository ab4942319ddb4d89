// Design versions in the dashboard, in a real Chromium against a real `vwf serve`: the design
// page lists the versions, diffs two chosen ones as the server computes it (node by node, edge by
// edge), with each changed field old and new and moves apart, and restores one; a version opens
// read-only on the canvas; the run page links to the version its run ran and marks a design
// changed since. Every wait is for a condition; nothing sleeps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serverAndBrowser, api } from './helpers.mjs';
import { openPage as openUrl, waitFor } from './canvas.mjs';

const env = serverAndBrowser();
const openPage = (hash) => openUrl(env.browser, `${env.server.url}/${hash}`, { viewport: { width: 1280, height: 900 } });

/** Saves `graph` as design `versioned`: a new version when it differs from the newest. */
async function saveVersion(graph, name = 'versioned') {
  const r = await api(env.server, 'POST', `/designs/${name}`, { graph });
  assert.equal(r.body.ok, true, JSON.stringify(r.body));
}

const first = {
  nodes: [
    { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 120 },
    { id: 'gate', type: 'approval', question: 'Go?', options: ['go', 'stop'], x: 220, y: 120 },
    { id: 'out', type: 'output', template: 'one', x: 400, y: 120 },
  ],
  edges: [{ from: 'start', to: 'gate' }, { from: 'gate', to: 'out', label: 'go' }],
};

const second = {
  nodes: [
    { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 120 },
    { id: 'out', type: 'output', template: 'two', x: 400, y: 120 },
    { id: 'note', type: 'note', text: 'new', x: 400, y: 240 },
  ],
  edges: [{ from: 'start', to: 'out' }],
};

test('design page: diff two versions, restore one; run page links its version', async () => {
  await saveVersion(first);
  const run = await api(env.server, 'POST', '/designs/versioned/run', { wait: false });
  assert.equal(run.body.version, 1, JSON.stringify(run.body));
  await saveVersion(second);

  const page = await openPage('#/designer/versioned');
  await waitFor(page, 'two versions listed', () => document.querySelectorAll('#versions tr[data-version]').length === 2);
  await page.locator('#versions input[value="1"]').check();
  await page.locator('#versions input[value="2"]').check();
  await page.locator('#diff-versions').click();
  await waitFor(page, 'the diff', () => document.querySelector('#version-diff [data-a="1"][data-b="2"]') !== null);
  const items = await page.locator('#version-diff li[data-item]').evaluateAll((lis) => lis.map((li) => `${li.className} ${li.dataset.item}`));
  assert.deepEqual(items.sort(), [
    'added note', 'added start->out', 'changed out', 'removed gate', 'removed gate->out', 'removed start->gate',
  ].sort());
  assert.match(await page.locator('#version-diff li.changed[data-item="out"]').innerText(), /template/);

  // The run page links to the version the run ran and says the design changed since.
  const runPage = await openPage(`#/runs/${run.body.run_id}`);
  await waitFor(runPage, 'the version link', () => document.querySelector('#run-version') !== null);
  assert.equal(await runPage.locator('#run-version').innerText(), 'version 1');
  assert.equal(await runPage.locator('#design-changed').count(), 1, 'the design changed since this run');
  await runPage.locator('#run-version').click();
  await waitFor(runPage, 'the run\'s version on the canvas, read-only',
    () => document.querySelector('#versions tr.marked[data-version="1"]') !== null && document.querySelector('#version-banner')?.textContent.includes('Version 1 (read-only)'));
  await runPage.locator('#version-banner [data-action="compare-version"]').click();
  await waitFor(runPage, 'the run\'s version diffed against the newest', () => document.querySelector('#version-diff [data-a="1"][data-b="2"]') !== null);
  assert.deepEqual(runPage.problems, []);

  // Restore version 1: it becomes version 3 with version 1's content.
  await page.locator('#versions tr[data-version="1"] button[data-action="restore"]').click();
  await waitFor(page, 'version 3 listed', () => document.querySelector('#versions tr[data-version="3"]') !== null);
  const design = await api(env.server, 'GET', '/designs/versioned');
  assert.deepEqual(design.body.graph.nodes.map((n) => n.id), ['start', 'gate', 'out']);
  const listed = await api(env.server, 'GET', '/designs/versioned/versions');
  assert.equal(listed.body.versions[2].hash, listed.body.versions[0].hash);
  await waitFor(page, 'the canvas saved', () => document.querySelector('#design-state')?.textContent === 'saved');

  // A run of the newest version has no mark.
  const fresh = await api(env.server, 'POST', '/designs/versioned/run', { wait: false });
  const freshPage = await openPage(`#/runs/${fresh.body.run_id}`);
  await waitFor(freshPage, 'the version link', () => document.querySelector('#run-version') !== null);
  assert.equal(await freshPage.locator('#run-version').innerText(), 'version 3');
  assert.equal(await freshPage.locator('#design-changed').count(), 0);
});

/** The graph the design page's canvas holds (through the parent page: same origin). */
const canvasGraph = (page) => page.evaluate(() => document.querySelector('iframe.canvas').contentWindow.vwfDesigner.getGraph());

const prompted = (prompt, label, out) => ({
  nodes: [
    { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 120 },
    { id: 'write', type: 'agent', label, prompt, x: 220, y: 120 },
    { id: 'out', type: 'output', template: '{{nodes.write}}', ...out },
  ],
  edges: [{ from: 'start', to: 'write' }, { from: 'write', to: 'out' }],
});
const v1 = prompted('Line one\nLine two\nLine three', 'Write', { x: 400, y: 120 });
const v2 = prompted('Line one\nLine 2\nLine three\nLine four', 'Draft', { x: 460, y: 180 });
const v3 = { ...v2, description: 'third' };

test('version diff: each changed field old and new, a text line by line, a move apart', async () => {
  await saveVersion(v1, 'valued');
  await saveVersion(v2, 'valued');
  const page = await openPage('#/designer/valued');
  await waitFor(page, 'two versions listed', () => document.querySelectorAll('#versions tr[data-version]').length === 2);
  await page.locator('#versions input[value="1"]').check();
  await page.locator('#versions input[value="2"]').check();
  await page.locator('#diff-versions').click();
  await waitFor(page, 'the diff', () => document.querySelector('#version-diff [data-a="1"][data-b="2"]') !== null);

  // The prompt, line by line: the line that changed removed and added, the one added, the rest kept.
  const prompt = page.locator('#version-diff li.changed[data-item="write"] [data-field="prompt"]');
  assert.equal(await prompt.locator('pre.removed').innerText(), '− Line two');
  assert.deepEqual(await prompt.locator('pre.added').allInnerTexts(), ['+ Line 2', '+ Line four']);
  assert.match(await prompt.locator('pre.same').first().innerText(), /Line one/);
  // A short field inline, old → new.
  const label = page.locator('#version-diff li.changed[data-item="write"] [data-field="label"]');
  assert.equal(await label.locator('del').innerText(), 'Write');
  assert.equal(await label.locator('ins').innerText(), 'Draft');
  // The output node only moved: listed as moved, with where from and to, and not as changed.
  assert.equal(await page.locator('#version-diff li.changed[data-item="out"]').count(), 0);
  assert.match(await page.locator('#version-diff ul.moved li.moved[data-item="out"]').innerText(), /\(400, 120\) → \(460, 180\)/);
  assert.equal(await page.locator('#version-diff li[data-item="start"]').count(), 0);

  // A text too long to compare line by line is given whole, old then new, without freezing (the
  // design's description: a field the canvas does not draw on a node).
  const long = (tag) => ({ ...v1, description: Array.from({ length: 3000 }, (_, i) => `${tag} line ${i}`).join('\n') });
  await saveVersion(long('old'), 'long');
  await saveVersion(long('new'), 'long');
  const longPage = await openPage('#/designer/long');
  await waitFor(longPage, 'two versions listed', () => document.querySelectorAll('#versions tr[data-version]').length === 2);
  await longPage.locator('#versions input[value="1"]').check();
  await longPage.locator('#versions input[value="2"]').check();
  await longPage.locator('#diff-versions').click();
  await waitFor(longPage, 'the long diff', () => document.querySelector('#version-diff [data-field="description"]') !== null);
  const description = longPage.locator('#version-diff li.changed[data-item="design"] [data-field="description"]');
  assert.match(await description.innerText(), /too long to compare line by line/);
  assert.equal((await description.locator('pre.removed').innerText()).split('\n').length, 3000);
  assert.equal((await description.locator('pre.added').innerText()).split('\n').length, 3000);
  assert.deepEqual(page.problems, []);
  assert.deepEqual(longPage.problems, []);
});

test('a version opens read-only on the canvas; restore it, or compare it with now', async () => {
  for (const graph of [v1, v2, v3]) await saveVersion(graph, 'shown');
  const page = await openPage('#/designer/shown');
  await waitFor(page, 'three versions listed', () => document.querySelectorAll('#versions tr[data-version]').length === 3);
  await page.locator('#versions tr[data-version="1"] a[data-action="open-version"]').click();
  await waitFor(page, 'version 1 on the canvas, read-only', () => {
    const d = document.querySelector('iframe.canvas')?.contentWindow?.vwfDesigner;
    let g = null;
    try { g = d && d.getGraph(); } catch { /* still starting */ }
    return document.querySelector('#version-banner')?.textContent.includes('Version 1 (read-only)')
      && document.querySelector('#design-state')?.textContent === 'version 1 (read-only)'
      && g && g.nodes.some((n) => n.id === 'write' && n.prompt === 'Line one\nLine two\nLine three');
  });
  assert.equal(await page.locator('.title + .toolbar button', { hasText: /^Save$/ }).isDisabled(), true, 'save is disabled');
  assert.equal(await page.locator('.title + .toolbar button', { hasText: 'Save & run' }).isDisabled(), true);
  const canvas = page.frameLocator('iframe.canvas');
  assert.equal(await canvas.getByTestId('version-badge').innerText(), 'read-only');

  // A drag moves nothing (the node is selected, its saved fields shown); Delete removes nothing.
  const before = await canvasGraph(page);
  const box = await canvas.getByTestId('node-write').boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width / 2 + 120, box.y + box.height / 2 + 90, { steps: 6 });
  await page.mouse.up();
  await canvas.getByTestId('version-field-prompt').waitFor();
  assert.equal(await canvas.getByTestId('version-field-prompt').innerText(), 'Line one\nLine two\nLine three');
  await page.keyboard.press('Delete');
  await page.keyboard.press('Escape'); // after the Delete: the selection cleared says both were handled
  await canvas.getByTestId('version-badge').waitFor();
  assert.deepEqual(await canvasGraph(page), before, 'the read-only canvas changed nothing');
  assert.equal(await page.evaluate(() => document.querySelector('iframe.canvas').contentWindow.vwfDesigner.isReadOnly()), true);
  const saved = await page.evaluate(() => document.querySelector('iframe.canvas').contentWindow.vwfDesigner.save());
  assert.equal(saved.ok, false, 'the canvas does not save a read-only version');
  assert.equal((await api(env.server, 'GET', '/designs/shown/versions')).body.versions.length, 3);

  // Compare with now: version 1 against the newest (3).
  await page.locator('#version-banner [data-action="compare-version"]').click();
  await waitFor(page, 'the diff against the newest', () => document.querySelector('#version-diff [data-a="1"][data-b="3"]') !== null);
  assert.match(await page.locator('#version-diff li.changed[data-item="design"]').innerText(), /description/);
  assert.equal(await page.locator('#version-diff li.moved[data-item="out"]').count(), 1);

  // Restore this version: version 1's content becomes version 4, open to edit.
  await page.locator('#version-banner [data-action="restore-version"]').click();
  await waitFor(page, 'the newest open to edit', () => location.hash === '#/designer/shown'
    && document.querySelector('#version-banner') === null && document.querySelector('#design-state')?.textContent === 'saved');
  assert.match(await page.locator('.notice.ok').first().innerText(), /Restored version 1: it is now version 4/);
  const design = await api(env.server, 'GET', '/designs/shown');
  assert.equal(design.body.graph.nodes.find((n) => n.id === 'write').prompt, 'Line one\nLine two\nLine three');
  const listed = await api(env.server, 'GET', '/designs/shown/versions');
  assert.equal(listed.body.versions.length, 4);
  assert.equal(listed.body.versions[3].hash, listed.body.versions[0].hash);
  // Save comes back once the canvas holding the newest has loaded.
  await waitFor(page, 'Save enabled on the newest', () => [...document.querySelectorAll('.title + .toolbar button')]
    .some((b) => b.textContent === 'Save' && !b.disabled));
  assert.equal((await canvasGraph(page)).nodes.find((n) => n.id === 'write').prompt, 'Line one\nLine two\nLine three');
  assert.deepEqual(page.problems, []);
});
