// Design versions in the dashboard, in a real Chromium against a real `vwf serve`: the design
// page lists the versions, diffs two chosen ones as the server computes it (node by node, edge by
// edge) and restores one; the run page links to the version its run ran and marks a design
// changed since. Every wait is for a condition; nothing sleeps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serverAndBrowser, api } from './helpers.mjs';
import { openPage as openUrl, waitFor } from './canvas.mjs';

const env = serverAndBrowser();
const openPage = (hash) => openUrl(env.browser, `${env.server.url}/${hash}`, { viewport: { width: 1280, height: 900 } });

/** Saves `graph` as design `versioned`: a new version when it differs from the newest. */
async function saveVersion(graph) {
  const r = await api(env.server, 'POST', '/designs/versioned', { graph });
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
  const items = await page.locator('#version-diff li').evaluateAll((lis) => lis.map((li) => `${li.className} ${li.dataset.item}`));
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
  await waitFor(runPage, 'the run\'s version diffed against the newest',
    () => document.querySelector('#versions tr.marked[data-version="1"]') !== null && document.querySelector('#version-diff [data-a="1"][data-b="2"]') !== null);

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
