// Pinned outputs, test runs and running one step, in a real Chromium against a real `vwf serve`:
// pin a step on the canvas (marked there, saved with the design), start a test run (the pinned
// step gives its pin, the others run), run one step alone and up to a step from the node's panel
// (the result shows on the node), and see test runs marked in the dashboard's listing and run
// page. A command step appends to a file each time it really runs, so "did not run" is counted.
// Every wait is for a condition; nothing sleeps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serverAndBrowser, api, DOCS } from './helpers.mjs';
import { openPage as openUrl, waitFor, graphOf } from './canvas.mjs';

const env = serverAndBrowser();
const work = mkdtempSync(join(tmpdir(), 'vwf-testruns-'));
const fetches = () => { try { return readFileSync(join(work, 'fetch.log'), 'utf8').split('\n').filter(Boolean).length; } catch { return 0; } };

const graph = {
  nodes: [
    { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 120 },
    { id: 'fetch', type: 'command', run: 'echo ran >> fetch.log && echo fetched', cwd: work, x: 240, y: 120 },
    { id: 'shout', type: 'command', run: 'echo got {{nodes.fetch}}', x: 460, y: 120 },
    { id: 'say', type: 'output', x: 680, y: 120 },
  ],
  edges: [{ from: 'start', to: 'fetch' }, { from: 'fetch', to: 'shout' }, { from: 'shout', to: 'say' }],
};

const open = (url) => openUrl(env.browser, url, { viewport: { width: 1400, height: 900 }, ready: () => !!window.vwfDesigner });

/** The newest run of design `pinned`, as the API lists it. */
async function newestRun() {
  const r = await api(env.server, 'GET', '/runs?design=pinned&limit=1');
  return r.body.runs[0];
}

/** Waits for the canvas to show a settled run other than `before` (the run's id). */
async function settledRun(page, before) {
  await waitFor(page, 'a new run settled on the canvas', (prev) => {
    const link = document.querySelector('[data-testid="run-link"]');
    const status = document.getElementById('status')?.textContent || '';
    return link && !link.href.endsWith(prev || '-') && /: (done|failed)/.test(status);
  }, before);
  return (await page.getByTestId('run-link').getAttribute('href')).split('/').pop();
}

test('canvas: pin a step, test run, run one step and up to a step; the dashboard marks test runs', async () => {
  assert.equal((await api(env.server, 'POST', '/designs/pinned', { graph })).body.ok, true);
  const page = await open(`${env.server.url}/designer.html?design=pinned`);
  await page.getByTestId('node-fetch').waitFor();

  // Pin fetch's output by hand: the node is marked, the design holds the pin.
  await page.getByTestId('node-fetch').click();
  await page.getByTestId('pin-input').fill('from the pin');
  await page.getByTestId('btn-pin').click();
  await page.getByTestId('pin-fetch').waitFor();
  assert.equal((await graphOf(page)).pins.fetch, 'from the pin');
  assert.match(await page.getByTestId('pinned-output').innerText(), /from the pin/);

  // A test run: fetch gives its pin (nothing ran), shout runs with it, the result shows on the node.
  await page.getByTestId('btn-test-run').click();
  let id = await settledRun(page, null);
  assert.equal(fetches(), 0, 'the pinned step ran');
  await waitFor(page, 'shout shows its output', () => /got from the pin/.test(document.querySelector('[data-testid="out-shout"]')?.textContent || ''));
  assert.equal(await page.getByTestId('state-fetch').textContent(), 'pinned');
  assert.match(await page.locator('#status').innerText(), /^Test run/);
  const saved = await api(env.server, 'GET', '/designs/pinned');
  assert.equal(saved.body.graph.pins.fetch, 'from the pin', 'the pin is saved with the design');
  let run = await newestRun();
  assert.equal(run.run_id, id);
  assert.equal(run.test, true);
  assert.equal(run.steps.find((s) => s.node === 'fetch').pinned, true);

  // Unpin, then run shout alone: fetch is not run (its last output is used), shout is.
  await page.getByTestId('btn-unpin').click();
  await page.getByTestId('pin-fetch').waitFor({ state: 'detached' });
  await page.getByTestId('node-shout').click();
  await page.getByTestId('btn-run-step').click();
  id = await settledRun(page, id);
  assert.equal(fetches(), 0, 'running one step ran the step before it');
  run = await newestRun();
  assert.equal(run.run_id, id);
  assert.deepEqual(run.steps.map((s) => [s.node, !!s.pinned]), [['fetch', true], ['shout', false]]);
  await waitFor(page, 'the panel shows the step\'s output', () => /got from the pin/.test(document.querySelector('[data-testid="last-output"]')?.textContent || ''));

  // Run up to shout: fetch runs for real now; say, after shout, does not run.
  await page.getByTestId('btn-run-until').click();
  id = await settledRun(page, id);
  assert.equal(fetches(), 1);
  await waitFor(page, 'shout shows the fresh output', () => /got fetched/.test(document.querySelector('[data-testid="out-shout"]')?.textContent || ''));
  run = await newestRun();
  assert.deepEqual(run.steps.map((s) => s.node), ['fetch', 'shout']);
  assert.equal(run.test, true);
  await waitFor(page, 'the panel shows the fresh output', () => /got fetched/.test(document.querySelector('[data-testid="last-output"]')?.textContent || ''));
  await page.screenshot({ path: join(DOCS, 'test-run.png') });

  // Pin from the last run's output, in one click.
  await page.getByTestId('node-fetch').click();
  await page.getByTestId('btn-pin-last').click();
  await page.getByTestId('pin-fetch').waitFor();
  assert.equal((await graphOf(page)).pins.fetch.text, 'fetched');

  // The dashboard: the listing marks the test runs, the run page says so and marks pinned steps.
  const dash = await openUrl(env.browser, `${env.server.url}/#/runs?design=pinned`, { viewport: { width: 1280, height: 900 } });
  await waitFor(dash, 'the runs listed', () => document.querySelectorAll('#runs tr[data-run]').length === 3);
  assert.equal(await dash.locator('#runs tr[data-run] [data-test-run]').count(), 3);
  await dash.goto(`${env.server.url}/#/runs/${run.run_id}`);
  await waitFor(dash, 'the run page', () => document.querySelector('.title [data-test-run]') !== null);
  assert.match(await dash.locator('#test-note').innerText(), /test run/);
  const first = (await api(env.server, 'GET', '/runs?design=pinned')).body.runs.at(-1);
  await dash.goto(`${env.server.url}/#/runs/${first.run_id}`);
  await waitFor(dash, 'the pinned step marked', () => document.querySelector('#steps tr[data-node="fetch"] [data-pinned]') !== null);
  assert.equal(await dash.locator('#steps tr[data-node="shout"] [data-pinned]').count(), 0);

  // In the dashboard's designer page, running one step stays on the page: the result shows on
  // the node of the embedded canvas.
  await dash.goto(`${env.server.url}/#/designer/pinned`);
  const canvas = dash.frameLocator('iframe.canvas');
  await canvas.getByTestId('node-shout').click();
  await canvas.getByTestId('btn-run-step').click();
  await canvas.getByTestId('out-shout').waitFor();
  assert.match(await canvas.getByTestId('out-shout').textContent(), /got fetched/);
  assert.match(dash.url(), /#\/designer\/pinned$/, 'the page moved to the run');

  assert.deepEqual(page.problems, []);
  assert.deepEqual(dash.problems, []);
});
