// Pictures of runs in a real Chromium against a real `vwf serve`: the Overview page's charts
// (runs by status, cost, p95 duration) and totals carry exactly the figures of `GET /stats`, the
// design page shows them for its design, and the run page's timeline draws each run as recorded:
// loop passes grouped under their loop, a retried step's attempts with the backoff between them
// hatched, a gate hatched and followed live as it is answered, a design step's child run nested.
// Agent steps are answered by a local server speaking the OpenAI wire format, with a price table
// for one model (so runs cost something) and none for another (an unpriced run).
// Every wait is for a condition; nothing sleeps (a retry's 1 s backoff is waited for as a status).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:http';
import { startServer, launch, newPage, api, freshHome, DOCS } from './helpers.mjs';
import { waitFor } from './canvas.mjs';
import { durationText } from '../../web/pages/charts.js';

let server;
let browser;
let backend;

before(async () => {
  // An OpenAI-compatible backend: each answer reports its usage and the model it was asked for.
  backend = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'GET' && req.url === '/v1/models') return res.end(JSON.stringify({ data: [{ id: 'tiny' }, { id: 'mystery' }] }));
      if (req.method === 'POST' && req.url === '/v1/chat/completions') {
        const asked = JSON.parse(body);
        return res.end(JSON.stringify({
          model: asked.model,
          choices: [{ message: { content: `Written by ${asked.model}.` } }],
          usage: { prompt_tokens: 1200, completion_tokens: 300, total_tokens: 1500 },
        }));
      }
      res.statusCode = 404;
      res.end('{}');
    });
  });
  await new Promise((r) => backend.listen(0, '127.0.0.1', r));
  const home = freshHome();
  writeFileSync(join(home, 'visual-workflow.toml'), [
    '[agent]', 'backend = "openai"', `base_url = "http://127.0.0.1:${backend.address().port}/v1"`, 'default_model = "tiny"', '',
    '[prices]', 'currency = "USD"', '', '[prices."tiny"]', 'input_per_mtok = 10.0', 'output_per_mtok = 30.0', '',
  ].join('\n'));
  server = await startServer(home);
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  backend?.close();
});

/** A 1440×900 page that records page errors and console errors in `page.problems` (each test
 * ends by asserting there were none), at `hash` of the dashboard unless it is null. */
async function openPage(hash) {
  const page = await newPage(browser, { viewport: { width: 1440, height: 900 } });
  page.problems = [];
  page.on('pageerror', (e) => page.problems.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') page.problems.push(`console error: ${m.text()} at ${m.location().url}`); });
  if (hash !== null) await page.goto(`${server.url}/${hash}`);
  return page;
}

async function seed(name, graph) {
  const r = await api(server, 'POST', `/designs/${name}`, { graph });
  assert.equal(r.body.ok, true, JSON.stringify(r.body));
}

/** Starts a run and answers it once it has settled or parked (`wait: true`). */
async function run(name, input) {
  const r = await api(server, 'POST', `/designs/${name}/run`, input === undefined ? {} : { input });
  assert.ok(r.body.run_id, JSON.stringify(r.body));
  return r.body;
}

/** Reads the run until `ok(run)` holds (a bounded poll of the API). */
async function until(runId, ok, what) {
  const deadline = Date.now() + 15000;
  for (;;) {
    const r = (await api(server, 'GET', `/runs/${runId}?wait=0`)).body;
    if (ok(r)) return r;
    if (Date.now() > deadline) throw new Error(`run ${runId} never came to ${what}: ${r.status}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const manual = { id: 'start', type: 'trigger', mode: 'manual' };

/** A loop over 3 items, a step after it. */
const loopThree = {
  nodes: [manual, { id: 'list', type: 'command', run: 'echo [1,2,3]' }, { id: 'each', type: 'loop', over: '{{nodes.list}}' },
    { id: 'work', type: 'command', run: 'echo item {{item}}' }, { id: 'after', type: 'command', run: 'echo after' }],
  edges: [{ from: 'start', to: 'list' }, { from: 'list', to: 'each' }, { from: 'each', to: 'work', label: 'each' },
    { from: 'each', to: 'after', label: 'done' }],
};

/** A command that fails its first attempt and succeeds on its second, 1 s later. */
const flaky = (id = 'fetch') => ({ id, type: 'command', run: 'if [ "$VWF_ATTEMPT" -lt 2 ]; then echo "attempt $VWF_ATTEMPT fails" >&2; exit 3; fi; echo fetched',
  retry: { max_attempts: 2, delay: '1s', backoff: 'fixed', jitter: false } });

const flakyOnce = { nodes: [manual, flaky()], edges: [{ from: 'start', to: 'fetch' }] };

/** A step, an approval gate, a step after it. */
const gated = {
  nodes: [manual, { id: 'prep', type: 'command', run: 'echo prepared' },
    { id: 'gate', type: 'approval', question: 'Ship it?', options: ['ship', 'hold'] }, { id: 'ship', type: 'command', run: 'echo shipped' }],
  edges: [{ from: 'start', to: 'prep' }, { from: 'prep', to: 'gate' }, { from: 'gate', to: 'ship', label: 'ship' }],
};

/** A design step calling loop-three, then a step. */
const caller = {
  nodes: [manual, { id: 'checks', type: 'design', design: 'loop-three' }, { id: 'report', type: 'command', run: 'echo reported' }],
  edges: [{ from: 'start', to: 'checks' }, { from: 'checks', to: 'report' }],
};

/** What the timeline draws: each row and its bars, in order. */
function timelineRows() {
  return [...document.querySelectorAll('#timeline g.row')].map((g) => ({
    kind: g.dataset.rowKind,
    node: g.dataset.node ?? null,
    pass: g.dataset.pass === undefined ? null : Number(g.dataset.pass),
    depth: Number(g.dataset.depth),
    run: g.dataset.run,
    bars: [...g.querySelectorAll('rect.seg')].map((r) => ({
      kind: r.dataset.kind, node: r.dataset.node, status: r.dataset.status, attempt: r.dataset.attempt ? Number(r.dataset.attempt) : null,
      hatched: r.classList.contains('hatched'), open: r.classList.contains('open'), start: r.dataset.start, end: r.dataset.end ?? null,
      x: Number(r.getAttribute('x')), width: Number(r.getAttribute('width')), fill: getComputedStyle(r).fill,
    })),
  }));
}

/** The run page of `runId` once its timeline shows the run in `status`. */
async function openTimeline(runId, status) {
  const page = await openPage(`#/runs/${runId}`);
  await waitFor(page, `the timeline to show the run ${status}`,
    (s) => document.querySelector('#timeline')?.dataset.status === s && document.querySelector('#timeline g.row'), status);
  return page;
}

/** The details shown for the bar under the pointer or the focus: {field: text}. */
async function tipFields(page) {
  await waitFor(page, 'the details of a bar', () => !document.querySelector('#timeline-tip').hidden);
  return page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#timeline-tip dd')].map((d) => [d.dataset.field, d.textContent])));
}

test('timeline: a loop’s three passes grouped under the loop, a row a pass', async () => {
  await seed('loop-three', loopThree);
  const done = await run('loop-three');
  assert.equal(done.status, 'done');
  const page = await openTimeline(done.run_id, 'done');
  const rows = await page.evaluate(timelineRows);
  assert.deepEqual(rows.map((r) => [r.kind, r.node, r.pass, r.depth]), [
    ['step', 'list', null, 0],
    ['loop', 'each', null, 0],
    ['pass', 'each', 0, 1], ['pass', 'each', 1, 1], ['pass', 'each', 2, 1],
    ['step', 'after', null, 0],
  ]);
  // Each pass row holds its pass's body step, as recorded.
  assert.deepEqual(rows.filter((r) => r.kind === 'pass').map((r) => r.bars.map((b) => b.node)), [['work#0'], ['work#1'], ['work#2']]);
  const recorded = Object.fromEntries(done.steps.map((s) => [s.node, s]));
  for (const bar of rows.flatMap((r) => r.bars)) {
    assert.equal(bar.start, recorded[bar.node].started_at, `${bar.node} starts when its record says`);
    assert.equal(bar.end, recorded[bar.node].finished_at, `${bar.node} ends when its record says`);
    assert.equal(bar.hatched, false, 'commands and loops work, they do not wait');
  }
  // Bars keep the order of time from left to right.
  const xs = rows.filter((r) => r.kind === 'pass').map((r) => r.bars[0].x);
  assert.ok(xs[0] <= xs[1] && xs[1] <= xs[2], `passes left to right: ${xs}`);
  assert.deepEqual(page.problems, []);
  await page.close();

  // A run of a design deleted since: its version cannot be read (nor is it asked for), and the
  // passes are still grouped, under their step's name.
  await seed('gone', loopThree);
  const orphan = await run('gone');
  assert.equal((await api(server, 'DELETE', '/designs/gone')).body.ok, true);
  const later = await openTimeline(orphan.run_id, 'done');
  const kept = await later.evaluate(timelineRows);
  assert.deepEqual(kept.filter((r) => r.kind === 'pass').map((r) => [r.pass, r.bars.map((b) => b.node)]), [[0, ['work#0']], [1, ['work#1']], [2, ['work#2']]]);
  assert.equal(kept.flatMap((r) => r.bars).length, orphan.steps.length, 'a bar per step record');
  assert.deepEqual(later.problems, [], 'no request for the deleted design');
  await later.close();
});

test('timeline: a retried step, each attempt a bar with its backoff hatched between them; hover shows details', async () => {
  await seed('flaky-once', flakyOnce);
  const started = await run('flaky-once', undefined);
  // The backoff is 1 s of real time: wait for the run to end, through the API.
  const done = started.status === 'done' ? started : await until(started.run_id, (r) => r.status === 'done', 'done');
  const step = done.steps.find((s) => s.node === 'fetch');
  assert.equal(step.attempts, 2);
  const page = await openTimeline(done.run_id, 'done');
  const rows = await page.evaluate(timelineRows);
  assert.equal(rows.length, 1);
  const bars = rows[0].bars;
  assert.deepEqual(bars.map((b) => [b.kind, b.status, b.attempt, b.hatched]), [
    ['work', 'failed', 1, false],
    ['backoff', 'waited', 2, true],
    ['work', 'done', 2, false],
  ]);
  // The backoff lies between the two attempts, exactly as recorded.
  assert.equal(bars[1].start, step.tries[0].finished_at);
  assert.equal(bars[1].end, step.tries[1].started_at);
  assert.ok(bars[0].x + bars[0].width <= bars[1].x + 0.5 && bars[1].x + bars[1].width <= bars[2].x + 0.5, 'attempt, wait, attempt, left to right');
  assert.match(bars[1].fill, /url\("?#tl-hatch-waiting"?\)/, 'the wait is hatched');
  assert.notEqual(bars[0].fill, bars[2].fill, 'a failed attempt is coloured apart from a done one');

  await page.locator('#timeline rect.seg[data-kind="work"][data-attempt="1"]').hover();
  const first = await tipFields(page);
  assert.equal(first.step, 'fetch');
  assert.equal(first.status, 'failed');
  assert.equal(first.attempt, '1 of 2');
  assert.match(first.error, /exited with code 3/);
  assert.equal(first.duration, durationText(Date.parse(step.tries[0].finished_at) - Date.parse(step.tries[0].started_at)));
  await page.locator('#timeline rect.seg[data-kind="backoff"]').hover();
  const wait = await tipFields(page);
  assert.equal(wait.what, 'retry wait');
  assert.equal(wait.status, 'waited');
  assert.equal(wait.before, 'attempt 2');
  assert.equal(wait['policy wait'], '1 s');
  assert.equal(wait.duration, durationText(Date.parse(step.tries[1].started_at) - Date.parse(step.tries[0].finished_at)));
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('timeline: a gate hatched while it waits, followed live as it is answered; the keyboard reaches each bar', async () => {
  await seed('gated', gated);
  const parked = await run('gated');
  assert.equal(parked.status, 'awaiting_approval');
  const page = await openTimeline(parked.run_id, 'awaiting_approval');
  let rows = await page.evaluate(timelineRows);
  assert.deepEqual(rows.map((r) => r.node), ['prep', 'gate']);
  const gate = rows[1].bars;
  assert.deepEqual(gate.map((b) => [b.kind, b.status, b.hatched, b.open]), [['gate', 'awaiting_approval', true, true]]);
  assert.equal(await page.locator('#timeline g.now').count(), 1, 'a run still going shows now');

  // The keyboard: Tab from the first bar reaches the gate's, which shows its details.
  await page.locator('#timeline rect.seg[data-node="prep"]').focus();
  assert.equal((await tipFields(page)).step, 'prep');
  await page.keyboard.press('Tab');
  await waitFor(page, 'the gate’s details', () => document.querySelector('#timeline-tip dd[data-field="step"]')?.textContent === 'gate');
  const tip = await tipFields(page);
  assert.equal(tip.what, 'approval gate');
  assert.equal(tip.end, 'not yet');
  assert.match(tip.duration, / so far$/);

  // Answered elsewhere (the API): the page follows the run, the gate ends, the next step shows.
  const answered = await api(server, 'POST', `/runs/${parked.run_id}/respond`, { node: 'gate', answer: 'ship' });
  assert.equal(answered.body.status, 'done');
  await waitFor(page, 'the timeline to follow the run to its end', () => document.querySelector('#timeline')?.dataset.status === 'done');
  rows = await page.evaluate(timelineRows);
  assert.deepEqual(rows.map((r) => r.node), ['prep', 'gate', 'ship']);
  const finished = answered.body.steps.find((s) => s.node === 'gate');
  assert.deepEqual(rows[1].bars.map((b) => [b.kind, b.status, b.hatched, b.open, b.end]), [['gate', 'done', true, false, finished.finished_at]]);
  assert.equal(await page.locator('#timeline g.now').count(), 0, 'a settled run has no now');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('timeline: a design step’s child run nested under it, its steps indented', async () => {
  await seed('caller', caller);
  const done = await run('caller');
  assert.equal(done.status, 'done');
  assert.equal(done.child_runs.length, 1);
  const [child] = done.child_runs;
  const page = await openTimeline(done.run_id, 'done');
  const rows = await page.evaluate(timelineRows);
  assert.deepEqual(rows.map((r) => [r.kind, r.node, r.pass, r.depth, r.run]), [
    ['step', 'checks', null, 0, done.run_id],
    ['child', null, null, 1, child],
    ['step', 'list', null, 2, child],
    ['loop', 'each', null, 2, child],
    ['pass', 'each', 0, 3, child], ['pass', 'each', 1, 3, child], ['pass', 'each', 2, 3, child],
    ['step', 'after', null, 2, child],
    ['step', 'report', null, 0, done.run_id],
  ]);
  assert.equal(await page.locator(`#timeline g.row[data-row-kind="child"] a`).getAttribute('href'), `#/runs/${child}`);
  const childRun = (await api(server, 'GET', `/runs/${child}`)).body;
  const span = rows[1].bars[0];
  assert.deepEqual([span.kind, span.status, span.start], ['child', 'done', childRun.created_at]);
  assert.deepEqual(page.problems, []);
  await page.close();
});

/** The designs whose runs give the overview something to show: a priced agent step, one whose
 * model has no price, a failing command. */
async function seedCosts() {
  await seed('priced', { nodes: [manual, { id: 'draft', type: 'agent', prompt: 'Write a line.' }], edges: [{ from: 'start', to: 'draft' }] });
  await seed('unpriced', { nodes: [manual, { id: 'draft', type: 'agent', model: 'mystery', prompt: 'Write a line.' }], edges: [{ from: 'start', to: 'draft' }] });
  await seed('broken', { nodes: [manual, { id: 'step', type: 'command', run: 'echo broken >&2; exit 1' }], edges: [{ from: 'start', to: 'step' }] });
  for (const [name, status] of [['priced', 'done'], ['priced', 'done'], ['unpriced', 'done'], ['broken', 'failed'], ['broken', 'failed']]) {
    assert.equal((await run(name)).status, status, name);
  }
}

/** What the page's charts and totals say, read from the marks' data attributes. */
function chartFigures() {
  const num = (v) => (v === undefined || v === null ? null : Number(v));
  const bars = (id) => [...document.querySelectorAll(`${id} g.bucket`)].map((g) => ({
    start: g.dataset.start,
    segs: Object.fromEntries([...g.querySelectorAll('rect.seg')].map((r) => [r.dataset.series, { value: num(r.dataset.value), height: Number(r.getAttribute('height')) }])),
  }));
  return {
    runs: bars('#chart-runs'),
    cost: bars('#chart-cost'),
    p95: [...document.querySelectorAll('#chart-p95 circle.point')].map((c) => ({ start: c.dataset.start, value: num(c.dataset.value) })),
    totals: Object.fromEntries([...document.querySelectorAll('#totals [data-figure]')].map((f) => [f.dataset.figure, { value: JSON.parse(f.dataset.value), text: f.querySelector('b').textContent }])),
    captions: [...document.querySelectorAll('.chart-card figcaption')].map((c) => c.textContent),
    fontPx: Math.min(...[...document.querySelectorAll('svg.chart text')].map((t) => parseFloat(getComputedStyle(t).fontSize))),
  };
}

/** Checks the figures drawn against a `GET /stats` answer. */
function assertDrawn(drawn, stats) {
  assert.equal(drawn.runs.length, stats.buckets.length, 'a bar group per bucket, empty ones included');
  const perRun = [];
  stats.buckets.forEach((b, i) => {
    const bar = drawn.runs[i];
    assert.equal(bar.start, b.start);
    assert.equal(bar.segs.done.value, b.by_status.done || 0, `done runs of ${b.start}`);
    assert.equal(bar.segs.failed.value, b.by_status.failed || 0, `failed runs of ${b.start}`);
    for (const s of ['done', 'failed']) if (bar.segs[s].value) perRun.push(bar.segs[s].height / bar.segs[s].value);
    assert.equal(drawn.cost[i].segs.cost.value, b.cost, `cost of ${b.start}`);
  });
  // Heights are proportional to the counts: the same pixels per run everywhere.
  assert.ok(perRun.length > 0);
  assert.ok(perRun.every((p) => Math.abs(p - perRun[0]) < 0.01), `pixels per run: ${perRun}`);
  assert.deepEqual(drawn.p95, stats.buckets.filter((b) => b.p95_ms !== null).map((b) => ({ start: b.start, value: b.p95_ms })));
  const t = stats.totals;
  assert.equal(drawn.totals.runs.value, t.runs);
  assert.equal(drawn.totals.runs.text, String(t.runs));
  assert.equal(drawn.totals.done.value, t.by_status.done || 0);
  assert.equal(drawn.totals.failed.value, t.by_status.failed || 0);
  assert.equal(drawn.totals.failure_rate.value, t.failure_rate);
  assert.equal(drawn.totals.failure_rate.text, `${(t.failure_rate * 100).toFixed(1)}%`);
  assert.equal(drawn.totals.p50_ms.value, t.p50_ms);
  assert.equal(drawn.totals.p50_ms.text, durationText(t.p50_ms));
  assert.equal(drawn.totals.p95_ms.value, t.p95_ms);
  assert.equal(drawn.totals.p95_ms.text, durationText(t.p95_ms));
  assert.deepEqual(drawn.totals.tokens.value, t.usage);
  assert.equal(drawn.totals.tokens.text, `${t.usage.input_tokens.toLocaleString('en')} in · ${t.usage.output_tokens.toLocaleString('en')} out · ${t.usage.cached_tokens.toLocaleString('en')} cached`);
  assert.equal(drawn.totals.cost.value, t.cost);
  assert.match(drawn.totals.cost.text, new RegExp(` ${stats.currency}$`));
  assert.equal(drawn.totals.unpriced_runs.value, t.unpriced_runs);
  assert.ok(drawn.fontPx >= 11, `chart text at least 11 px, not ${drawn.fontPx}`);
}

test('overview: runs by status, cost and p95 per bucket, the totals and the step tables are GET /stats', async () => {
  await seedCosts();
  const page = await newOverview('#/overview');
  const { report, path } = page.report;
  const again = (await api(server, 'GET', path)).body;
  assert.deepEqual(again.buckets, report.buckets, 'the page drew what the server answers');
  assert.deepEqual(again.totals, report.totals);
  assert.equal(report.buckets.length, 14, 'the last 14 days');
  assert.equal(report.bucket, 'day');
  // The runs above, and those of the timeline tests before: some failed, some cost, one unpriced.
  assert.ok(report.totals.by_status.failed >= 2 && report.totals.by_status.done >= 3, JSON.stringify(report.totals));
  assert.ok(report.totals.cost > 0);
  assert.equal(report.totals.unpriced_runs, 1);
  assert.equal(report.currency, 'USD');
  const drawn = await page.evaluate(chartFigures);
  assertDrawn(drawn, report);
  assert.deepEqual(drawn.captions, ['Runs by status', 'Cost (USD)', 'p95 duration']);
  // The stacked bar of today holds both statuses, in their colours.
  const colours = await page.evaluate(() => {
    const last = [...document.querySelectorAll('#chart-runs g.bucket')].pop();
    return ['done', 'failed'].map((s) => getComputedStyle(last.querySelector(`rect[data-series="${s}"]`)).fill);
  });
  assert.notEqual(colours[0], colours[1]);

  // The step tables: the server's rows in its order, each linking to its design.
  const table = (id) => page.evaluate((sel) => [...document.querySelectorAll(`${sel} tbody tr[data-node]`)].map((tr) => ({
    design: tr.dataset.design, node: tr.dataset.node, href: tr.querySelector('a').getAttribute('href'),
  })), id);
  const slowest = await table('#slowest-steps');
  assert.deepEqual(slowest.map((r) => [r.design, r.node]), report.slowest_steps.map((s) => [s.design, s.node]));
  assert.ok(slowest.every((r) => r.href === `#/designer/${r.design}`));
  const costliest = await table('#costliest-steps');
  assert.deepEqual(costliest.map((r) => [r.design, r.node]), report.costliest_steps.map((s) => [s.design, s.node]));
  assert.deepEqual(costliest[0], { design: 'priced', node: 'draft', href: '#/designer/priced' });

  mkdirSync(DOCS, { recursive: true });
  await page.screenshot({ path: join(DOCS, 'overview.png') });

  // The switch: the last 48 hours by hour, in the address.
  const hourly = page.waitForResponse((r) => r.url().includes('/stats?') && r.url().includes('bucket=hour'));
  await page.locator('.period button[data-period="48h"]').click();
  const byHour = await (await hourly).json();
  await page.waitForURL(/#\/overview\?period=48h$/);
  await waitFor(page, 'the hourly charts', () => document.querySelector('.stats[data-period="48h"][aria-busy="false"]') && document.querySelectorAll('#chart-runs g.bucket').length === 48);
  assert.equal(byHour.bucket, 'hour');
  assertDrawn(await page.evaluate(chartFigures), byHour);
  assert.equal(await page.locator('.period button[data-period="48h"]').getAttribute('aria-pressed'), 'true');
  assert.deepEqual(page.problems, []);
  await page.close();
});

/** The page at `hash` once its figures are drawn; `page.report` is the `GET /stats` answer it drew
 * and the path it asked. */
async function newOverview(hash, sel = '.stats') {
  const page = await openPage(null);
  const answer = page.waitForResponse((r) => r.url().includes('/api/plugins/visual-workflow/stats?'));
  await page.goto(`${server.url}/${hash}`);
  const res = await answer;
  const url = new URL(res.url());
  page.report = { report: await res.json(), path: url.pathname.replace('/api/plugins/visual-workflow', '') + url.search };
  await waitFor(page, 'the figures to be drawn', (s) => {
    const el = document.querySelector(`${s}[aria-busy="false"]`);
    return el && (el.querySelector('.empty') || el.querySelectorAll('svg.chart').length === 3);
  }, sel);
  return page;
}

test('design page: the same charts for its design alone, smaller; a design without runs says so', async () => {
  if (!(await api(server, 'GET', '/designs/broken')).body.ok) await seedCosts(); // run alone
  const page = await newOverview('#/designer/broken', '#design-stats .stats');
  const { report, path } = page.report;
  assert.match(path, /design=broken/);
  assert.equal(report.design, 'broken');
  assert.equal(report.totals.runs, 2);
  assert.equal(report.totals.by_status.failed, 2);
  assertDrawn(await page.evaluate(chartFigures), report);
  const heights = await page.evaluate(() => [...document.querySelectorAll('#design-stats svg.chart')].map((s) => Number(s.getAttribute('height'))));
  assert.deepEqual(heights, [150, 150, 150], 'smaller than the overview’s');
  assert.deepEqual(page.problems, []);
  await page.close();

  await seed('never-run', { nodes: [manual, { id: 'step', type: 'command', run: 'echo hi' }], edges: [{ from: 'start', to: 'step' }] });
  const empty = await newOverview('#/designer/never-run', '#design-stats .stats');
  assert.equal(empty.report.report.totals.runs, 0);
  assert.equal(await empty.locator('#design-stats .empty').textContent(), 'No runs ended in this period.');
  assert.equal(await empty.locator('#design-stats svg').count(), 0, 'no chart without runs');
  // Its hourly view, switched in place, is empty too.
  await empty.locator('#design-stats button[data-period="48h"]').click();
  await waitFor(empty, 'the hourly figures', () => document.querySelector('#design-stats .stats[data-period="48h"][aria-busy="false"] .empty'));
  assert.deepEqual(empty.problems, []);
  await empty.close();
});

test('timeline: the picture of a run parked at its gate after a retry and a child run (docs/timeline.png)', async () => {
  await seed('release', {
    nodes: [manual, { id: 'build', type: 'command', run: 'echo built' }, flaky('fetch'),
      { id: 'checks', type: 'design', design: 'loop-three' },
      { id: 'gate', type: 'approval', question: 'Ship the release?', options: ['ship', 'hold'] },
      { id: 'ship', type: 'command', run: 'echo shipped' }],
    edges: [{ from: 'start', to: 'build' }, { from: 'build', to: 'fetch' }, { from: 'fetch', to: 'checks' },
      { from: 'checks', to: 'gate' }, { from: 'gate', to: 'ship', label: 'ship' }],
  });
  const started = await run('release');
  await until(started.run_id, (r) => r.status === 'awaiting_approval', 'its gate');
  const page = await openTimeline(started.run_id, 'awaiting_approval');
  const rows = await page.evaluate(timelineRows);
  assert.deepEqual(rows.filter((r) => r.depth === 0).map((r) => r.node), ['build', 'fetch', 'checks', 'gate']);
  assert.deepEqual(rows.find((r) => r.node === 'fetch').bars.map((b) => b.kind), ['work', 'backoff', 'work']);
  assert.equal(rows.filter((r) => r.kind === 'pass').length, 3);
  await page.locator('#timeline').scrollIntoViewIfNeeded();
  await page.evaluate(() => document.querySelector('#timeline').scrollIntoView({ block: 'start' }));
  await page.locator('#timeline rect.seg[data-kind="backoff"]').hover();
  await tipFields(page);
  mkdirSync(DOCS, { recursive: true });
  await page.screenshot({ path: join(DOCS, 'timeline.png') });
  await api(server, 'POST', `/runs/${started.run_id}/respond`, { node: 'gate', answer: 'hold' });
  assert.deepEqual(page.problems, []);
  await page.close();
});
