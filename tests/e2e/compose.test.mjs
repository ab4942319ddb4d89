// Designs that compose, in a real Chromium against a real `vwf serve`: a Design node (its design
// picker and input) and a Wait for event node built on the canvas, the design's declared input
// edited as a field list, and the run page showing the child run nested under its step: the
// child's gate answered through the parent's page, both runs linked, the event wait shown until
// a matching event arrives. Every wait is for a condition; nothing sleeps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serverAndBrowser, api } from './helpers.mjs';
import { openPage, drop, connect, graphOf, waitFor, waitForRunStatus } from './canvas.mjs';

const env = serverAndBrowser();

/** The called design: asks the on-call gate, then says what it paged. */
const notify = {
  description: 'Pages the on-call after a yes.',
  tool: true,
  inputs: { type: 'object', properties: { message: { type: 'string', description: 'what to say' } }, required: ['message'] },
  nodes: [
    { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 120 },
    { id: 'gate', type: 'approval', question: 'Page the on-call about {{trigger.message}}?', options: ['page', 'skip'], x: 260, y: 120 },
    { id: 'said', type: 'output', template: 'paged: {{trigger.message}}', x: 480, y: 120 },
  ],
  edges: [{ from: 'start', to: 'gate' }, { from: 'gate', to: 'said', label: 'page' }],
};

/** The caller as it starts on the canvas: a trigger and an output, the middle to be built. */
const caller = {
  nodes: [
    { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 160 },
    { id: 'done', type: 'output', x: 760, y: 160 },
  ],
  edges: [],
};

test('canvas: a Design node and a Wait for event node, the input as a field list; the run page nests the child run', async () => {
  assert.equal((await api(env.server, 'POST', '/designs/notify-oncall', { graph: notify })).body.ok, true);
  assert.equal((await api(env.server, 'POST', '/designs/release', { graph: caller })).body.ok, true);
  const page = await openPage(env.browser, `${env.server.url}/designer.html?design=release`, {
    viewport: { width: 1400, height: 900 }, ready: () => !!window.vwfDesigner,
  });
  await page.getByTestId('node-start').waitFor();
  for (const type of ['design', 'wait_event']) await page.getByTestId(`palette-${type}`).waitFor();

  // The Design node: its picker offers the saved designs; its input is JSON with templates.
  await drop(page, 'design', 280, 160);
  await page.getByTestId('node-design1').click();
  await waitFor(page, 'the picker to list the saved designs',
    () => [...document.querySelectorAll('#list-designs option')].map((o) => o.value).includes('notify-oncall'));
  assert.equal(await page.getByTestId('field-design').getAttribute('list'), 'list-designs');
  await page.getByTestId('field-design').fill('notify-oncall');
  await page.getByTestId('field-input').fill('{"message": "release {{trigger.version}}"}');

  // The Wait for event node: its event, a match on the payload, a timeout.
  await drop(page, 'wait_event', 520, 160);
  await page.getByTestId('node-wait_event1').click();
  await page.getByTestId('field-event').fill('pr.merged');
  await page.getByTestId('field-match').fill('event.payload.pr == {{trigger.pr}}');
  await page.getByTestId('field-timeout').fill('2h');
  await connect(page, 'start', 'design1');
  await connect(page, 'design1', 'wait_event1');
  await connect(page, 'wait_event1', 'done');
  await page.getByTestId('node-done').click();
  await page.getByTestId('field-template').fill('{{nodes.design1.outputs.said.text}} after PR {{nodes.wait_event1.payload.pr}}');

  // The design's input, edited as a field list: two fields, one renamed, typed, required, described.
  // (Escape leaves the field typed in, then the selection: the panel shows the design.)
  await page.keyboard.press('Escape');
  await page.keyboard.press('Escape');
  await page.getByTestId('input-add').click();
  await page.getByTestId('input-name-0').fill('version');
  await page.getByTestId('input-required-0').check();
  await page.getByTestId('input-description-0').fill('the release being shipped');
  await page.getByTestId('input-add').click();
  await page.getByTestId('input-name-1').fill('pr');
  await page.getByTestId('input-type-1').selectOption('integer');
  await page.getByTestId('input-required-1').check();
  await page.getByTestId('input-add').click();
  assert.equal(await page.getByTestId('input-row').count(), 3);
  await page.getByTestId('input-remove-2').click();
  assert.equal(await page.getByTestId('input-row').count(), 2);

  const graph = await graphOf(page);
  assert.deepEqual(graph.inputs, {
    type: 'object',
    properties: { version: { type: 'string', description: 'the release being shipped' }, pr: { type: 'integer' } },
    required: ['version', 'pr'],
  });
  const design = graph.nodes.find((n) => n.id === 'design1');
  assert.equal(design.design, 'notify-oncall');
  assert.deepEqual(design.input, { message: 'release {{trigger.version}}' });
  const wait = graph.nodes.find((n) => n.id === 'wait_event1');
  assert.equal(wait.event, 'pr.merged');
  assert.equal(wait.match, 'event.payload.pr == {{trigger.pr}}');

  // Undo takes back the last field edit; redo brings it again.
  await page.keyboard.press('Escape');
  await page.keyboard.press('Control+z');
  assert.equal(Object.keys((await graphOf(page)).inputs.properties).length, 3);
  await page.keyboard.press('Control+y');
  assert.equal(Object.keys((await graphOf(page)).inputs.properties).length, 2);

  await page.getByTestId('btn-save').click();
  await page.getByTestId('status').filter({ hasText: 'Saved release' }).waitFor();
  const saved = await api(env.server, 'GET', '/designs/release');
  assert.deepEqual(saved.body.graph, await graphOf(page), 'the server holds exactly the canvas graph');

  // A run: the child parks on its gate; the parent's page asks it, nested under the step.
  const started = await api(env.server, 'POST', '/designs/release/run', { input: { version: '1.4', pr: 7 } });
  assert.equal(started.body.status, 'awaiting_child', JSON.stringify(started.body));
  const id = started.body.run_id;
  const run = await openPage(env.browser, `${env.server.url}/#/runs/${encodeURIComponent(id)}`, { viewport: { width: 1280, height: 900 } });
  await waitForRunStatus(run, 'awaiting_child');
  await run.locator('#asked-by').waitFor();
  const childLink = run.locator('tr.child-run[data-child-of="design1"] a[data-child-run]');
  await childLink.waitFor();
  const child = await childLink.getAttribute('data-child-run');
  assert.match(await run.locator('#asked-by').innerText(), new RegExp(child.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  assert.match(await run.locator('.question').innerText(), /release 1\.4/);

  // Answering on the parent's page answers the child; the parent then waits for its event.
  await run.locator('button[data-option="page"]').click();
  await waitForRunStatus(run, 'awaiting_event');
  assert.match(await run.locator('#event-wait').innerText(), /pr\.merged.*event\.payload\.pr == 7/);
  const childRun = await api(env.server, 'GET', `/runs/${encodeURIComponent(child)}`);
  assert.equal(childRun.body.status, 'done');
  assert.equal(childRun.body.parent_run, id);

  // Another PR's merge does not answer it; its own does.
  const other = await api(env.server, 'POST', '/events/pr.merged', { payload: { pr: 8 } });
  assert.deepEqual(other.body.resumed, []);
  const own = await api(env.server, 'POST', '/events/pr.merged', { payload: { pr: 7 } });
  assert.deepEqual(own.body.resumed, [id]);
  await waitForRunStatus(run, 'done');
  const done = await api(env.server, 'GET', `/runs/${encodeURIComponent(id)}`);
  assert.deepEqual(done.body.child_runs, [child]);
  assert.equal(done.body.outputs.done.text, 'paged: release 1.4 after PR 7');

  // The nested row is a link: the child's page links back to its parent.
  await run.locator('tr.child-run[data-child-of="design1"] a[data-child-run]').click();
  await run.locator('#parent-run').waitFor();
  assert.equal(await run.locator('#parent-run').innerText(), id);
  await waitForRunStatus(run, 'done');

  // A saved declaration reads back as rows; one the rows cannot hold stays a JSON field as written.
  const called = await openPage(env.browser, `${env.server.url}/designer.html?design=notify-oncall`, {
    viewport: { width: 1400, height: 900 }, ready: () => !!window.vwfDesigner,
  });
  await called.getByTestId('input-row').first().waitFor();
  assert.equal(await called.getByTestId('input-name-0').inputValue(), 'message');
  assert.equal(await called.getByTestId('input-type-0').inputValue(), 'string');
  assert.equal(await called.getByTestId('input-required-0').isChecked(), true);
  assert.equal(await called.getByTestId('input-description-0').inputValue(), 'what to say');
  const closed = { ...notify, inputs: { ...notify.inputs, additionalProperties: false } };
  assert.equal((await api(env.server, 'POST', '/designs/notify-closed', { graph: closed })).body.ok, true);
  const kept = await openPage(env.browser, `${env.server.url}/designer.html?design=notify-closed`, {
    viewport: { width: 1400, height: 900 }, ready: () => !!window.vwfDesigner,
  });
  await kept.getByTestId('field-inputs').waitFor();
  assert.equal(await kept.getByTestId('input-row').count(), 0);
  assert.deepEqual(JSON.parse(await kept.getByTestId('field-inputs').inputValue()), closed.inputs);

  for (const p of [page, run, called, kept]) assert.deepEqual(p.problems, []);
});
