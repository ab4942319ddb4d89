// A gate that counts its answers, in a real Chromium against a real `vwf serve`: on the run page
// the answers so far (kept up to date as they arrive, what is typed kept), what the gate needs,
// the notice it sent, a name required, the server's refusal of a second answer by the same
// person, and the answers under the decided step; on the canvas the approvers editor writing
// `approvers` into the node (only the keys away from their defaults, none at all once back at
// them), as saved. Every wait is for a condition; nothing sleeps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { serverAndBrowser, api, DOCS } from './helpers.mjs';
import { openPage, graphOf, byId, waitFor } from './canvas.mjs';

const ctx = serverAndBrowser();

/** trigger → gate `g` needing two same answers of the people it allows, `reject` ending it at
 * once, announced to a webhook this server has no channel for → output `out` on approve. */
const twoPeople = {
  nodes: [
    { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 120 },
    {
      id: 'g', type: 'approval', question: 'Ship release 1.4?', options: ['approve', 'reject'], x: 260, y: 120,
      approvers: { required: 2, allowed: ['ann', 'bo', 'telegram:555'], veto: ['reject'] }, notify: ['webhook:alerts'],
    },
    { id: 'out', type: 'output', template: 'shipped, last yes by {{nodes.g.by}}', x: 480, y: 120 },
  ],
  edges: [{ from: 'start', to: 'g' }, { from: 'g', to: 'out', label: 'approve' }],
};

test('run page: the answers so far, the notice sent, a name required, refusals said, then the answers of the decided gate', async () => {
  const { server, browser } = ctx;
  assert.equal((await api(server, 'POST', '/designs/two-people', { graph: twoPeople })).body.ok, true);
  const parked = (await api(server, 'POST', '/designs/two-people/run', { input: {} })).body;
  assert.equal(parked.status, 'awaiting_approval', JSON.stringify(parked));
  const runId = parked.run_id;

  const page = await openPage(browser, `${server.url}/#/runs/${runId}`, { viewport: { width: 1280, height: 900 } });
  const pending = page.locator('#pending');
  const count = pending.getByTestId('votes-count');
  await count.waitFor();
  assert.equal(await count.innerText(), '0 of 2 answers yet.');
  assert.equal(await pending.getByTestId('approvers-rule').innerText(), 'Needs 2 people to give the same answer, each person once; reject ends it at once.');
  assert.equal(await pending.getByTestId('approvers-allowed').innerText(), 'Only these may answer: ann, bo, telegram:555.');
  assert.equal(await pending.locator('button[data-option="reject"]').getAttribute('data-veto'), '', 'the veto option is marked');
  assert.equal(await pending.locator('button[data-option="approve"]').getAttribute('data-veto'), null);
  // The notice the gate sent when it opened: to a webhook this server has no channel for.
  const notice = pending.locator('[data-testid="gate-notified"] li[data-target="webhook:alerts"]');
  assert.equal(await notice.getAttribute('data-ok'), 'false');
  assert.match(await notice.innerText(), /webhook:alerts failed no webhook channel is configured/);
  // Who answers is required here, and the page says why.
  assert.match(await pending.getByTestId('answer-by-hint').innerText(), /Required: this gate needs 2 people to give the same answer, each under their own name, and only the names it allows/);
  assert.equal(await page.getByLabel('Your name').getAttribute('placeholder'), 'required');
  await pending.locator('button[data-option="approve"]').click();
  await waitFor(page, 'the page to ask for a name', () =>
    /this gate counts who answers; type your name first/.test(document.querySelector('#notice.error')?.textContent || ''));
  assert.equal(await page.getByLabel('Your name').getAttribute('aria-invalid'), 'true');
  assert.equal((await api(server, 'GET', `/runs/${runId}`)).body.pending.votes, undefined, 'nothing was sent');

  // Someone the gate does not allow: the server's 403 is said.
  await page.getByLabel('Your name').fill('cy');
  await pending.locator('button[data-option="approve"]').click();
  await waitFor(page, 'the server to refuse cy', () =>
    /cy may not answer this gate/.test(document.querySelector('#notice.error')?.textContent || ''));
  await waitFor(page, 'the buttons to be back', () => !document.querySelector('#pending button[data-option="approve"]').disabled);
  assert.equal((await api(server, 'GET', `/runs/${runId}`)).body.pending.votes, undefined, 'no answer was counted');

  // Ann answers elsewhere (the API): the page shows it without a reload, keeping what is typed.
  await page.getByLabel('Your name').fill('ann');
  const first = (await api(server, 'POST', `/runs/${runId}/respond`, { node: 'g', answer: 'approve', by: 'ann' })).body;
  assert.equal(first.status, 'awaiting_approval', JSON.stringify(first));
  await waitFor(page, 'the first answer to show', () => document.querySelector('[data-testid="votes-count"]')?.dataset.votes === '1');
  assert.equal(await count.innerText(), '1 of 2 answers:');
  assert.match(await pending.locator('ol.votes li[data-by="ann"]').innerText(), /^approve by ann \(api\) at \S/);
  assert.equal(await page.getByLabel('Your name').inputValue(), 'ann', 'the name typed is kept');

  // Ann again: the server's 409 is said, the run still waits for a second person.
  assert.equal((await api(server, 'POST', `/runs/${runId}/respond`, { node: 'g', answer: 'approve', by: 'ann' })).status, 409);
  await pending.locator('button[data-option="approve"]').click();
  await waitFor(page, 'the server to refuse a second answer by ann', () =>
    /ann already answered "approve"/.test(document.querySelector('#notice.error')?.textContent || ''));
  const still = (await api(server, 'GET', `/runs/${runId}`)).body;
  assert.equal(still.status, 'awaiting_approval');
  assert.equal(still.pending.votes.length, 1);
  await waitFor(page, 'the buttons to be back', () => !document.querySelector('#pending button[data-option="approve"]').disabled);

  await page.getByLabel('Your name').fill('bo');
  mkdirSync(DOCS, { recursive: true });
  await pending.screenshot({ path: join(DOCS, 'gate-approvers.png') });

  // Bo gives the second approve: the gate is decided and the run goes on.
  await pending.locator('button[data-option="approve"]').click();
  await waitFor(page, 'the run to finish', () => document.querySelector('.title')?.dataset.status === 'done');
  const run = (await api(server, 'GET', `/runs/${runId}`)).body;
  assert.equal(run.status, 'done');
  assert.equal(run.outputs.g.answer, 'approve');
  assert.equal(run.outputs.g.by, 'bo');
  assert.deepEqual(run.outputs.g.approvers.map((v) => [v.answer, v.by, v.via]), [['approve', 'ann', 'api'], ['approve', 'bo', 'api']]);
  assert.equal(run.outputs.out.text, 'shipped, last yes by bo');

  // The step shows both answers; the gate's output lists them too.
  const answered = page.locator('#steps tr[data-answer-of="g"]');
  assert.match(await answered.innerText(), /Answered approve by bo · 2 answers:/);
  assert.match(await answered.locator('li[data-by="ann"]').innerText(), /^approve by ann \(api\) at /);
  assert.match(await answered.locator('li[data-by="bo"]').innerText(), /^approve by bo \(api\) at /);
  const output = page.locator('#outputs details[data-node="g"]');
  await output.locator('summary').first().click();
  assert.deepEqual(await output.locator('ol.votes li').evaluateAll((els) => els.map((e) => e.dataset.by)), ['ann', 'bo']);
  assert.equal(await page.locator('#pending').isHidden(), true, 'nothing waits any more');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('canvas: the approvers editor writes only what differs from the defaults, and removes approvers back at them', async () => {
  const { server, browser } = ctx;
  const design = {
    nodes: [
      { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 120 },
      { id: 'g', type: 'approval', question: 'Ship it?', options: ['approve', 'reject'], x: 260, y: 120 },
      { id: 'out', type: 'output', x: 480, y: 120 },
    ],
    edges: [{ from: 'start', to: 'g' }, { from: 'g', to: 'out', label: 'approve' }],
  };
  assert.equal((await api(server, 'POST', '/designs/gated', { graph: design })).body.ok, true);
  const page = await openPage(browser, `${server.url}/designer.html?design=gated`, {
    viewport: { width: 1400, height: 900 }, ready: () => !!window.vwfDesigner,
  });
  await page.getByTestId('status').filter({ hasText: 'Opened gated' }).waitFor();
  await page.getByTestId('node-g').click();
  const editor = page.getByTestId('approvers-editor');
  await editor.waitFor();
  const required = page.getByTestId('approvers-required');
  const allowed = page.getByTestId('approvers-allowed');
  assert.equal(await required.inputValue(), '');
  assert.equal(await required.getAttribute('placeholder'), '1');
  assert.equal(await page.getByTestId('approvers-distinct').isChecked(), true, 'each person once is the default');
  assert.deepEqual(await page.locator('[data-testid="approvers-veto"] input').evaluateAll((els) => els.map((e) => e.value)), ['approve', 'reject']);
  assert.equal(await page.getByTestId('field-notify').getAttribute('placeholder'), 'telegram:123456\nslack:#ops\nwebhook:name');
  assert.deepEqual(await graphOf(page), design, 'an untouched editor writes nothing');

  // Out of range: the server's verdict is said on the editor.
  await required.fill('20');
  await waitFor(page, 'the server to refuse 20 people', () =>
    /from 1 to 10/.test(document.querySelector('[data-testid="field-msg-approvers"]')?.textContent || ''));
  await required.fill('2');
  await page.getByTestId('approvers-veto-reject').check();
  await allowed.fill('ann\ntelegram:555');
  const set = { required: 2, allowed: ['ann', 'telegram:555'], veto: ['reject'] };
  assert.deepEqual(byId(await graphOf(page), 'g').approvers, set);
  await waitFor(page, 'the server to accept it', () =>
    document.querySelector('[data-testid="field-msg-approvers"]')?.textContent === '');

  // Undo takes back the typing in one field as one step, and redo brings it back.
  await page.getByTestId('btn-undo').click();
  assert.deepEqual(byId(await graphOf(page), 'g').approvers, { required: 2, veto: ['reject'] });
  assert.equal(await allowed.inputValue(), '', 'the editor shows the value undone');
  await page.getByTestId('btn-redo').click();
  assert.deepEqual(byId(await graphOf(page), 'g').approvers, set);
  assert.equal(await allowed.inputValue(), 'ann\ntelegram:555');

  // A new option gets its veto box at once.
  await page.getByTestId('field-options').fill('approve\nreject\nhold');
  await page.getByTestId('approvers-veto-hold').waitFor();
  assert.equal(await page.getByTestId('approvers-veto-reject').isChecked(), true);

  await page.getByTestId('btn-save').click();
  await page.getByTestId('status').filter({ hasText: 'Saved gated' }).waitFor();
  let saved = byId((await api(server, 'GET', '/designs/gated')).body.graph, 'g');
  assert.deepEqual(saved.approvers, set);
  assert.deepEqual(saved.options, ['approve', 'reject', 'hold']);

  // Back at the defaults: no approvers at all.
  await required.fill('1');
  await allowed.fill('');
  await page.getByTestId('approvers-veto-reject').uncheck();
  assert.equal('approvers' in byId(await graphOf(page), 'g'), false);
  await page.getByTestId('btn-save').click();
  await waitFor(page, 'the save to finish', () => /^Saved gated/.test(document.querySelector('[data-testid="status"]').textContent)
    && document.querySelector('[data-testid="dirty"]').hidden);
  saved = byId((await api(server, 'GET', '/designs/gated')).body.graph, 'g');
  assert.equal('approvers' in saved, false, JSON.stringify(saved));
  assert.deepEqual(saved, { ...design.nodes[1], options: ['approve', 'reject', 'hold'] });

  // Only "each person once" unticked: that is all that is written.
  await page.getByTestId('approvers-distinct').uncheck();
  assert.deepEqual(byId(await graphOf(page), 'g').approvers, { distinct: false });
  assert.deepEqual(page.problems, []);
  await page.close();
});
