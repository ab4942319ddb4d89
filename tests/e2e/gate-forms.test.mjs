// A gate with a form and an edit on the run page, in a real Chromium against a real `vwf serve`:
// the form drawn from the gate's `fields`, the server's 400 shown with what was typed kept, the
// draft rewritten beside its original with the diff following the typing, who answers, and the
// run as the answer left it (the values later steps read, the step marked edited by that name).
// Every wait is for a condition; nothing sleeps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { serverAndBrowser, api, DOCS } from './helpers.mjs';
import { openPage, waitFor } from './canvas.mjs';

const ctx = serverAndBrowser();

/** trigger → agent `draft` (no backend: a person gives its text) → gate `g` asking for a form
 * and letting `draft` be rewritten → output `say` on "send". */
const gateForm = {
  nodes: [
    { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 120 },
    { id: 'draft', type: 'agent', prompt: 'Write a note to the team', x: 220, y: 120 },
    {
      id: 'g', type: 'approval', question: 'Send the note?', options: ['send', 'hold'], x: 400, y: 120,
      fields: [
        { name: 'note', type: 'text', label: 'Note', required: true, max_length: 40 },
        { name: 'copies', type: 'number', label: 'Copies', default: 1 },
        { name: 'urgent', type: 'boolean', label: 'Urgent' },
        { name: 'channel', type: 'choice', label: 'Channel', options: ['email', 'chat'] },
      ],
      edit: ['draft'],
    },
    {
      id: 'say', type: 'output', x: 580, y: 120,
      template: '{{nodes.draft}} | {{nodes.g.fields.note}} | {{nodes.g.fields.copies}} | {{nodes.g.fields.urgent}} | {{nodes.g.fields.channel}} | {{nodes.draft.edited.by}}',
    },
  ],
  edges: [{ from: 'start', to: 'draft' }, { from: 'draft', to: 'g' }, { from: 'g', to: 'say', label: 'send' }],
};

test('run page: a gate with a form and an edit, answered with a name', async () => {
  const { server, browser } = ctx;
  const saved = await api(server, 'POST', '/designs/gate-form', { graph: gateForm });
  assert.equal(saved.body.ok, true, JSON.stringify(saved.body));
  const started = (await api(server, 'POST', '/designs/gate-form/run', { input: {} })).body;
  assert.equal(started.status, 'awaiting_agent', JSON.stringify(started));
  const parked = (await api(server, 'POST', `/runs/${started.run_id}/respond`, { node: 'draft', output: 'Hello team' })).body;
  assert.equal(parked.status, 'awaiting_approval', JSON.stringify(parked));
  const runId = parked.run_id;

  const page = await openPage(browser, `${server.url}/#/runs/${runId}`, { viewport: { width: 1280, height: 900 } });
  const pending = page.locator('#pending');
  await pending.getByTestId('gate-form').waitFor();
  // One input per field by its type, under its label; the required one marked, defaults filled in.
  const note = page.getByLabel('Note');
  const copies = page.getByLabel('Copies');
  const urgent = page.getByLabel('Urgent');
  const channel = page.getByLabel('Channel');
  assert.equal(await note.evaluate((el) => [el.tagName, el.type, el.maxLength].join(' ')), 'INPUT text 40');
  assert.equal(await copies.evaluate((el) => [el.tagName, el.type].join(' ')), 'INPUT number');
  assert.equal(await copies.inputValue(), '1');
  assert.equal(await urgent.evaluate((el) => el.type), 'checkbox');
  assert.equal(await urgent.isChecked(), false);
  assert.deepEqual(await channel.evaluate((el) => [...el.options].map((o) => o.value)), ['', 'email', 'chat']);
  assert.equal(await pending.locator('[data-field-row="note"] .required').count(), 1);
  assert.equal(await pending.locator('[data-field-row="copies"] .required').count(), 0);
  assert.doesNotMatch(await pending.innerText(), /\bnull\b/, 'nothing left out shows as "null"');
  // The draft: its text to edit beside the original, nothing changed yet.
  const draft = pending.locator('textarea[data-edit="draft"]');
  assert.equal(await draft.inputValue(), 'Hello team');
  assert.equal(await pending.locator('textarea[data-original="draft"]').inputValue(), 'Hello team');
  assert.match(await pending.locator('[data-diff-of="draft"]').innerText(), /No change/);

  // Sent without the required note: the server's 400 is shown, the run stays parked, the form
  // keeps what was typed.
  await channel.selectOption('chat');
  await pending.locator('button[data-option="send"]').click();
  await waitFor(page, 'the server to refuse the answer', () =>
    /fields\.note: is required/.test(document.querySelector('#notice.error')?.textContent || ''));
  assert.equal((await api(server, 'GET', `/runs/${runId}`)).body.status, 'awaiting_approval');
  await waitFor(page, 'the buttons to be back', () => !document.querySelector('#pending button[data-option="send"]').disabled);
  assert.equal(await channel.inputValue(), 'chat', 'the form keeps what was typed');

  await note.fill('ship it');
  await urgent.check();
  await draft.fill('Hello team\nSee you at 10.');
  await waitFor(page, 'the diff to show the added line', () =>
    [...document.querySelectorAll('#pending [data-diff-of="draft"] pre.added')].some((p) => p.textContent.includes('+ See you at 10.')));
  assert.equal(await pending.locator('[data-diff-of="draft"] pre.removed').count(), 0);
  await page.getByLabel('Your name').fill('ada');
  mkdirSync(DOCS, { recursive: true });
  await pending.screenshot({ path: join(DOCS, 'gate-form.png') });

  await pending.locator('button[data-option="send"]').click();
  await waitFor(page, 'the run to finish', () => document.querySelector('.title')?.dataset.status === 'done');
  const run = (await api(server, 'GET', `/runs/${runId}`)).body;
  assert.equal(run.status, 'done');
  assert.equal(run.outputs.say.text, 'Hello team\nSee you at 10. | ship it | 1 | true | chat | ada');
  assert.deepEqual(run.outputs.g.fields, { note: 'ship it', copies: 1, urgent: true, channel: 'chat' });
  assert.equal(run.outputs.g.by, 'ada');
  assert.equal(run.outputs.draft.edited.by, 'ada');
  assert.equal(run.outputs.draft.edited.original, 'Hello team');
  assert.equal(await page.evaluate(() => localStorage.getItem('vwf-answer-by')), 'ada', 'the name is remembered');

  // The steps list: the draft edited by that name, its original a click away; the gate's values.
  const edited = page.locator('#steps tr[data-edited-of="draft"]');
  assert.match(await edited.innerText(), /edited by ada/);
  await edited.locator('summary').click();
  assert.equal(await edited.locator('pre[data-original-of="draft"]').textContent(), 'Hello team');
  const answered = page.locator('#steps tr[data-answer-of="g"]');
  assert.match(await answered.innerText(), /Answered send by ada/);
  assert.equal(await answered.locator('dd[data-field="note"]').textContent(), 'ship it');
  assert.equal(await answered.locator('dd[data-field="urgent"]').textContent(), 'true');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('run page: a long text is a textarea, a json field is checked before it is sent', async () => {
  const { server, browser } = ctx;
  const graph = {
    nodes: [
      { id: 'start', type: 'trigger', mode: 'manual' },
      {
        id: 'h', type: 'approval', question: 'Go?', options: ['go'],
        fields: [{ name: 'summary', type: 'text', max_length: 500 }, { name: 'meta', type: 'json', label: 'Metadata', required: true }],
      },
      { id: 'out', type: 'output', template: '[{{nodes.h.fields.summary}}]' },
    ],
    edges: [{ from: 'start', to: 'h' }, { from: 'h', to: 'out', label: 'go' }],
  };
  assert.equal((await api(server, 'POST', '/designs/gate-json', { graph })).body.ok, true);
  const parked = (await api(server, 'POST', '/designs/gate-json/run', { input: {} })).body;
  assert.equal(parked.status, 'awaiting_approval', JSON.stringify(parked));
  const page = await openPage(browser, `${server.url}/#/runs/${parked.run_id}`, { viewport: { width: 1280, height: 900 } });
  const pending = page.locator('#pending');
  await pending.getByTestId('gate-form').waitFor();
  // A text longer than a line is a textarea; the label is the name when none is given.
  assert.equal(await page.getByLabel('summary').evaluate((el) => [el.tagName, el.maxLength].join(' ')), 'TEXTAREA 500');
  assert.equal(await pending.locator('[data-edit]').count(), 0, 'no step to edit');

  await page.getByLabel('Metadata').fill('{not json');
  await pending.locator('button[data-option="go"]').click();
  await waitFor(page, 'the JSON to be refused here', () =>
    /fields\.meta: is not valid JSON/.test(document.querySelector('#notice.error')?.textContent || ''));
  assert.equal(await page.getByLabel('Metadata').getAttribute('aria-invalid'), 'true');
  assert.equal((await api(server, 'GET', `/runs/${parked.run_id}`)).body.status, 'awaiting_approval');

  await page.getByLabel('Metadata').fill('{"a": [1, 2]}');
  await pending.locator('button[data-option="go"]').click();
  await waitFor(page, 'the run to finish', () => document.querySelector('.title')?.dataset.status === 'done');
  const run = (await api(server, 'GET', `/runs/${parked.run_id}`)).body;
  // The empty optional text was left out: the server gave its default.
  assert.deepEqual(run.outputs.h.fields, { summary: '', meta: { a: [1, 2] } });
  assert.equal(run.outputs.out.text, '[]');
  assert.equal(run.outputs.h.by, undefined, 'no name typed, none sent');
  assert.match(await page.locator('#steps tr[data-answer-of="h"] dd[data-field="meta"]').textContent(), /"a":\[1,2\]/);
  assert.deepEqual(page.problems, []);
  await page.close();
});
