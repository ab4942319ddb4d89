// Editing on the canvas and following runs in the dashboard, in a real Chromium against a real
// `vwf serve`: a port per branch (a condition's true and false, an approval's answers, a loop's
// each and done) makes its labelled edge at once, and a saved design's edges leave the ports of
// their labels; suggestions after `out.<step>.` name what the step will output before any run (its
// type's output view, a design step's child steps, a pinned step's fields); the zoom in percent
// and its 100% reset; notes written in place; the runs list showing a run started elsewhere while
// every run it lists has settled, and its date and duration filters; answers that say no drawn
// apart on the run page; the dashboard's Test run and its link to the standalone designer.
// Every wait is for a condition; nothing sleeps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serverAndBrowser, api, untilHeld } from './helpers.mjs';
import { openDesigner, openPage, graphOf, byId, connect, waitFor, waitForRunStatus } from './canvas.mjs';

const env = serverAndBrowser();

async function seed(name, graph) {
  const r = await api(env.server, 'POST', `/designs/${name}`, { graph });
  assert.equal(r.body.ok, true, JSON.stringify(r.body));
}

const designer = (query, viewport = { width: 1600, height: 900 }) => openDesigner(env.browser, `${env.server.url}/designer.html${query}`, viewport);
const dashboard = (hash) => openPage(env.browser, `${env.server.url}/${hash}`, { viewport: { width: 1400, height: 900 } });

/** Run in the canvas page: where each edge's drawn path starts, and where the port of its label
 * is, on screen (`port` null when the node has no port of that label). */
function edgeEnds() {
  const centre = (el) => { const r = el.getBoundingClientRect(); return { x: r.left + r.width / 2, y: r.top + r.height / 2 }; };
  return [...document.querySelectorAll('g.edge')].map((g) => {
    const { from, label } = g.dataset;
    const path = g.querySelector('path.line');
    const p = path.getPointAtLength(0);
    const start = new DOMPoint(p.x, p.y).matrixTransform(path.getScreenCTM());
    const testid = label === '' ? `port-out-${from}` : label === 'error' ? `port-error-${from}` : `port-out-${from}:${label}`;
    const dot = document.querySelector(`[data-testid="${testid}"] .dot`);
    return { edge: `${from} → ${g.dataset.to} (${label})`, start: { x: start.x, y: start.y }, port: dot ? centre(dot) : null };
  });
}

test('ports: a condition, an approval and a loop have a port per branch; dragging from one makes the edge with its label', async () => {
  const graph = {
    nodes: [
      { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 300 },
      { id: 'check', type: 'condition', expr: 'out.start.ok == true', x: 300, y: 60 },
      { id: 'gate', type: 'approval', question: 'Ship?', options: ['ship', 'hold', 'later', 'never'], x: 300, y: 280 },
      { id: 'each', type: 'loop', over: '[1, 2]', x: 300, y: 520 },
      { id: 'build', type: 'command', run: 'echo built', x: 300, y: 700 },
      ...['yes', 'no', 'shipped', 'held', 'body', 'after'].map((id, i) => ({ id, type: 'output', x: 700, y: 20 + i * 120 })),
    ],
    edges: [],
  };
  const page = await designer('');
  await page.evaluate((g) => window.vwfDesigner.setGraph(g), graph);
  await page.getByTestId('node-after').waitFor();

  // The ports each node has, top to bottom.
  const ports = (id) => page.evaluate((n) => [...document.querySelectorAll(`[data-testid="node-${n}"] .port-out`)].map((p) => p.dataset.testid), id);
  assert.deepEqual(await ports('check'), ['port-out-check:true', 'port-out-check:false']);
  assert.deepEqual(await ports('gate'), ['port-out-gate:ship', 'port-out-gate:hold', 'port-out-gate:later', 'port-out-gate:never']);
  assert.deepEqual(await ports('each'), ['port-out-each:each', 'port-out-each:done']);
  assert.deepEqual(await ports('build'), ['port-out-build', 'port-error-build'], 'a step that can fail: a plain port and the error port');
  assert.deepEqual(await ports('yes'), ['port-out-yes']);
  // Each branch is named beside its port; an approval with four answers grows to fit them.
  assert.equal(await page.getByTestId('port-label-gate:later').textContent(), 'later');
  const height = (id) => page.evaluate((n) => Number(document.querySelector(`[data-testid="node-${n}"] .box`).getAttribute('height')), id);
  assert.ok(await height('gate') > await height('check'), 'four answers need a taller box');

  // Dragging from a branch's port makes the edge with that label at once: no label to choose.
  const made = [['check', 'yes', 'true'], ['check', 'no', 'false'], ['gate', 'shipped', 'ship'], ['gate', 'held', 'hold'], ['each', 'body', 'each'], ['each', 'after', 'done']];
  for (const [from, to, label] of made) {
    await connect(page, from, to, label);
    const status = await page.getByTestId('status').textContent();
    assert.match(status, new RegExp(`Connected ${from} → ${to} \\(${label}\\)`));
    assert.doesNotMatch(status, /choose/, 'nothing left to choose');
    assert.equal(await page.getByTestId('edge-label').inputValue(), label, 'the edge panel shows the label it got');
  }
  const g = await graphOf(page);
  assert.deepEqual(g.edges, made.map(([from, to, label]) => ({ from, to, label })));
  // The server agrees with every label (no edge error).
  const v = await page.evaluate(() => window.vwfDesigner.validate());
  assert.deepEqual(v.errors.filter((i) => i.edge !== undefined), []);

  // Each new edge leaves the port it was dragged from.
  for (const e of await page.evaluate(edgeEnds)) {
    assert.ok(e.port && Math.hypot(e.start.x - e.port.x, e.start.y - e.port.y) < 1.5, `${e.edge} starts at ${JSON.stringify(e.start)}, its port is at ${JSON.stringify(e.port)}`);
  }
  // Undo takes one edge away.
  await page.getByTestId('btn-undo').click();
  assert.equal((await graphOf(page)).edges.length, made.length - 1);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('ports: a saved design opens with every edge leaving the port of its label', async () => {
  await seed('branchy', {
    nodes: [
      { id: 'start', type: 'trigger', mode: 'manual' },
      { id: 'build', type: 'command', run: 'echo 1' },
      { id: 'alert', type: 'output', template: 'the build failed' },
      { id: 'check', type: 'condition', expr: 'out.build.exit_code == 0' },
      { id: 'gate', type: 'approval', question: 'Ship?', options: ['ship', 'hold', 'later'] },
      { id: 'nope', type: 'output', template: 'no' },
      { id: 'shipped', type: 'output', template: 'shipped' },
      { id: 'held', type: 'output', template: 'held' },
      { id: 'later', type: 'output', template: 'later' },
      { id: 'each', type: 'loop', over: '[1, 2]' },
      { id: 'body', type: 'output', template: 'one {{item}}' },
      { id: 'after', type: 'output', template: 'all done' },
    ],
    edges: [
      { from: 'start', to: 'build' }, { from: 'build', to: 'check' }, { from: 'build', to: 'alert', label: 'error' },
      { from: 'check', to: 'gate', label: 'true' }, { from: 'check', to: 'nope', label: 'false' },
      { from: 'gate', to: 'shipped', label: 'ship' }, { from: 'gate', to: 'held', label: 'hold' }, { from: 'gate', to: 'later', label: 'later' },
      { from: 'start', to: 'each' }, { from: 'each', to: 'body', label: 'each' }, { from: 'each', to: 'after', label: 'done' },
    ],
  });
  const page = await designer('?design=branchy');
  await page.getByTestId('edge-each-after').waitFor();
  const ends = await page.evaluate(edgeEnds);
  assert.equal(ends.length, 11);
  for (const e of ends) {
    assert.ok(e.port, `${e.edge}: its node has a port of its label`);
    assert.ok(Math.hypot(e.start.x - e.port.x, e.start.y - e.port.y) < 1.5, `${e.edge} starts at ${JSON.stringify(e.start)}, its port is at ${JSON.stringify(e.port)}`);
  }
  // The true and false edges leave two different ports, true above false.
  const start = (edge) => ends.find((e) => e.edge.startsWith(edge)).start;
  assert.ok(start('check → gate').y < start('check → nope').y);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('suggestions: before any run, out.<step>. offers what the step will output; a design step its child\'s steps; a pinned step its fields', async () => {
  await seed('greeter', {
    nodes: [{ id: 'start', type: 'trigger', mode: 'manual' }, { id: 'greet', type: 'command', run: 'echo hi' }, { id: 'ask', type: 'approval', question: 'Fine?' }],
    edges: [{ from: 'start', to: 'greet' }, { from: 'greet', to: 'ask' }],
  });
  await seed('planned', {
    inputs: { type: 'object', properties: { city: { type: 'string' } } },
    pins: { api: { status: 200, text: '{"id": 7, "name": "Oslo"}', body: { id: 7, name: 'Oslo' } } },
    nodes: [
      { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 200 },
      { id: 'fetch', type: 'command', run: 'echo fetched', x: 260, y: 80 },
      { id: 'api', type: 'http', url: 'https://example.org/city', x: 260, y: 320 },
      { id: 'sub', type: 'design', design: 'greeter', x: 480, y: 200 },
      { id: 'check', type: 'condition', expr: 'out.fetch.exit_code == 0', x: 700, y: 80 },
      { id: 'draft', type: 'agent', prompt: 'Write', x: 700, y: 320 },
    ],
    edges: [
      { from: 'start', to: 'fetch' }, { from: 'start', to: 'api' }, { from: 'fetch', to: 'sub' }, { from: 'api', to: 'sub' },
      { from: 'sub', to: 'check' }, { from: 'sub', to: 'draft' },
    ],
  });
  assert.equal((await api(env.server, 'GET', '/runs?design=planned')).body.runs.length, 0, 'no run of it yet');
  const page = await designer('?design=planned');
  await waitFor(page, 'the first verdict', () => document.querySelector('[data-testid="issues"]').dataset.status === 'done');
  const offered = () => page.locator('[data-testid="ac-item"]').evaluateAll((els) => els.map((e) => e.dataset.value));
  const typeInto = async (id, key, text) => {
    await page.evaluate((n) => window.vwfDesigner.select(n), id);
    const field = page.getByTestId(`field-${key}`);
    await field.click();
    await field.press('Control+A');
    await field.press('Delete');
    await field.pressSequentially(text);
    return field;
  };
  const suggests = (what, want) => waitFor(page, what, (w) => {
    const got = [...document.querySelectorAll('[data-testid="ac-item"]')].map((e) => e.dataset.value);
    return w.every((x) => got.includes(x));
  }, want);

  // A command's output view, in a condition.
  let field = await typeInto('check', 'expr', 'out.fetch.');
  await suggests('a command\'s fields', ['out.fetch.text', 'out.fetch.data', 'out.fetch.exit_code', 'out.fetch.stderr', 'out.fetch.stdout']);
  await field.pressSequentially('ex');
  await suggests('narrowed', ['out.fetch.exit_code']);
  assert.deepEqual(await offered(), ['out.fetch.exit_code']);
  await field.press('Enter');
  assert.equal(await field.inputValue(), 'out.fetch.exit_code');
  await field.pressSequentially(' == 0');
  // What a failed step gives its error path.
  field = await typeInto('draft', 'prompt', '{{nodes.fetch.error.');
  await suggests('a failure\'s fields', ['nodes.fetch.error.message', 'nodes.fetch.error.kind', 'nodes.fetch.error.attempts', 'nodes.fetch.error.exit_code']);

  // A design step: its view, then under `outputs` the steps of the design it runs, then theirs.
  field = await typeInto('draft', 'prompt', 'About {{nodes.sub.');
  await suggests('a design step\'s fields', ['nodes.sub.run_id', 'nodes.sub.status', 'nodes.sub.outputs', 'nodes.sub.text']);
  await field.pressSequentially('outputs.');
  await suggests('the child design\'s steps', ['nodes.sub.outputs.greet', 'nodes.sub.outputs.ask']);
  assert.ok(!(await offered()).includes('nodes.sub.outputs.start'), 'not its trigger');
  await field.pressSequentially('ask.');
  await suggests('a child approval\'s fields', ['nodes.sub.outputs.ask.answer']);

  // A pinned http step: its view, with the pin's values, and its body's keys.
  field = await typeInto('draft', 'prompt', '{{nodes.api.');
  await suggests('an http step\'s fields', ['nodes.api.status', 'nodes.api.headers', 'nodes.api.body']);
  assert.match(await page.locator('[data-testid="ac-item"][data-value="nodes.api.status"]').innerText(), /200/, 'the pin\'s value beside it');
  await field.pressSequentially('body.');
  await suggests('the pinned body\'s keys', ['nodes.api.body.id', 'nodes.api.body.name']);
  assert.match(await page.locator('[data-testid="ac-item"][data-value="nodes.api.body.name"]').innerText(), /Oslo/);

  // The input's declared fields, and an agent's view.
  field = await typeInto('draft', 'prompt', '{{trigger.');
  await suggests('the declared input', ['trigger.city']);
  field = await typeInto('draft', 'prompt', '{{nodes.start.');
  await suggests('the trigger\'s view', ['nodes.start.text', 'nodes.start.city']);
  await field.press('Escape');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('zoom: the canvas toolbar shows the zoom in percent, and 100% sets it back', async () => {
  await seed('zoomed', {
    nodes: [{ id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 40 }, { id: 'say', type: 'output', template: 'hi', x: 300, y: 40 }],
    edges: [{ from: 'start', to: 'say' }],
  });
  const page = await designer('?design=zoomed');
  await page.getByTestId('node-say').waitFor();
  const scale = () => page.evaluate(() => /scale\(([\d.]+)\)/.exec(document.getElementById('viewport').getAttribute('transform'))[1]);
  const shown = () => page.getByTestId('zoom-level').textContent();
  assert.equal(await shown(), `${Math.round(Number(await scale()) * 100)}%`, 'Fit\'s zoom, in percent');
  await page.getByTestId('btn-zoom-reset').click();
  assert.equal(await shown(), '100%');
  assert.equal(await scale(), '1');
  await page.getByTestId('btn-zoom-in').click();
  assert.equal(await shown(), '120%');
  await page.getByTestId('btn-zoom-out').click();
  await page.getByTestId('btn-zoom-out').click();
  assert.equal(await shown(), '83%');
  // The wheel zooms too, and the percent follows it.
  const box = await page.getByTestId('canvas').boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.mouse.wheel(0, 300);
  await waitFor(page, 'the wheel\'s zoom', () => document.querySelector('[data-testid="zoom-level"]').textContent !== '83%');
  assert.equal(await shown(), `${Math.round(Number(await scale()) * 100)}%`);
  // 100% keeps what is in the middle of the view there.
  const middle = () => page.evaluate(() => {
    const r = document.getElementById('svg').getBoundingClientRect();
    const m = document.getElementById('viewport').getScreenCTM().inverse();
    const p = new DOMPoint(r.left + r.width / 2, r.top + r.height / 2).matrixTransform(m);
    return [p.x, p.y];
  });
  const before = await middle();
  await page.getByTestId('btn-zoom-reset').click();
  assert.equal(await shown(), '100%');
  const after = await middle();
  assert.ok(Math.hypot(after[0] - before[0], after[1] - before[1]) < 0.5, `the middle stays: ${before} → ${after}`);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('notes: a double-click writes in a note on the canvas; Ctrl+Enter or a click elsewhere keeps it (one undo step), Escape drops it', async () => {
  const page = await designer('');
  await page.evaluate(() => window.vwfDesigner.setGraph({ nodes: [{ id: 'tip', type: 'note', text: 'old words', x: 100, y: 100 }, { id: 'start', type: 'trigger', mode: 'manual', x: 400, y: 100 }], edges: [] }));
  await page.getByTestId('node-tip').dblclick();
  const editor = page.getByTestId('note-editor');
  await editor.waitFor();
  assert.equal(await editor.inputValue(), 'old words');
  await editor.press('Control+A');
  await editor.pressSequentially('Call Ana first');
  await editor.press('Enter');
  await editor.pressSequentially('then the team');
  await editor.press('Control+Enter');
  assert.equal(await editor.count(), 0, 'Ctrl+Enter closes it');
  assert.equal(byId(await graphOf(page), 'tip').text, 'Call Ana first\nthen the team');
  assert.match(await page.getByTestId('node-tip').textContent(), /Call Ana first/);
  // The panel's Text field shows the same text.
  assert.equal(await page.getByTestId('field-text').inputValue(), 'Call Ana first\nthen the team');

  // Escape drops an edit; a click on the canvas keeps one.
  await page.getByTestId('node-tip').dblclick();
  await editor.pressSequentially(' and nobody else');
  await editor.press('Escape');
  assert.equal(await editor.count(), 0);
  assert.equal(byId(await graphOf(page), 'tip').text, 'Call Ana first\nthen the team');
  await page.getByTestId('node-tip').dblclick();
  await editor.press('Control+A');
  await editor.pressSequentially('Short');
  const box = await page.getByTestId('canvas').boundingBox();
  await page.mouse.click(box.x + box.width - 60, box.y + 40);
  assert.equal(await editor.count(), 0, 'a click elsewhere closes it');
  assert.equal(byId(await graphOf(page), 'tip').text, 'Short');
  // One undo step back to the text before.
  await page.getByTestId('btn-undo').click();
  assert.equal(byId(await graphOf(page), 'tip').text, 'Call Ana first\nthen the team');
  // A double-click on another node opens nothing.
  await page.getByTestId('node-start').dblclick();
  assert.equal(await editor.count(), 0);
  assert.deepEqual(page.problems, []);
  await page.close();
});

const quick = {
  nodes: [{ id: 'start', type: 'trigger', mode: 'manual' }, { id: 'say', type: 'command', run: 'echo quick' }],
  edges: [{ from: 'start', to: 'say' }],
};

test('runs list: a run started elsewhere shows while every run listed has settled', async () => {
  await seed('quick', quick);
  const first = (await api(env.server, 'POST', '/designs/quick/run', {})).body;
  assert.equal(first.status, 'done');
  const page = await dashboard('#/runs?design=quick');
  await waitFor(page, 'the settled run listed', (id) => document.querySelector(`#runs tr[data-run="${id}"]`)?.dataset.status === 'done'
    && /1 run matching/.test(document.getElementById('runs-note')?.textContent || ''), first.run_id);
  // Every run on the page has settled, and the page still holds a read on the server.
  await untilHeld(env.server, 1);
  const started = Date.now();
  const second = (await api(env.server, 'POST', '/designs/quick/run', {})).body;
  const answered = Date.now() - started;
  await waitFor(page, 'the new run listed', (id) => document.querySelector(`#runs tr[data-run="${id}"]`) !== null, second.run_id);
  const listed = Date.now() - started;
  await waitFor(page, 'the new run listed done', (id) => document.querySelector(`#runs tr[data-run="${id}"]`)?.dataset.status === 'done', second.run_id);
  console.log(`the API answered the run after ${answered} ms; the runs list showed it after ${listed} ms, done after ${Date.now() - started} ms`);
  assert.deepEqual(await page.locator('#runs tbody tr[data-run]').evaluateAll((rows) => rows.map((r) => r.dataset.run)), [second.run_id, first.run_id]);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('runs list: runs started between two days, and runs that took at least so long (the server filters)', async () => {
  await seed('slow', {
    nodes: [{ id: 'start', type: 'trigger', mode: 'manual' }, { id: 'nap', type: 'command', run: 'sleep {{trigger.seconds}}' }],
    edges: [{ from: 'start', to: 'nap' }],
  });
  const slow = (await api(env.server, 'POST', '/designs/slow/run', { input: { seconds: 2.5 } })).body;
  const fast = (await api(env.server, 'POST', '/designs/slow/run', { input: { seconds: 0 } })).body;
  assert.deepEqual([slow.status, fast.status], ['done', 'done'], JSON.stringify(slow));
  const page = await dashboard('#/runs?design=slow');
  await waitFor(page, 'both runs', () => document.querySelectorAll('#runs tbody tr[data-run]').length === 2);
  // The days as the browser reads them (its own time zone).
  const days = await page.evaluate(() => {
    const day = (offset) => { const d = new Date(); d.setDate(d.getDate() + offset); return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`; };
    return { yesterday: day(-1), today: day(0), tomorrow: day(1) };
  });
  const rows = () => page.locator('#runs tbody tr[data-run]').evaluateAll((r) => r.map((x) => x.dataset.run));
  // Searches with `values` in the filter boxes; waits for the page that lists their runs (a
  // fresh one: the page before it is marked).
  const filterBy = async (values) => {
    await page.locator('#runs-note').evaluate((n) => { n.dataset.before = ''; });
    for (const [name, value] of Object.entries(values)) await page.locator(`#run-filters input[name="${name}"]`).fill(value);
    await page.locator('#run-filters').getByRole('button', { name: 'Search' }).click();
    // The list shown is the one for these filters (the note says which it lists).
    await waitFor(page, `the list for ${JSON.stringify(values)}`, (v) => {
      const note = document.querySelector('#runs-note:not([data-before])');
      const listed = new URLSearchParams(note?.dataset.filters ?? '-');
      return note && note.dataset.filters !== undefined && /run/.test(note.textContent || '')
        && Object.entries(v).every(([k, x]) => (listed.get(k) || '') === x)
        && listed.toString() === new URLSearchParams(location.hash.split('?')[1] || '').toString();
    }, values);
  };
  await filterBy({ from: days.today, to: days.today });
  assert.deepEqual((await rows()).sort(), [slow.run_id, fast.run_id].sort(), 'both started today');
  await filterBy({ from: days.tomorrow, to: '' });
  assert.deepEqual(await rows(), []);
  assert.match(await page.locator('#runs tbody').textContent(), /No matching runs/);
  await filterBy({ from: '', to: days.yesterday });
  assert.deepEqual(await rows(), []);
  // Took at least two seconds: the slow run only (each row says how long it took). The margin
  // keeps a fast run on a busy machine below the line.
  await filterBy({ to: '', min: '2s' });
  assert.deepEqual(await rows(), [slow.run_id]);
  assert.ok(Number(await page.locator(`#runs tr[data-run="${slow.run_id}"] td.took`).getAttribute('data-seconds')) >= 2.5);
  // A duration the server cannot read is refused, and the page says why.
  await page.locator('#run-filters input[name="min"]').fill('a while');
  await page.locator('#run-filters').getByRole('button', { name: 'Search' }).click();
  await waitFor(page, 'the refusal', () => /Cannot list runs: min_duration="a while"/.test(document.querySelector('#runs-note.error')?.textContent || ''));
  // Clear drops them all.
  await page.getByRole('link', { name: 'Clear' }).click();
  await waitFor(page, 'the cleared list', () => location.hash === '#/runs' && document.querySelectorAll('#runs tbody tr[data-run]').length >= 2);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('run page: every answer that says no (reject, deny, no, cancel, decline…) is drawn apart from the ones that go on', async () => {
  const options = ['approve', 'send', 'yes', 'reject', 'deny', 'no', 'cancel', 'decline'];
  await seed('asks', {
    nodes: [{ id: 'start', type: 'trigger', mode: 'manual' }, { id: 'gate', type: 'approval', question: 'Go?', options }],
    edges: [{ from: 'start', to: 'gate' }],
  });
  const run = (await api(env.server, 'POST', '/designs/asks/run', {})).body;
  const page = await dashboard(`#/runs/${run.run_id}`);
  await waitForRunStatus(page, 'awaiting_approval');
  const classes = await page.locator('#pending button[data-option]').evaluateAll((bs) => Object.fromEntries(bs.map((b) => [b.dataset.option, b.className])));
  assert.deepEqual(classes, { approve: 'primary', send: 'primary', yes: 'primary', reject: 'decline', deny: 'decline', no: 'decline', cancel: 'decline', decline: 'decline' });
  const colour = (o) => page.locator(`#pending button[data-option="${o}"]`).evaluate((b) => getComputedStyle(b).color);
  assert.notEqual(await colour('reject'), await colour('approve'), 'a different look, not only a class');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('dashboard designer: a Test run button like the standalone canvas\'s, and a link to the standalone designer', async () => {
  await seed('tested', { ...quick, pins: { say: 'from the pin' } });
  const page = await dashboard('#/designer/tested');
  await waitFor(page, 'the canvas to be ready', () => {
    const b = document.querySelector('button[data-action="test-run"]');
    return b && !b.disabled;
  });
  assert.equal(await page.locator('a#standalone').getAttribute('href'), 'designer.html?design=tested');
  // The link opens the standalone designer on the same design, with its own Test run.
  const [standalone] = await Promise.all([page.context().waitForEvent('page'), page.locator('a#standalone').click()]);
  await standalone.waitForFunction(() => window.vwfDesigner && window.vwfDesigner.getName() === 'tested');
  await standalone.getByTestId('node-say').waitFor();
  assert.equal(await standalone.getByTestId('btn-test-run').isVisible(), true);
  await standalone.close();

  await page.locator('button[data-action="test-run"]').click();
  await page.waitForURL(/#\/runs\/[0-9a-f]{12}$/);
  await waitForRunStatus(page, 'done');
  assert.equal(await page.locator('.title [data-test-run]').count(), 1, 'marked a test run');
  assert.match(await page.locator('#outputs details[data-node="say"] summary').textContent(), /from the pin/);
  const id = page.url().split('/').pop();
  assert.equal((await api(env.server, 'GET', `/runs/${id}`)).body.test, true);
  assert.deepEqual(page.problems, []);
  await page.close();
});
