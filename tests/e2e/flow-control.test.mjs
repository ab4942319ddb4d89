// Flow control, in a real Chromium against a real `vwf serve`: the design's runs-at-once limit
// (`concurrency`) and an arrival trigger's debounce and throttle set from the trigger's panel,
// written where they belong and only once set; a run waiting for a slot (`queued`) on the runs
// list and on its own page, behind the run holding the slot, until that run lets it start.
// Every wait is for a condition; nothing sleeps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serverAndBrowser, api } from './helpers.mjs';
import { openPage, graphOf, byId, waitFor, waitForRunStatus, waitForCanvasStates } from './canvas.mjs';

const env = serverAndBrowser();

test('canvas: the trigger panel sets the design\'s runs at once, and the debounce and throttle of an arrival trigger', async () => {
  const design = {
    nodes: [
      { id: 'start', type: 'trigger', mode: 'event', sources: ['chat.message'], x: 40, y: 120 },
      { id: 'reply', type: 'output', template: 'got {{trigger.payload.text}}', x: 300, y: 120 },
    ],
    edges: [{ from: 'start', to: 'reply' }],
  };
  assert.equal((await api(env.server, 'POST', '/designs/chat-reply', { graph: design })).body.ok, true);
  const page = await openPage(env.browser, `${env.server.url}/designer.html?design=chat-reply`, {
    viewport: { width: 1400, height: 900 }, ready: () => !!window.vwfDesigner,
  });
  await page.getByTestId('status').filter({ hasText: 'Opened chat-reply' }).waitFor();
  await page.getByTestId('node-start').click();

  // Three groups, closed while unset; opening them and leaving them writes nothing.
  const group = (name) => page.locator(`#panel details[data-group="${name}"]`);
  assert.deepEqual(await page.locator('#panel details.group > summary').allTextContents(), ['Debounce', 'Throttle', 'Runs at once']);
  for (const name of ['concurrency', 'debounce', 'throttle']) {
    assert.equal(await group(name).getAttribute('open'), null, `${name} starts closed`);
    await group(name).locator('summary').click();
  }
  assert.deepEqual(await group('concurrency').locator('.field > label').allTextContents(), [
    'Runs at once — 1–1000; empty: no limit',
    'Per key — template over the input, e.g. {{trigger.chat}}: each value has its own limit',
    'When full',
    'Free the slot while waiting — a run parked at an approval, a wait or an event lets the next one start',
  ]);
  assert.deepEqual(await page.getByTestId('field-concurrency.on_limit').locator('option').allTextContents(),
    ['(default: queue the new run)', 'queue the new run', 'skip the new run', 'cancel the oldest run']);
  await page.getByTestId('field-concurrency.limit').focus();
  await page.getByTestId('field-throttle.limit').focus();
  assert.deepEqual(await graphOf(page), design, 'an untouched section writes nothing');

  // Runs at once: written to the design, not to the trigger.
  await page.getByTestId('field-concurrency.limit').fill('2');
  await page.getByTestId('field-concurrency.key').fill('{{trigger.payload.chat}}');
  await page.getByTestId('field-concurrency.on_limit').selectOption('skip');
  let g = await graphOf(page);
  assert.deepEqual(g.concurrency, { limit: 2, key: '{{trigger.payload.chat}}', on_limit: 'skip' });
  assert.deepEqual(byId(g, 'start'), design.nodes[0], 'the trigger node itself is unchanged');

  // A debounce; a throttle as well is refused by the server, said on the throttle's fields.
  await page.getByTestId('field-debounce.period').fill('30s');
  await page.getByTestId('field-debounce.key').fill('{{trigger.payload.chat}}');
  assert.deepEqual(byId(await graphOf(page), 'start').debounce, { period: '30s', key: '{{trigger.payload.chat}}' });
  await page.getByTestId('field-throttle.limit').fill('5');
  await page.getByTestId('field-throttle.period').fill('1m');
  await waitFor(page, 'the server to refuse a debounce with a throttle',
    () => /not both/.test(document.querySelector('[data-testid="field-msg-throttle.limit"]')?.textContent || ''));
  // Cleared, its required fields gone: the whole throttle goes once the field is left.
  await page.getByTestId('field-throttle.limit').fill('');
  await page.getByTestId('field-throttle.period').fill('');
  await page.getByTestId('field-throttle.period').press('Tab');
  await waitFor(page, 'the throttle to go', () => !('throttle' in window.vwfDesigner.getGraph().nodes[0]));
  g = await graphOf(page);
  assert.deepEqual(byId(g, 'start'), { ...design.nodes[0], debounce: { period: '30s', key: '{{trigger.payload.chat}}' } });

  // Saved: the server holds the design-level concurrency as set.
  await page.getByTestId('btn-save').click();
  await page.getByTestId('status').filter({ hasText: 'Saved chat-reply' }).waitFor();
  const saved = (await api(env.server, 'GET', '/designs/chat-reply')).body.graph;
  assert.deepEqual(saved.concurrency, { limit: 2, key: '{{trigger.payload.chat}}', on_limit: 'skip' });
  assert.deepEqual(saved, await graphOf(page), 'the server holds exactly the canvas graph');

  // Reopened, the group is open and shows the values; the design's own panel shows it too.
  await page.reload();
  await page.waitForFunction(() => !!window.vwfDesigner);
  await page.getByTestId('status').filter({ hasText: 'Opened chat-reply' }).waitFor();
  await page.getByTestId('node-start').click();
  assert.equal(await group('concurrency').getAttribute('open'), '');
  assert.equal(await page.getByTestId('field-concurrency.limit').inputValue(), '2');
  assert.equal(await page.getByTestId('field-concurrency.key').inputValue(), '{{trigger.payload.chat}}');

  // Clearing the limit removes the design's concurrency, key and all.
  await page.getByTestId('field-concurrency.limit').fill('');
  await page.getByTestId('field-concurrency.limit').press('Tab');
  await waitFor(page, 'the concurrency to go', () => !('concurrency' in window.vwfDesigner.getGraph()));
  assert.equal(await page.getByTestId('field-concurrency.key').inputValue(), '', 'the panel shows it gone');
  await page.getByTestId('status').filter({ hasText: 'Removed concurrency' }).waitFor();
  // Undo brings it back (Escape leaves any field, then the selection), shown in the design's
  // panel as well.
  await page.keyboard.press('Escape');
  await page.keyboard.press('Escape');
  await page.keyboard.press('Control+z');
  assert.deepEqual((await graphOf(page)).concurrency, { limit: 2, key: '{{trigger.payload.chat}}', on_limit: 'skip' });
  await page.keyboard.press('Escape');
  await page.locator('#panel .heading .badge', { hasText: 'Design' }).waitFor();
  assert.equal(await page.locator('#panel details[data-group="concurrency"]').getAttribute('open'), '');
  assert.equal(await page.getByTestId('field-concurrency.limit').inputValue(), '2');

  assert.deepEqual(page.problems, []);
  await page.close();
});

test('a run waiting for a slot is queued on the runs list and its page, behind the run holding it', async () => {
  const gated = (concurrency) => ({
    concurrency,
    nodes: [{ id: 'start', type: 'trigger', mode: 'manual' }, { id: 'gate', type: 'approval', question: 'Go on?' }],
    edges: [{ from: 'start', to: 'gate' }],
  });
  assert.equal((await api(env.server, 'POST', '/designs/one-at-a-time', { graph: gated({ limit: 1 }) })).body.ok, true);
  const first = (await api(env.server, 'POST', '/designs/one-at-a-time/run', { input: {} })).body;
  assert.equal(first.status, 'awaiting_approval', JSON.stringify(first));
  const second = (await api(env.server, 'POST', '/designs/one-at-a-time/run', { input: {} })).body;
  assert.equal(second.status, 'queued', JSON.stringify(second));
  // Per key: runs of one chat queue behind each other.
  assert.equal((await api(env.server, 'POST', '/designs/per-chat', { graph: gated({ limit: 1, key: '{{trigger.chat}}' }) })).body.ok, true);
  const chat = (await api(env.server, 'POST', '/designs/per-chat/run', { input: { chat: 'c7' } })).body;
  const chatQueued = (await api(env.server, 'POST', '/designs/per-chat/run', { input: { chat: 'c7' } })).body;
  assert.deepEqual([chat.status, chatQueued.status], ['awaiting_approval', 'queued']);

  // The runs list: the queued run with its own badge; the status filter offers `queued`.
  const list = await openPage(env.browser, `${env.server.url}/#/runs`, { viewport: { width: 1280, height: 900 } });
  const row = list.locator(`tr[data-run="${second.run_id}"]`);
  await row.waitFor();
  assert.equal(await row.getAttribute('data-status'), 'queued');
  assert.equal(await row.locator('.badge.s-queued').textContent(), 'queued');
  assert.notEqual(await row.locator('.badge.s-queued').evaluate((b) => getComputedStyle(b).borderStyle), 'solid');
  assert.equal(await list.locator(`tr[data-run="${chatQueued.run_id}"] [data-concurrency-key]`).textContent(), 'key c7');
  assert.equal(await row.locator('[data-concurrency-key]').count(), 0, 'no key, none shown');
  assert.equal(await row.locator('[data-place]').textContent(), 'place 1 in line');
  await list.locator('select[name="status"]').selectOption('queued');
  await waitFor(list, 'the queued runs alone',
    () => location.hash === '#/runs?status=queued' && [...document.querySelectorAll('#runs tbody tr[data-run]')].every((r) => r.dataset.status === 'queued')
      && document.querySelectorAll('#runs tbody tr[data-run]').length === 2);

  // The run page: queued behind the first, place 1; the canvas shows it has not started.
  const page = await openPage(env.browser, `${env.server.url}/#/runs/${second.run_id}`, { viewport: { width: 1280, height: 900 } });
  await waitForRunStatus(page, 'queued');
  assert.equal(await page.locator('#queue').isVisible(), true);
  assert.equal(await page.locator('#queue').innerText(), `Queued behind run ${first.run_id} · place 1`);
  assert.equal(await page.locator('#queue-behind').getAttribute('href'), `#/runs/${first.run_id}`);
  await waitForCanvasStates(page, 'the queued run', { start: 'pending', gate: null });

  // The first run answered: the slot frees, the second starts and parks at its own gate.
  assert.equal((await api(env.server, 'POST', `/runs/${first.run_id}/respond`, { node: 'gate', answer: 'approve' })).body.status, 'done');
  await waitForRunStatus(page, 'awaiting_approval');
  assert.equal(await page.locator('#queue').isVisible(), false);
  await page.locator('#pending button[data-option="approve"]').waitFor();

  // A keyed run says its key.
  const keyed = await openPage(env.browser, `${env.server.url}/#/runs/${chatQueued.run_id}`, { viewport: { width: 1280, height: 900 } });
  await waitForRunStatus(keyed, 'queued');
  assert.equal(await keyed.locator('#queue').innerText(), `Queued behind run ${chat.run_id} · place 1 · key c7`);

  assert.deepEqual([...list.problems, ...page.problems, ...keyed.problems], []);
  for (const p of [list, page, keyed]) await p.close();
});
