// Run from the Designs list, in a real Chromium against a real `vwf serve`: Run… opens a dialog
// with the run's input prefilled (a template's example input, else the newest run's input), as a
// form of the declared fields when the design declares `inputs`; the run starts with what the
// dialog holds, and Cancel or a form that is not filled in starts nothing. Every wait is for a
// condition; nothing sleeps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { serverAndBrowser, api, ROOT } from './helpers.mjs';
import { openPage, waitForRunStatus } from './canvas.mjs';

const env = serverAndBrowser();
const open = () => openPage(env.browser, `${env.server.url}/#/designs`, { viewport: { width: 1280, height: 900 } });
const runs = async (design) => (await api(env.server, 'GET', `/runs?design=${design}&limit=100`)).body.runs;

test('Run… from the Designs list starts a template with its example input, and a declared input as a form', async () => {
  // A template that fails without its input (report-archive reads trigger.event) and ends done with it.
  const template = JSON.parse(readFileSync(join(ROOT, 'examples', 'report-archive.designer.json'), 'utf8'));
  assert.ok(template.example_input, 'the template has an example input');
  assert.equal((await api(env.server, 'POST', '/designs/archive', { graph: template })).body.ok, true);

  let page = await open();
  await page.locator('tr[data-design="archive"] button[data-action="run"]').click();
  const dialog = page.getByTestId('run-dialog');
  await dialog.waitFor();
  assert.deepEqual(JSON.parse(await dialog.locator('textarea[name="input"]').inputValue()), template.example_input);
  assert.match(await dialog.innerText(), /example input/);
  // Cancel starts nothing.
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await dialog.waitFor({ state: 'detached' });
  assert.equal((await runs('archive')).length, 0);

  await page.locator('tr[data-design="archive"] button[data-action="run"]').click();
  await page.getByTestId('run-dialog-run').click();
  await waitForRunStatus(page, 'done');
  const [done] = await runs('archive');
  assert.equal(done.status, 'done');
  assert.deepEqual(done.trigger.input, template.example_input);

  // No example: the newest run's input is offered. Bad JSON is said in the dialog and starts nothing.
  const echo = {
    nodes: [{ id: 'start', type: 'trigger', mode: 'manual' }, { id: 'say', type: 'output', template: 'topic {{trigger.topic}}' }],
    edges: [{ from: 'start', to: 'say' }],
  };
  assert.equal((await api(env.server, 'POST', '/designs/echo', { graph: echo })).body.ok, true);
  assert.equal((await api(env.server, 'POST', '/designs/echo/run', { input: { topic: 'tea' } })).body.status, 'done');
  page = await open();
  await page.locator('tr[data-design="echo"] button[data-action="run"]').click();
  await page.getByTestId('run-dialog').waitFor();
  const text = page.getByTestId('run-dialog').locator('textarea[name="input"]');
  assert.deepEqual(JSON.parse(await text.inputValue()), { topic: 'tea' });
  assert.match(await page.getByTestId('run-dialog').innerText(), /input of run [0-9a-f]{12}/);
  await text.fill('{"topic": ');
  await page.getByTestId('run-dialog-run').click();
  assert.match(await page.getByTestId('run-dialog-problem').innerText(), /not JSON/);
  assert.equal((await runs('echo')).length, 1);
  await text.fill('{"topic": "coffee"}');
  await page.getByTestId('run-dialog-run').click();
  await waitForRunStatus(page, 'done');
  assert.deepEqual((await runs('echo'))[0].trigger.input, { topic: 'coffee' });

  // Declared inputs: a form, a required field checked before anything starts, numbers typed.
  const declared = {
    inputs: { type: 'object', properties: { city: { type: 'string', description: 'where' }, days: { type: 'integer' }, metric: { type: 'boolean' } }, required: ['city'] },
    nodes: [{ id: 'start', type: 'trigger', mode: 'manual' }, { id: 'say', type: 'output', template: '{{trigger.city}} for {{trigger.days}} days' }],
    edges: [{ from: 'start', to: 'say' }],
  };
  assert.equal((await api(env.server, 'POST', '/designs/forecast', { graph: declared })).body.ok, true);
  page = await open();
  await page.locator('tr[data-design="forecast"] button[data-action="run"]').click();
  const form = page.getByTestId('run-dialog');
  await form.locator('[data-run-field="city"] input').waitFor();
  assert.match(await form.locator('[data-run-field="city"]').innerText(), /city \*.*string.*where/s);
  await form.locator('[data-run-field="days"] input').fill('3');
  await page.getByTestId('run-dialog-run').click();
  assert.match(await page.getByTestId('run-dialog-problem').innerText(), /city is required/);
  assert.equal((await runs('forecast')).length, 0);
  await form.locator('[data-run-field="days"] input').fill('3.5');
  await form.locator('[data-run-field="city"] input').fill('Oslo');
  await page.getByTestId('run-dialog-run').click();
  assert.match(await page.getByTestId('run-dialog-problem').innerText(), /days: a whole number/);
  await form.locator('[data-run-field="days"] input').fill('3');
  await form.locator('[data-run-field="metric"] input').check();
  await page.getByTestId('run-dialog-run').click();
  await waitForRunStatus(page, 'done');
  const [forecast] = await runs('forecast');
  assert.deepEqual(forecast.trigger.input, { city: 'Oslo', days: 3, metric: true });
  assert.equal(forecast.outputs.say.text, 'Oslo for 3 days');

  assert.deepEqual(page.problems, []);
});

test('a run that failed for want of an input value says which, and runs again with the input completed, not a blind retry', async () => {
  const greet = {
    nodes: [{ id: 'start', type: 'trigger', mode: 'manual' }, { id: 'say', type: 'output', template: 'hello {{trigger.who}}' }],
    edges: [{ from: 'start', to: 'say' }],
  };
  assert.equal((await api(env.server, 'POST', '/designs/greet', { graph: greet })).body.ok, true);
  const failed = (await api(env.server, 'POST', '/designs/greet/run', { input: { lang: 'en' } })).body;
  assert.equal(failed.status, 'failed');
  const page = await openPage(env.browser, `${env.server.url}/#/runs/${failed.run_id}`, { viewport: { width: 1280, height: 900 } });
  await page.locator('#missing-input').waitFor();
  assert.match(await page.locator('#missing-input').innerText(), /has no who/);
  assert.equal(await page.locator('#run-with-input').getAttribute('class'), 'primary', 'running again with input is what is offered first');
  await page.locator('#run-with-input').click();
  const dialog = page.getByTestId('run-dialog');
  await dialog.waitFor();
  assert.deepEqual(JSON.parse(await dialog.locator('textarea[name="input"]').inputValue()), { lang: 'en' }, 'the failed run\'s input, to complete');
  assert.match(await dialog.innerText(), new RegExp(`the input of run ${failed.run_id}`));
  await dialog.locator('textarea[name="input"]').fill('{"lang": "en", "who": "ada"}');
  await page.getByTestId('run-dialog-run').click();
  await page.waitForFunction((old) => /^#\/runs\/[0-9a-f]{12}$/.test(location.hash) && !location.hash.endsWith(old), failed.run_id);
  await waitForRunStatus(page, 'done');
  const [again] = await runs('greet');
  assert.equal(again.status, 'done');
  assert.equal(again.outputs.say.text, 'hello ada');
  assert.deepEqual(page.problems, []);
});
