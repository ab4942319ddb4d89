// The dashboard at `/` in a real Chromium against a real `vwf serve`: designs and templates,
// running a design and answering its gate on the run page (with the embedded canvas colouring
// every node), schedules with the server's live preview, the runs list and retry, and agent
// steps answered by hand or generated through a backend.
// Every wait is for a condition; nothing sleeps.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { createServer } from 'node:http';
import { startServer, launch, newPage, saveFixture, api, freshHome, untilHeld, DOCS } from './helpers.mjs';
import { openPage as openUrl, openDesigner, graphOf, byId, waitFor, waitForCanvasStates, canvasStates, canvasShowsEveryNode } from './canvas.mjs';

let server;
let browser;

before(async () => {
  server = await startServer();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** The dashboard at `hash` (`#/runs`, `#/designer/<name>`, …). */
function openPage(hash) {
  return openUrl(browser, `${server.url}/${hash}`, { viewport: { width: 1280, height: 900 } });
}

async function seed(name, graph) {
  const r = await api(server, 'POST', `/designs/${name}`, { graph });
  assert.equal(r.body.ok, true, JSON.stringify(r.body));
}

/** trigger → command → condition → approval → output, with a skipped branch. */
const shipIt = {
  description: 'Counts, checks, asks, ships.',
  nodes: [
    { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 120 },
    { id: 'count', type: 'command', run: 'echo 7', x: 220, y: 120 },
    { id: 'check', type: 'condition', expr: 'out.count.text > 5', x: 400, y: 120 },
    { id: 'gate', type: 'approval', question: 'Ship the count?', options: ['ship', 'hold'], x: 580, y: 60 },
    { id: 'shipped', type: 'output', template: 'shipped {{nodes.count}}', x: 760, y: 60 },
    { id: 'too-small', type: 'output', template: 'only {{nodes.count}}', x: 580, y: 200 },
  ],
  edges: [
    { from: 'start', to: 'count' }, { from: 'count', to: 'check' },
    { from: 'check', to: 'gate', label: 'true' }, { from: 'check', to: 'too-small', label: 'false' },
    { from: 'gate', to: 'shipped', label: 'ship' },
  ],
};

test('run page: run from the designer, answer the gate, every node coloured', async () => {
  await seed('ship-it', shipIt);
  const page = await openPage('#/designer/ship-it');
  const run = page.getByRole('button', { name: 'Save & run' });
  await waitFor(page, 'the canvas to be ready', () => {
    const b = [...document.querySelectorAll('button')].find((x) => x.textContent === 'Save & run');
    return b && !b.disabled;
  });
  await run.click();
  await page.waitForURL(/#\/runs\/[0-9a-f]{12}$/);
  const runId = page.url().split('/').pop();

  await waitFor(page, 'the gate', () => document.querySelector('.title')?.dataset.status === 'awaiting_approval');
  assert.match(await page.locator('#pending').innerText(), /Ship the count\?/);
  assert.equal(await page.locator('#pending button[data-option]').count(), 2);
  // The answer that says no is drawn apart from the one that goes on.
  assert.equal(await page.locator('#pending button[data-option="ship"]').getAttribute('class'), 'primary');
  assert.equal(await page.locator('#pending button[data-option="hold"]').getAttribute('class'), 'decline');
  assert.equal(await page.locator('#retry').count(), 0, 'no retry on a run that has not failed');
  await waitFor(page, 'the canvas to show the gate pending',
    `(${canvasStates})().gate === 'pending' && (${canvasStates})().count === 'done'`);

  await page.locator('#pending button[data-option="ship"]').click();
  await waitFor(page, 'the run to finish', () => document.querySelector('.title')?.dataset.status === 'done');
  assert.equal(await page.locator('#pending').isHidden(), true);
  assert.equal(await page.locator('#steps tr[data-node="gate"]').getAttribute('data-status'), 'done');
  assert.match(await page.locator('#outputs details[data-node="shipped"] pre').first().textContent(), /shipped 7/);

  // The embedded canvas (read-only run mode) colours every node of the plan by its step state.
  const expected = { start: 'done', count: 'done', check: 'done', gate: 'done', shipped: 'done', 'too-small': 'skipped' };
  await waitFor(page, 'the canvas to colour every node',
    `Object.entries(${JSON.stringify(expected)}).every(([id, s]) => (${canvasStates})()[id] === s)`);
  const states = await page.evaluate(canvasStates);
  assert.deepEqual(states, expected, 'every node of the canvas, coloured');
  await waitFor(page, 'every node to be visible in the canvas', `(${canvasShowsEveryNode})()`);

  const answered = await api(server, 'GET', `/runs/${runId}`);
  assert.equal(answered.body.status, 'done');
  assert.deepEqual(answered.body.skipped, ['too-small']);

  mkdirSync(DOCS, { recursive: true });
  await page.screenshot({ path: join(DOCS, 'run.png'), fullPage: true });
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('designs page: new from template opens it in the designer and saves it', async () => {
  const page = await openPage('#/designs');
  const card = page.locator('form[data-template="release-checklist"]');
  await card.waitFor();
  await card.locator('input[name="name"]').fill('from-template');
  await card.getByRole('button', { name: 'New from template' }).click();
  await page.waitForURL(/#\/designer\/from-template$/);
  await waitFor(page, 'the canvas to be ready', () => {
    const b = [...document.querySelectorAll('button')].find((x) => x.textContent === 'Save');
    return b && !b.disabled;
  });
  const graph = await page.frame({ url: /designer\.html\?design=from-template/ }).evaluate(() => window.vwfDesigner.getGraph());
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await waitFor(page, 'the save verdict', () => /Saved from-template/.test(document.querySelector('.notice.ok')?.textContent || ''));
  await page.getByRole('button', { name: 'Validate' }).click();
  await waitFor(page, 'the validation verdict', () => /Valid\./.test(document.querySelector('.notice.ok')?.textContent || ''));

  const saved = await api(server, 'GET', '/designs/from-template');
  assert.equal(saved.body.ok, true);
  assert.deepEqual(saved.body.graph.nodes.map((n) => n.id), graph.nodes.map((n) => n.id));
  saveFixture('dashboard-template', graph);

  await page.goto(`${server.url}/#/designs`);
  await page.locator('#designs tr[data-design="from-template"]').waitFor();
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('schedules page: what is typed while the jobs are still loading is kept', async () => {
  await withServer({}, async (srv) => {
    await seedOn(srv, 'late-form', hello);
    assert.equal((await api(srv, 'POST', '/designs/late-form/schedule', { preset: 'daily', time: '06:00' })).body.ok, true);
    const page = await newPage(browser, { viewport: { width: 1280, height: 900 } });
    // The job list answers only once the form has been filled in, as on a slow connection.
    let release;
    const held = new Promise((resolve) => { release = resolve; });
    await page.route('**/schedules', async (route) => {
      if (route.request().method() === 'GET') await held;
      await route.continue();
    });
    await page.goto(`${srv.url}/#/schedules?design=late-form`);
    const form = page.locator('#schedule-form');
    await form.waitFor();
    await form.locator('select[name="preset"]').selectOption('weekdays');
    const time = form.locator('input[name="time"]');
    await time.fill('07:45');
    release();
    await waitFor(page, 'the job listed', () => document.querySelector('tr[data-job="wf-late-form"]'));
    assert.equal(await form.locator('select[name="preset"]').inputValue(), 'weekdays', 'the job did not replace what was typed');
    assert.equal(await time.inputValue(), '07:45');
    await waitFor(page, 'the preview of what was typed', () => document.querySelector('#preview.ok')?.textContent.includes('Weekdays at 07:45'));
    await page.close();
  });
});

test('schedules page: weekdays 09:00 previewed while typing, saved, paused, resumed, run now, removed', async () => {
  await seed('daily-report', {
    nodes: [
      { id: 'start', type: 'trigger', mode: 'manual' },
      { id: 'report', type: 'command', run: 'echo report' },
      { id: 'out', type: 'output' },
    ],
    edges: [{ from: 'start', to: 'report' }, { from: 'report', to: 'out' }],
  });
  const page = await openPage('#/schedules?design=daily-report');
  const form = page.locator('#schedule-form');
  await form.waitFor();
  await form.locator('select[name="design"]').selectOption('daily-report');
  await form.locator('select[name="preset"]').selectOption('weekdays');
  const time = form.locator('input[name="time"]');
  await time.fill('');
  await time.pressSequentially('25:0');
  await waitFor(page, 'the server to refuse 25:0', () => document.querySelector('#preview.error')?.textContent.includes('time'));
  await time.fill('');
  await time.pressSequentially('09:00', { delay: 20 });
  await waitFor(page, 'the live preview', () => document.querySelector('#preview.ok')?.textContent.includes('Weekdays at 09:00'));
  assert.match(await page.locator('#preview').textContent(), /0 9 \* \* 1-5/);

  await form.getByRole('button', { name: 'Save schedule' }).click();
  const row = page.locator('tr[data-job="wf-daily-report"]');
  await waitFor(page, 'the job row', () => document.querySelector('tr[data-job="wf-daily-report"] .human')?.textContent === 'Weekdays at 09:00');
  assert.equal(await row.getAttribute('data-state'), 'active');

  await row.locator('button[data-action="pause"]').click();
  await waitFor(page, 'paused', () => document.querySelector('tr[data-job="wf-daily-report"]')?.dataset.state === 'paused');
  assert.equal((await api(server, 'GET', '/schedules')).body.schedules[0].paused, true);
  await page.locator('tr[data-job="wf-daily-report"] button[data-action="resume"]').click();
  await waitFor(page, 'resumed', () => document.querySelector('tr[data-job="wf-daily-report"]')?.dataset.state === 'active');
  const job = (await api(server, 'GET', '/schedules')).body.schedules[0];
  assert.equal(job.paused, false);
  assert.equal(job.human, 'Weekdays at 09:00');
  assert.ok(job.next_run_at);

  mkdirSync(DOCS, { recursive: true });
  await page.screenshot({ path: join(DOCS, 'schedules.png'), fullPage: true });

  // Run now starts the design and links its run; remove asks once more, then removes.
  await page.locator('tr[data-job="wf-daily-report"] button[data-action="run"]').click();
  const link = page.locator('.notice.ok a[href^="#/runs/"]');
  await link.waitFor();
  const ran = (await api(server, 'GET', `/runs/${(await link.textContent()).trim()}`)).body;
  assert.equal(ran.design, 'daily-report');
  assert.equal(ran.trigger.mode, 'schedule');
  const remove = page.locator('tr[data-job="wf-daily-report"] button.danger');
  await remove.click();
  assert.equal(await remove.textContent(), 'Confirm remove');
  assert.equal((await api(server, 'GET', '/schedules')).body.schedules.length, 1, 'one click removes nothing');
  await remove.click();
  await page.locator('tr[data-job="wf-daily-report"]').waitFor({ state: 'detached' });
  assert.deepEqual((await api(server, 'GET', '/schedules')).body.schedules, []);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('runs list: newest first; retry only on failed runs, and it works', async () => {
  // A condition whose comparison fails (text against a number), and a command that fails until
  // a file exists.
  await seed('bad-compare', {
    nodes: [
      { id: 'start', type: 'trigger', mode: 'manual' },
      { id: 'count', type: 'command', run: 'echo abc' },
      { id: 'check', type: 'condition', expr: 'out.count.text > 5' },
      { id: 'big', type: 'output' },
    ],
    edges: [{ from: 'start', to: 'count' }, { from: 'count', to: 'check' }, { from: 'check', to: 'big', label: 'true' }],
  });
  const dir = mkdtempSync(join(tmpdir(), 'vwf-dash-'));
  const flag = join(dir, 'count.txt');
  await seed('needs-file', {
    nodes: [
      { id: 'start', type: 'trigger', mode: 'manual' },
      { id: 'read', type: 'command', argv: ['cat', flag] },
      { id: 'check', type: 'condition', expr: 'out.read.text > 5' },
      { id: 'big', type: 'output' },
    ],
    edges: [{ from: 'start', to: 'read' }, { from: 'read', to: 'check' }, { from: 'check', to: 'big', label: 'true' }],
  });
  const failed = (await api(server, 'POST', '/designs/bad-compare/run', {})).body;
  assert.equal(failed.status, 'failed');
  assert.equal(failed.failed_node, 'check');
  const done = (await api(server, 'POST', '/designs/daily-report/run', {})).body;
  assert.equal(done.status, 'done');
  const missing = (await api(server, 'POST', '/designs/needs-file/run', {})).body;
  assert.equal(missing.status, 'failed');
  assert.equal(missing.failed_node, 'read');

  const page = await openPage('#/runs');
  await page.locator(`#runs tr[data-run="${missing.run_id}"]`).waitFor();
  const order = await page.locator('#runs tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.run));
  const mine = order.filter((id) => [failed.run_id, done.run_id, missing.run_id].includes(id));
  assert.deepEqual(mine, [missing.run_id, done.run_id, failed.run_id], 'newest first');
  const listed = (await api(server, 'GET', '/runs?limit=50')).body.runs.map((r) => r.run_id);
  assert.deepEqual(order, listed, 'the list is the server\'s order');
  assert.equal(await page.locator(`#runs tr[data-run="${failed.run_id}"]`).getAttribute('data-status'), 'failed');

  // A finished run has no retry button.
  await page.locator(`#runs tr[data-run="${done.run_id}"] a[href^="#/runs/"]`).click();
  await waitFor(page, 'the done run', () => document.querySelector('.title')?.dataset.status === 'done');
  assert.equal(await page.locator('#retry').count(), 0);

  // The failed comparison: retry re-runs the condition, which fails the same way (its input is done).
  await page.goto(`${server.url}/#/runs/${failed.run_id}`);
  await waitFor(page, 'the failed run', () => document.querySelector('.title')?.dataset.status === 'failed');
  assert.match(await page.locator('#run-error').textContent(), /cannot compare/);
  const before = (await api(server, 'GET', `/runs/${failed.run_id}`)).body.updated_at;
  await page.locator('#retry').click();
  await waitFor(page, 'the retry verdict', () => /Retried: the run is now failed/.test(document.querySelector('#notice.error')?.textContent || ''));
  const after = (await api(server, 'GET', `/runs/${failed.run_id}`)).body;
  assert.equal(after.status, 'failed');
  assert.notEqual(after.updated_at, before, 'the retry reached the server');

  // The failed command: once its file exists, retry finishes the run.
  await page.goto(`${server.url}/#/runs/${missing.run_id}`);
  await waitFor(page, 'the failed run', () => document.querySelector('.title')?.dataset.status === 'failed');
  writeFileSync(flag, '9\n');
  await page.locator('#retry').click();
  await waitFor(page, 'the retried run to finish', () => document.querySelector('.title')?.dataset.status === 'done');
  assert.equal(await page.locator('#retry').count(), 0);
  // The failed attempt is not erased: two attempts, the first one failed with its error.
  assert.equal(await page.locator('#steps tr[data-node="read"] td').nth(2).textContent(), '2');
  const tries = page.locator('#steps tr[data-tries-of="read"] li');
  assert.deepEqual(await tries.evaluateAll((items) => items.map((li) => [li.dataset.attempt, li.dataset.status])), [['1', 'failed'], ['2', 'done']]);
  assert.match(await tries.nth(0).locator('.error').textContent(), /No such file/);
  assert.match(await tries.nth(1).textContent(), /2 bytes of output/);
  const read = (await api(server, 'GET', `/runs/${missing.run_id}`)).body;
  assert.equal(read.status, 'done');
  const record = read.steps.find((s) => s.node === 'read');
  assert.equal(record.attempts, 2);
  assert.deepEqual(record.tries.map((t) => [t.attempt, t.status, t.output_bytes]), [[1, 'failed', null], [2, 'done', 2]]);
  assert.match(record.tries[0].error, /No such file/);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('run page: what each step received beside its output, and retry from the start with the saved design', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'vwf-dash-'));
  const note = join(dir, 'note.txt');
  const reads = (tag) => ({
    nodes: [
      { id: 'start', type: 'trigger', mode: 'manual' },
      { id: 'read', type: 'command', argv: ['cat', note], env: { API_TOKEN: 'not-for-your-eyes-42' } },
      { id: 'say', type: 'output', template: `${tag} {{nodes.read}}` },
    ],
    edges: [{ from: 'start', to: 'read' }, { from: 'read', to: 'say' }],
  });
  await seed('reads-note', reads('v1'));
  const failed = (await api(server, 'POST', '/designs/reads-note/run', {})).body;
  assert.equal(failed.failed_node, 'read');
  await seed('reads-note', reads('v2'));
  writeFileSync(note, 'hello');

  const page = await openPage(`#/runs/${failed.run_id}`);
  await waitFor(page, 'the failed run', () => document.querySelector('.title')?.dataset.status === 'failed');
  // The failed step shows what it received, the env entry as ***.
  const received = page.locator('#outputs [data-inputs-of="read"] pre');
  await page.locator('#outputs details[data-node="read"] summary').click();
  const shown = JSON.parse(await received.textContent());
  assert.deepEqual(shown, { argv: ['cat', note], cwd: null, env: { API_TOKEN: '***' } });
  assert.ok(!(await page.content()).includes('not-for-your-eyes-42'), 'the secret is on the page');

  await page.locator('#retry-start').click();
  await page.waitForURL((url) => !url.hash.endsWith(failed.run_id) && /#\/runs\/[0-9a-f]{12}$/.test(url.hash));
  const freshId = page.url().split('/').pop();
  await waitFor(page, 'the new run to finish', () => document.querySelector('.title')?.dataset.status === 'done');
  assert.equal(await page.locator('#retry-of').textContent(), failed.run_id);
  await page.locator('#outputs details[data-node="say"] summary').click();
  assert.match(await page.locator('#outputs details[data-node="say"] .output pre').textContent(), /^v2 hello$/);
  const fresh = (await api(server, 'GET', `/runs/${freshId}`)).body;
  assert.equal(fresh.retry_of, failed.run_id);
  assert.equal(fresh.outputs.say.text, 'v2 hello', 'a retry from the start runs the design as saved now');
  const old = (await api(server, 'GET', `/runs/${failed.run_id}`)).body;
  assert.equal(old.status, 'failed', 'the old run is left as it was');

  // The old run retried from its failed step keeps the design it started with, and both attempts.
  await page.locator('#retry-of').click();
  await waitFor(page, 'the old run', () => document.querySelector('.title')?.dataset.status === 'failed');
  await page.locator('#retry').click();
  await waitFor(page, 'the retried run to finish', () => document.querySelector('.title')?.dataset.status === 'done');
  const tries = page.locator('#steps tr[data-tries-of="read"] li');
  assert.deepEqual(await tries.evaluateAll((items) => items.map((li) => li.dataset.status)), ['failed', 'done']);
  assert.equal((await api(server, 'GET', `/runs/${failed.run_id}`)).body.outputs.say.text, 'v1 hello');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('run page: a gate that timed out and escalated says so', async () => {
  // The server's clock is pinned: the run parks at 09:00, the server restarted at 12:00 finds
  // the 60-minute gate timed out when the page reads the run.
  const home = freshHome();
  let other = await startServer(home, { VWF_NOW: '2026-11-29T09:00:00Z' });
  let runId;
  try {
    const gated = {
      nodes: [
        { id: 'start', type: 'trigger', mode: 'manual' },
        { id: 'gate', type: 'approval', question: 'Ship it?', options: ['ship', 'hold'], timeout_minutes: 60, on_timeout: 'escalate' },
        { id: 'out', type: 'output' },
      ],
      edges: [{ from: 'start', to: 'gate' }, { from: 'gate', to: 'out', label: 'ship' }],
    };
    assert.equal((await api(other, 'POST', '/designs/gated', { graph: gated })).body.ok, true);
    const parked = (await api(other, 'POST', '/designs/gated/run', {})).body;
    assert.equal(parked.status, 'awaiting_approval');
    runId = parked.run_id;
  } finally {
    await other.stop();
  }
  other = await startServer(home, { VWF_NOW: '2026-11-29T12:00:00Z' });
  try {
    const page = await openUrl(browser, `${other.url}/#/runs/${runId}`, { viewport: { width: 1280, height: 900 } });
    await waitFor(page, 'the failed run', () => document.querySelector('.title')?.dataset.status === 'failed');
    assert.match(await page.locator('#run-error').textContent(), /gate: approval timed out; escalation requested/);
    assert.match(await page.locator('#steps tr[data-node="gate"] td.error').textContent(), /escalation requested/);
    assert.equal(await page.locator('#retry').count(), 1);
    assert.deepEqual(page.problems, []);
    await page.close();
  } finally {
    await other.stop();
  }
});

/** A design whose agent step parks for a person (or a backend) to answer. */
const askAgent = {
  nodes: [
    { id: 'start', type: 'trigger', mode: 'manual' },
    { id: 'draft', type: 'agent', prompt: 'Say hello to {{trigger.who}}' },
    { id: 'out', type: 'output' },
  ],
  edges: [{ from: 'start', to: 'draft' }, { from: 'draft', to: 'out' }],
};

test('run page: an agent step takes pasted output; Generate only with a backend', async () => {
  // No backend configured: the prompt and a textarea, no Generate button.
  await seed('ask-agent', askAgent);
  const parked = (await api(server, 'POST', '/designs/ask-agent/run', { input: { who: 'Ada' } })).body;
  assert.equal(parked.status, 'awaiting_agent');
  const page = await openPage(`#/runs/${parked.run_id}`);
  await page.locator('#pending textarea[name="output"]').waitFor();
  assert.match(await page.locator('#pending pre').textContent(), /Say hello to Ada/);
  assert.equal(await page.getByRole('button', { name: 'Generate' }).count(), 0, 'no backend, no Generate');
  await page.locator('#pending textarea[name="output"]').fill('Hello, Ada!');
  await page.getByRole('button', { name: 'Submit output' }).click();
  await waitFor(page, 'the run to finish', () => document.querySelector('.title')?.dataset.status === 'done');
  assert.match(await page.locator('#outputs details[data-node="out"] pre').first().textContent(), /Hello, Ada!/);
  await page.close();

  // An OpenAI-compatible backend (a local server speaking its wire format): Generate appears and works.
  const asked = [];
  const backend = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'GET' && req.url === '/v1/models') return res.end(JSON.stringify({ data: [{ id: 'tiny' }] }));
      if (req.method === 'POST' && req.url === '/v1/chat/completions') {
        asked.push(JSON.parse(body));
        return res.end(JSON.stringify({
          choices: [{ message: { content: 'Generated hello.' } }],
          usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 },
        }));
      }
      res.statusCode = 404;
      res.end('{}');
    });
  });
  await new Promise((r) => backend.listen(0, '127.0.0.1', r));
  // A run parked while no backend was configured; the server restarts with one.
  const home = freshHome();
  let other = await startServer(home);
  assert.equal((await api(other, 'POST', '/designs/ask-agent', { graph: askAgent })).body.ok, true);
  const run = (await api(other, 'POST', '/designs/ask-agent/run', { input: { who: 'Bob' } })).body;
  assert.equal(run.status, 'awaiting_agent');
  await other.stop();
  writeFileSync(join(home, 'visual-workflow.toml'),
    `[agent]\nbackend = "openai"\nbase_url = "http://127.0.0.1:${backend.address().port}/v1"\ndefault_model = "tiny"\n`);
  other = await startServer(home);
  try {
    const p2 = await newPage(browser);
    await p2.goto(`${other.url}/#/runs/${run.run_id}`);
    const generate = p2.getByRole('button', { name: 'Generate' });
    await generate.waitFor();
    await generate.click();
    await waitFor(p2, 'the generated run to finish', () => document.querySelector('.title')?.dataset.status === 'done');
    assert.match(await p2.locator('#outputs details[data-node="out"] pre').first().textContent(), /Generated hello\./);
    await p2.close();
    assert.ok(asked.length >= 1);
  } finally {
    await other.stop();
    backend.close();
  }
});

test('designs page: a new design never replaces a saved one, blank or from any template', async () => {
  await seed('keep-me', shipIt);
  const kept = (await api(server, 'GET', '/designs/keep-me')).body.graph;
  const page = await openPage('#/designs');
  await page.locator('#designs tr[data-design="keep-me"]').waitFor();
  const refused = async (submit) => {
    const answer = page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/designs/keep-me'));
    await submit();
    assert.equal((await answer).status(), 409);
    await waitFor(page, 'the refusal', () => /Not created: design "keep-me" already exists/.test(document.querySelector('.notice.error')?.textContent || ''));
    assert.match(page.url(), /#\/designs$/);
    assert.deepEqual((await api(server, 'GET', '/designs/keep-me')).body.graph, kept, 'the saved design is unchanged');
  };

  await page.locator('input[name="blank-name"]').fill('keep-me');
  await refused(() => page.getByRole('button', { name: 'New blank design' }).click());
  const cards = page.locator('form[data-template]');
  const count = await cards.count();
  assert.ok(count >= 4, `${count} templates`);
  for (let i = 0; i < count; i++) {
    await cards.nth(i).locator('input[name="name"]').fill('keep-me');
    await refused(() => cards.nth(i).getByRole('button', { name: 'New from template' }).click());
  }

  // The refusal leads to the design that has the name; a free name is created as before.
  await page.locator('.notice.error a[href="#/designer/keep-me"]').click();
  await page.waitForURL(/#\/designer\/keep-me$/);
  await page.goto(`${server.url}/#/designs`);
  await page.locator('input[name="blank-name"]').fill('brand-new');
  await page.getByRole('button', { name: 'New blank design' }).click();
  await page.waitForURL(/#\/designer\/brand-new$/);
  assert.equal((await api(server, 'GET', '/designs/brand-new')).body.ok, true);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('designer: unsaved edits are guarded when leaving for another page or closing the tab', async () => {
  await seed('guarded', shipIt);
  const page = await openPage('#/designer/guarded');
  const ready = () => waitFor(page, 'the canvas to be ready', () => {
    const b = [...document.querySelectorAll('button')].find((x) => x.textContent === 'Save');
    return b && !b.disabled;
  });
  await ready();
  // The canvas of the page on screen (each visit embeds a fresh one).
  const canvas = () => page.frame({ url: /designer\.html\?design=guarded/ });
  const edit = async (id) => {
    await canvas().getByTestId('palette-note').dragTo(canvas().getByTestId('canvas'), { targetPosition: { x: 200, y: 380 } });
    await canvas().getByTestId(`node-${id}`).waitFor();
    await waitFor(page, 'the edit to count as unsaved', () => document.getElementById('design-state')?.textContent === 'unsaved changes');
  };
  const dialogs = [];
  /** Answers the next question the page asks; rejects when none comes within 15 s. */
  const answerNext = (accept) => new Promise((resolve, reject) => {
    const none = setTimeout(() => reject(new Error('the page asked nothing')), 15000);
    page.once('dialog', async (d) => {
      clearTimeout(none);
      dialogs.push([d.type(), d.message()]);
      await (accept ? d.accept() : d.dismiss());
      resolve();
    });
  });
  // Nothing edited: another page opens without a question.
  await page.locator('nav a[data-section="runs"]').click();
  await page.waitForURL(/#\/runs$/);
  await page.goBack();
  await page.waitForURL(/#\/designer\/guarded$/);
  await ready();
  assert.deepEqual(dialogs, []);

  // Another dashboard page: the dashboard asks; staying keeps the canvas and the edit.
  await edit('note1');
  let asked = answerNext(false);
  await page.locator('nav a[data-section="runs"]').click();
  await asked;
  assert.deepEqual(dialogs, [['confirm', 'guarded has unsaved changes. Leave without saving them?']]);
  // The page puts its address back once the question is answered (after the dialog closes).
  await page.waitForURL(/#\/designer\/guarded$/);
  assert.equal(await page.locator('#design-state').textContent(), 'unsaved changes');
  assert.ok((await canvas().evaluate(() => window.vwfDesigner.getGraph())).nodes.some((n) => n.id === 'note1'), 'the edit is still on the canvas');

  // Leaving the dashboard (closing the tab, reloading, another address: the same beforeunload
  // event; headless Chromium shows its dialog for a navigation): the browser asks; staying
  // keeps the page and the edit.
  asked = answerNext(false);
  await assert.rejects(page.goto(`${server.url}/designer.html`), /ERR_ABORTED/);
  await asked;
  assert.equal(dialogs[1][0], 'beforeunload');
  assert.match(page.url(), /#\/designer\/guarded$/);
  assert.equal(await page.locator('#design-state').textContent(), 'unsaved changes');

  // Leaving anyway loses the edit, as asked.
  asked = answerNext(true);
  await page.locator('nav a[data-section="schedules"]').click();
  await asked;
  await page.waitForURL(/#\/schedules$/);
  assert.equal(dialogs[2][0], 'confirm');
  assert.equal((await api(server, 'GET', '/designs/guarded')).body.graph.nodes.some((n) => n.id === 'note1'), false);

  // Saved edits: leaving and closing ask nothing.
  await page.goto(`${server.url}/#/designer/guarded`);
  await ready();
  await edit('note1');
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await waitFor(page, 'saved', () => document.getElementById('design-state')?.textContent === 'saved');
  await page.locator('nav a[data-section="runs"]').click();
  await page.waitForURL(/#\/runs$/);
  await page.goBack();
  await ready();
  await page.goto(`${server.url}/designer.html`);
  assert.equal(dialogs.length, 3, JSON.stringify(dialogs));
  assert.deepEqual(page.problems, []);
  await page.close();
});

// ---- finding runs again, deleting designs, schedules in their zone, no console errors ----

/** A page of `srv` at `hash` that records page errors and console errors in `page.problems`. */
async function watchedPage(srv, hash, options = {}) {
  const page = await newPage(browser, { viewport: { width: 1280, height: 900 }, ...options });
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error: ${m.text()} at ${m.location().url}`); });
  page.problems = problems;
  await page.goto(`${srv.url}/${hash}`);
  return page;
}

const hello = {
  nodes: [{ id: 'start', type: 'trigger', mode: 'manual' }, { id: 'o', type: 'output', template: 'hello' }],
  edges: [{ from: 'start', to: 'o' }],
};
const breaks = {
  nodes: [{ id: 'start', type: 'trigger', mode: 'manual' }, { id: 'fail', type: 'command', run: 'exit 3' }],
  edges: [{ from: 'start', to: 'fail' }],
};

/** Runs `fn` against a server of its own (a fresh home, `env` added), stopped afterwards. */
async function withServer(env, fn) {
  const srv = await startServer(freshHome(), env);
  try {
    await fn(srv);
  } finally {
    await srv.stop();
  }
}

/** Saves `graph` as design `name` on `srv`. */
async function seedOn(srv, name, graph) {
  assert.equal((await api(srv, 'POST', `/designs/${name}`, { graph })).body.ok, true, name);
}

/** The run ids the runs table shows, in order. */
const shownRuns = (page) => page.locator('#runs tbody tr[data-run]').evaluateAll((rows) => rows.map((r) => r.dataset.run));

test('runs page: filters by design, status and trigger, searches by id, pages with the cursor; a design lists its runs', async () => {
  await withServer({}, async (srv) => {
    await seedOn(srv, 'alpha', hello);
    // A design name with capitals: filters pass names as they are.
    await seedOn(srv, 'Broken', breaks);
    const made = [];
    for (let i = 0; i < 56; i++) {
      const name = i % 2 ? 'Broken' : 'alpha';
      made.unshift((await api(srv, 'POST', `/designs/${name}/run`, {})).body.run_id);
    }
    assert.equal((await api(srv, 'POST', '/designs/alpha/schedule', { preset: 'daily', time: '09:00' })).body.ok, true);
    const scheduled = (await api(srv, 'POST', '/schedules/wf-alpha/run')).body.run_id;
    made.unshift(scheduled);

    // The newest 50, then the rest through the cursor, then back to the newest.
    const page = await watchedPage(srv, '#/runs');
    await waitFor(page, 'the first page', () => document.querySelectorAll('#runs tbody tr[data-run]').length === 50);
    assert.deepEqual(await shownRuns(page), made.slice(0, 50));
    assert.equal((await page.locator('#runs-pager').innerText()).trim(), 'Older »', 'the pager shows its buttons and nothing else');
    await page.locator('#runs-pager button[data-page="older"]').click();
    await waitFor(page, 'the second page', () => document.querySelectorAll('#runs tbody tr[data-run]').length === 7);
    assert.deepEqual(await shownRuns(page), made.slice(50));
    assert.match(page.url(), /before=[0-9a-f]{12}/);
    assert.equal(await page.locator('#runs-pager button[data-page="older"]').count(), 0, 'no older page after the oldest');
    assert.equal((await page.locator('#runs-pager').innerText()).trim(), '« Newest', 'no "null" where a button is not');
    await page.locator('#runs-pager button[data-page="newest"]').click();
    await waitFor(page, 'the newest page again', () => document.querySelectorAll('#runs tbody tr[data-run]').length === 50);

    // Filters: picking one lists only its runs and puts it in the address.
    await page.locator('#run-filters select[name="status"]').selectOption('failed');
    await waitFor(page, 'only failed runs', () => location.hash.includes('status=failed')
      && document.querySelectorAll('#runs tbody tr[data-run]').length === 28
      && [...document.querySelectorAll('#runs tbody tr[data-run]')].every((r) => r.dataset.status === 'failed'));
    await page.locator('#run-filters select[name="design"]').selectOption('Broken');
    await waitFor(page, 'failed runs of Broken', () => location.hash.includes('design=Broken') && document.querySelectorAll('#runs tbody tr[data-run]').length === 28);
    mkdirSync(DOCS, { recursive: true });
    await page.screenshot({ path: join(DOCS, 'runs-filtered.png'), fullPage: false });
    await page.locator('#run-filters select[name="design"]').selectOption('alpha');
    await waitFor(page, 'no failed run of alpha', () => location.hash.includes('design=alpha') && /No matching runs/.test(document.querySelector('#runs tbody')?.textContent || ''));
    await page.locator('#run-filters select[name="status"]').selectOption('');
    await page.locator('#run-filters select[name="trigger"]').selectOption('schedule');
    await waitFor(page, 'the scheduled run', () => location.hash.includes('trigger=schedule') && !location.hash.includes('status=')
      && document.querySelectorAll('#runs tbody tr[data-run]').length === 1);
    assert.deepEqual(await shownRuns(page), [scheduled]);
    assert.equal(await page.locator('#runs tbody td.trigger').textContent(), 'schedule');

    // Search by run id (its start), from a cleared filter.
    await page.getByRole('link', { name: 'Clear' }).click();
    await waitFor(page, 'the cleared list', () => location.hash === '#/runs' && document.querySelectorAll('#runs tbody tr[data-run]').length === 50);
    const target = made[40];
    await page.locator('#run-filters input[name="id"]').fill(target.slice(0, 8));
    await page.locator('#run-filters').getByRole('button', { name: 'Search' }).click();
    await waitFor(page, 'the run searched for', (id) => document.querySelector('#runs tbody tr[data-run]')?.dataset.run === id, target);
    assert.deepEqual(await shownRuns(page), made.filter((id) => id.startsWith(target.slice(0, 8))));
    await page.locator('#run-filters input[name="id"]').fill('XYZ!');
    await page.locator('#run-filters').getByRole('button', { name: 'Search' }).click();
    await waitFor(page, 'the refusal', () => /Cannot list runs: id/.test(document.querySelector('#runs-note')?.textContent || ''));
    page.problems.splice(0); // the refused search's 400 is the answer the page shows
    await page.close();

    // A design's page lists its most recent runs, with the way to all of them.
    const designer = await watchedPage(srv, '#/designer/alpha');
    await waitFor(designer, 'recent runs', () => document.querySelectorAll('#recent-runs tbody tr[data-run]').length === 10);
    const recent = await designer.locator('#recent-runs tbody tr[data-run]').evaluateAll((rows) => rows.map((r) => r.dataset.run));
    const alphaRuns = (await api(srv, 'GET', '/runs?design=alpha&limit=10')).body.runs.map((r) => r.run_id);
    assert.deepEqual(recent, alphaRuns);
    assert.equal(await designer.locator('#recent-runs a[href="#/runs?design=alpha"]').count(), 1);
    assert.deepEqual(designer.problems, []);
    await designer.close();
  });
});

test('designs page: an imported design with an automatic trigger arrives disabled; the toggle enables and disables it', async () => {
  await withServer({}, async (srv) => {
    const doc = { workflows: { hook: { trigger: { type: 'event', sources: ['ping'] }, activities: [{ name: 'say', type: 'output' }] } } };
    assert.equal((await api(srv, 'POST', '/import', { document: doc })).body.designs[0].enabled, false);
    const page = await watchedPage(srv, '#/designs');
    const toggle = page.locator('tr[data-design="hook"] button[data-action="toggle-enabled"]');
    await toggle.waitFor();
    assert.equal(await toggle.getAttribute('data-enabled'), 'false');
    assert.equal(await toggle.textContent(), 'Enable trigger');
    await toggle.click();
    await waitFor(page, 'the design enabled', () => document.querySelector('tr[data-design="hook"] button[data-action="toggle-enabled"]')?.dataset.enabled === 'true');
    assert.equal(await toggle.textContent(), 'Disable trigger');
    assert.deepEqual((await api(srv, 'GET', '/designs')).body.disabled, []);
    await toggle.click();
    await waitFor(page, 'the design disabled', () => document.querySelector('tr[data-design="hook"] button[data-action="toggle-enabled"]')?.dataset.enabled === 'false');
    assert.deepEqual((await api(srv, 'GET', '/designs')).body.disabled, ['hook']);
    assert.deepEqual(page.problems, []);
    await page.close();
  });
});

test('designs page: delete asks first; its runs stay readable and its schedule is paused, saying why', async () => {
  await withServer({}, async (srv) => {
    await seedOn(srv, 'doomed', hello);
    const run = (await api(srv, 'POST', '/designs/doomed/run', {})).body;
    assert.equal((await api(srv, 'POST', '/designs/doomed/schedule', { preset: 'daily', time: '7:30', tz: 'Europe/Berlin' })).body.ok, true);
    const page = await watchedPage(srv, '#/designs');
    const remove = page.locator('tr[data-design="doomed"] button[data-action="delete"]');
    await remove.click();
    assert.equal(await remove.textContent(), 'Confirm delete doomed');
    assert.deepEqual((await api(srv, 'GET', '/designs')).body.designs, ['doomed'], 'one click deletes nothing');
    await remove.click();
    await page.locator('tr[data-design="doomed"]').waitFor({ state: 'detached' });
    assert.match(await page.locator('.notice.ok').textContent(), /Deleted doomed\. Its runs stay readable.*Its schedule is paused \(its design "doomed" was deleted\)/);
    assert.deepEqual((await api(srv, 'GET', '/designs')).body.designs, []);

    await page.locator('.notice.ok a[href="#/runs?design=doomed"]').click();
    await waitFor(page, 'its runs', (id) => document.querySelector('#runs tbody tr[data-run]')?.dataset.run === id, run.run_id);
    await page.locator(`#runs tr[data-run="${run.run_id}"] a[href^="#/runs/"]`).click();
    await waitFor(page, 'the run, readable', () => document.querySelector('.title')?.dataset.status === 'done');

    await page.goto(`${srv.url}/#/schedules`);
    await waitFor(page, 'the paused job', () => document.querySelector('tr[data-job="wf-doomed"]')?.dataset.state === 'paused');
    assert.match(await page.locator('tr[data-job="wf-doomed"] .reason').textContent(), /its design "doomed" was deleted/);
    assert.deepEqual(page.problems, []);
    await page.close();
  });
});

test('schedules page: 7:30 is taken, the run input is kept, fires show on the job\'s clock and the viewer\'s', async () => {
  await withServer({ VWF_NOW: '2026-06-01T04:00:00Z' }, async (srv) => {
    await seedOn(srv, 'greet', hello);
    // The viewer is in New York; the job runs on Berlin's clock.
    const page = await watchedPage(srv, '#/schedules?design=greet', { timezoneId: 'America/New_York' });
    const form = page.locator('#schedule-form');
    await form.waitFor();
    await form.locator('select[name="preset"]').selectOption('daily');
    await form.locator('input[name="time"]').fill('7:30');
    await form.locator('input[name="tz"]').fill('Europe/Berlin');
    await waitFor(page, 'the preview of 7:30', () => document.querySelector('#preview.ok')?.textContent.includes('Daily at 07:30'));
    await form.locator('textarea[name="input"]').fill('{"who": "Ada"}');
    await form.getByRole('button', { name: 'Save schedule' }).click();
    await waitFor(page, 'the job row', () => document.querySelector('tr[data-job="wf-greet"] .human')?.textContent === 'Daily at 07:30');
    const job = (await api(srv, 'GET', '/schedules')).body.schedules[0];
    assert.deepEqual(job.input, { who: 'Ada' });
    assert.equal(job.next_run_at, '2026-06-01T05:30:00.000Z');
    const next = await page.locator('tr[data-job="wf-greet"] td.next').textContent();
    assert.match(next, /7:30/, `Berlin's clock: ${next}`);
    assert.match(next, /GMT\+2|CEST/, next);
    assert.match(next, /yours: .*1:30.*(EDT|GMT-4)/, `the viewer's clock: ${next}`);
    // Editing the job shows its input again.
    await page.locator('tr[data-job="wf-greet"] button[data-action="edit"]').click();
    assert.deepEqual(JSON.parse(await form.locator('textarea[name="input"]').inputValue()), { who: 'Ada' });
    assert.deepEqual(page.problems, []);
    await page.close();

    // A viewer on the job's own clock sees it once.
    const berlin = await watchedPage(srv, '#/schedules', { timezoneId: 'Europe/Berlin' });
    await berlin.locator('tr[data-job="wf-greet"] td.next .zoned').waitFor();
    assert.equal(await berlin.locator('tr[data-job="wf-greet"] td.next .viewer').count(), 0);
    await berlin.close();
  });
});

test('every page loads without a console error: no backend, a parked agent step, a finished run; a favicon', async () => {
  await withServer({}, async (srv) => {
    await seedOn(srv, 'ask', askAgent);
    await seedOn(srv, 'hello', hello);
    const parked = (await api(srv, 'POST', '/designs/ask/run', { input: { who: 'Ada' } })).body;
    assert.equal(parked.status, 'awaiting_agent');
    const done = (await api(srv, 'POST', '/designs/hello/run', {})).body;
    assert.equal((await api(srv, 'POST', '/designs/hello/schedule', { preset: 'weekdays', time: '09:00' })).body.ok, true);
    const pages = [
      ['#/designs', () => document.querySelector('#designs tr[data-design]')],
      ['#/designer/ask', () => [...document.querySelectorAll('button')].some((b) => b.textContent === 'Save & run' && !b.disabled)],
      ['#/runs', () => document.querySelector('#runs tbody tr[data-run]')],
      ['#/runs?status=done&trigger=manual', () => document.querySelector('#runs tbody tr[data-run]')],
      [`#/runs/${parked.run_id}`, () => document.querySelector('#pending textarea[name="output"]')],
      [`#/runs/${done.run_id}`, () => document.querySelector('iframe.canvas')?.contentDocument?.querySelector('[data-testid="state-start"]')],
      ['#/schedules', () => document.querySelector('tr[data-job="wf-hello"]')],
      ['#/overview', () => document.querySelector('.stats[aria-busy="false"] svg.chart')],
      ['designer.html', () => !!window.vwfDesigner],
      ['designer.html?design=ask', () => !!window.vwfDesigner && document.querySelector('[data-testid="node-draft"]')],
    ];
    for (const [where, ready] of pages) {
      const page = await watchedPage(srv, where);
      await waitFor(page, where, ready);
      // A page following a parked run holds a read on the server and is never idle: it has
      // loaded once the server holds that read.
      if (where === '#/runs' || where === `#/runs/${parked.run_id}`) await untilHeld(srv, 1);
      else await page.waitForLoadState('networkidle');
      assert.deepEqual(page.problems, [], where);
      if (where === '#/designs') {
        const icon = await page.evaluate(async () => {
          const r = await fetch(document.querySelector('link[rel="icon"]').href);
          return [r.status, r.headers.get('content-type')];
        });
        assert.deepEqual(icon, [200, 'image/svg+xml']);
      }
      if (where === `#/runs/${done.run_id}`) {
        const label = await page.evaluate(() => document.querySelector('iframe.canvas').contentDocument.querySelector('[data-testid="state-start"]').textContent);
        assert.equal(label, 'done', 'a finished run shows its trigger done, not started');
      }
      if (where === `#/runs/${parked.run_id}`) {
        await waitFor(page, 'the trigger label', () => document.querySelector('iframe.canvas')?.contentDocument?.querySelector('[data-testid="state-start"]'));
        const label = await page.evaluate(() => document.querySelector('iframe.canvas').contentDocument.querySelector('[data-testid="state-start"]').textContent);
        assert.equal(label, 'started', 'a run still in progress shows its trigger started');
      }
      await page.close();
    }
  });
});

test('steps that fail well: an error path drawn from the error port in red, and a run done with its failure handled', async () => {
  const manual = { id: 'start', type: 'trigger', mode: 'manual' };
  await seed('fails-well', {
    nodes: [manual, { id: 'build', type: 'command', run: 'exit 3' }, { id: 'ship', type: 'command', run: 'echo shipped' },
      { id: 'alert', type: 'output', template: 'build failed' }],
    edges: [{ from: 'start', to: 'build' }, { from: 'build', to: 'ship' }],
  });
  // The canvas: acting steps have an error port; a drag from it draws an `error` edge, in red.
  const canvas = await openDesigner(browser, `${server.url}/designer.html?design=fails-well`, { width: 1440, height: 900 });
  // The design arrives after the canvas is up: its nodes are drawn with their ports.
  await canvas.getByTestId('node-alert').waitFor();
  assert.equal(await canvas.getByTestId('port-error-build').count(), 1, 'a command can fail');
  assert.equal(await canvas.getByTestId('port-error-alert').count(), 0, 'an output that delivers nothing cannot');
  await canvas.getByTestId('port-error-build').dragTo(canvas.getByTestId('node-alert'));
  const drawn = canvas.getByTestId('edge-build-alert');
  await drawn.waitFor();
  assert.equal(await drawn.getAttribute('data-label'), 'error');
  assert.ok((await drawn.getAttribute('class')).split(' ').includes('edge-error'), 'an error path is drawn as one');
  const red = await drawn.locator('.line').evaluate((l) => getComputedStyle(l).stroke);
  const plain = await canvas.getByTestId('edge-build-ship').locator('.line').evaluate((l) => getComputedStyle(l).stroke);
  assert.notEqual(red, plain, 'the error path stands out from the normal one');
  assert.deepEqual((await graphOf(canvas)).edges.find((e) => e.to === 'alert'), { from: 'build', to: 'alert', label: 'error' });
  // The step's panel: a "Retry on failure" group whose fields write the policy, and an "On error" choice.
  await canvas.getByTestId('node-build').click();
  const group = canvas.locator('#panel details[data-group="retry"]');
  assert.equal(await group.locator('summary').textContent(), 'Retry on failure');
  await group.locator('summary').click();
  await canvas.getByTestId('field-retry.max_attempts').fill('3');
  await canvas.getByTestId('field-retry.on').fill('75\ntimeout');
  await canvas.getByTestId('field-retry.jitter').selectOption('false');
  assert.deepEqual(byId(await graphOf(canvas), 'build').retry, { max_attempts: 3, on: ['75', 'timeout'], jitter: false });
  assert.deepEqual(await canvas.getByTestId('field-on_error').locator('option').evaluateAll((os) => os.map((o) => o.value)), ['', 'fail', 'continue']);
  assert.deepEqual(canvas.problems, []);
  await canvas.close();

  // Saved that way, a run takes the error path: done with its failure handled, on every page.
  await seed('fails-well', {
    nodes: [manual, { id: 'build', type: 'command', run: 'exit 3' }, { id: 'ship', type: 'command', run: 'echo shipped' },
      { id: 'alert', type: 'output', template: 'build failed: {{nodes.build.error.message}}' }],
    edges: [{ from: 'start', to: 'build' }, { from: 'build', to: 'ship' }, { from: 'build', to: 'alert', label: 'error' }],
  });
  const run = (await api(server, 'POST', '/designs/fails-well/run', {})).body;
  assert.equal(run.status, 'done', JSON.stringify(run));
  const page = await openPage(`#/runs/${run.run_id}`);
  await waitFor(page, 'the run', () => document.querySelector('.title')?.dataset.status === 'done');
  assert.match(await page.locator('#handled').textContent(), /1 handled error.*build: command exited with code 3/s);
  await waitForCanvasStates(page, 'the handled step marked', { start: 'done', build: 'handled', ship: 'skipped', alert: 'done' });
  const list = await openPage('#/runs?design=fails-well');
  await list.locator(`tr[data-run="${run.run_id}"] [data-handled="1"]`).waitFor();
  assert.deepEqual([...page.problems, ...list.problems], []);
  await page.close();
  await list.close();
});
