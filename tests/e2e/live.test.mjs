// Pages that follow a run as it changes, on two `vwf serve` instances sharing one PostgreSQL
// database (the cluster the test command starts; scripts/e2e starts one when run alone): the run
// page and the runs list open on instance B show a gate answered through instance A without a
// reload, while B holds their long-poll reads (its vwf_live_waiters gauge says so), so the change
// reached them through the database's notices, not through a timer.
// Every wait is for a condition; nothing sleeps.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { startServer, launch, api, untilHeld } from './helpers.mjs';
import { openPage, waitFor } from './canvas.mjs';

let a;
let b;
let browser;

/** A fresh database on the test cluster; its URL. */
function freshDatabase() {
  const admin = process.env.VWF_TEST_DATABASE_URL;
  assert.ok(admin, 'VWF_TEST_DATABASE_URL is not set: run the browser tests through scripts/e2e (or scripts/test), which start a PostgreSQL cluster');
  const name = `vwf_e2e_${randomBytes(6).toString('hex')}`;
  execFileSync('psql', [admin, '-q', '-c', `CREATE DATABASE ${name}`], { stdio: ['ignore', 'ignore', 'inherit'] });
  return `${admin.slice(0, admin.lastIndexOf('/'))}/${name}`;
}

before(async () => {
  const database = freshDatabase();
  a = await startServer(undefined, { VWF_DATABASE_URL: database });
  b = await startServer(undefined, { VWF_DATABASE_URL: database });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await a?.stop();
  await b?.stop();
});

const gated = {
  nodes: [
    { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 100 },
    { id: 'gate', type: 'approval', question: 'Send it?', options: ['send', 'skip'], timeout_minutes: 600, x: 240, y: 100 },
    { id: 'out', type: 'output', template: 'sent', x: 440, y: 100 },
  ],
  edges: [{ from: 'start', to: 'gate' }, { from: 'gate', to: 'out', label: 'send' }],
};

/** Makes the page's tab hidden or shown, as switching tabs does. */
function setHidden(page, hidden) {
  return page.evaluate((h) => {
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (h ? 'hidden' : 'visible') });
    document.dispatchEvent(new Event('visibilitychange'));
  }, hidden);
}

test('a gate answered on instance A shows on the run page and the runs list open on instance B', async () => {
  assert.equal((await api(a, 'POST', '/designs/gated', { graph: gated })).body.ok, true);
  const run = (await api(a, 'POST', '/designs/gated/run', {})).body;
  assert.equal(run.status, 'awaiting_approval');

  const runPage = await openPage(browser, `${b.url}/#/runs/${run.run_id}`);
  await waitFor(runPage, 'the parked run on B', () => document.querySelector('.title')?.dataset.status === 'awaiting_approval');
  const listPage = await openPage(browser, `${b.url}/#/runs`);
  const row = `#runs tr[data-run="${run.run_id}"]`;
  await waitFor(listPage, 'the parked run listed on B', (sel) => document.querySelector(sel)?.dataset.status === 'awaiting_approval', row);
  // Both pages hold a read on B (the canvas frame reads on its own timer; it is not counted).
  await untilHeld(b, 2);

  const answered = (await api(a, 'POST', `/runs/${run.run_id}/respond`, { node: 'gate', answer: 'send' })).body;
  assert.equal(answered.status, 'done', JSON.stringify(answered));
  const started = Date.now();
  await waitFor(runPage, 'the answered run on B', () => document.querySelector('.title')?.dataset.status === 'done');
  await waitFor(listPage, 'the answered run listed on B', (sel) => document.querySelector(sel)?.dataset.status === 'done', row);
  console.log(`the pages on B showed the answer made on A within ${Date.now() - started} ms`);
  assert.equal(await runPage.locator('#pending').isHidden(), true, 'nothing is pending any more');
  assert.match(await runPage.locator('#outputs details[data-node="out"] summary').textContent(), /sent/);
  assert.deepEqual(runPage.problems, []);
  assert.deepEqual(listPage.problems, []);
  // A settled run is followed no more; the runs list goes on following, for new runs (one read
  // held on B); once it is closed, the pages leave B holding nothing.
  await untilHeld(b, 1, { atMost: true });
  await untilHeld(b, 1);
  await listPage.close();
  await untilHeld(b, 0, { atMost: true });
  await runPage.close();
});

test('a hidden tab holds no read, and shows what changed once it is shown again', async () => {
  const run = (await api(a, 'POST', '/designs/gated/run', {})).body;
  assert.equal(run.status, 'awaiting_approval');
  const runPage = await openPage(browser, `${b.url}/#/runs/${run.run_id}`);
  await waitFor(runPage, 'the parked run on B', () => document.querySelector('.title')?.dataset.status === 'awaiting_approval');
  await untilHeld(b, 1);
  await setHidden(runPage, true);
  await untilHeld(b, 0, { atMost: true });
  assert.equal((await api(a, 'POST', `/runs/${run.run_id}/respond`, { node: 'gate', answer: 'skip' })).body.status, 'done');
  await setHidden(runPage, false);
  await waitFor(runPage, 'the answered run once shown', () => document.querySelector('.title')?.dataset.status === 'done');
  assert.deepEqual(runPage.problems, []);
  await runPage.close();
});
