// Writing expressions and running from the canvas, in a real Chromium against a real `vwf serve`:
// suggestions on `{{` and `out.` offer exactly what the validator lets a node read (its answer
// `scopes`, compared for every node of a design), with the fields and values of the design's last
// run; a reference's chip shows its value on hover; the field's verdict follows the typing;
// renaming a node rewrites its references and edges in one undoable step; a gate's question is
// rendered on the run page with what is being approved; the dashboard's "Save & run" takes the
// canvas's one run-input box and opens the run page at once, its canvas colouring steps as they
// settle; the embedded canvas shows its refusals and has its own undo, redo, import and export;
// opened from disk, suggestions say they need the server and renaming works offline.
// Every wait is for a condition; nothing sleeps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { serverAndBrowser, api, DOCS, ROOT } from './helpers.mjs';
import { random } from './generate.mjs';
import { openDesigner, openPage, graphOf, waitFor, canvasStates } from './canvas.mjs';

const env = serverAndBrowser();

async function seed(name, graph) {
  const r = await api(env.server, 'POST', `/designs/${name}`, { graph });
  assert.equal(r.body.ok, true, JSON.stringify(r.body));
}

/** trigger → fetch (JSON) → loop over its items (body) → check → draft, and a side branch. */
const feed = {
  nodes: [
    { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 160 },
    { id: 'fetch', type: 'command', argv: ['printf', '{"title":"Tea","items":[{"name":"green"},{"name":"black"}]}'], x: 260, y: 160 },
    { id: 'each', type: 'loop', over: '{{nodes.fetch.items}}', x: 480, y: 160 },
    { id: 'body', type: 'output', template: 'one {{item.name}}', x: 700, y: 40 },
    { id: 'check', type: 'condition', expr: 'out.fetch.title == "Tea"', x: 700, y: 260 },
    { id: 'draft', type: 'agent', prompt: 'Write about {{nodes.fetch.title}}', x: 920, y: 260 },
    { id: 'side', type: 'output', template: 'side {{trigger.topic}}', x: 260, y: 360 },
    { id: 'tip', type: 'note', text: 'a note', x: 40, y: 20 },
  ],
  edges: [
    { from: 'start', to: 'fetch' }, { from: 'fetch', to: 'each' },
    { from: 'each', to: 'body', label: 'each' }, { from: 'each', to: 'check', label: 'done' },
    { from: 'check', to: 'draft', label: 'true' }, { from: 'start', to: 'side' },
  ],
};

/** The suggestions on screen: their inserted text. */
const offered = (page) => page.locator('[data-testid="ac-item"]').evaluateAll((els) => els.map((e) => e.dataset.value));

/** The dashboard's designer page for `name`, once its canvas is ready (its buttons enabled). */
async function openDashboardDesigner(name) {
  const page = await openPage(env.browser, `${env.server.url}/#/designer/${name}`, { viewport: { width: 1280, height: 900 } });
  await waitFor(page, 'the canvas to be ready', () => {
    const b = [...document.querySelectorAll('button')].find((x) => x.textContent === 'Save & run');
    return b && !b.disabled;
  });
  return page;
}

/** Selects node `id`, empties field `key` and types `text` into it. */
async function typeInto(page, id, key, text) {
  await page.evaluate((n) => window.vwfDesigner.select(n), id);
  const field = page.getByTestId(`field-${key}`);
  await field.click();
  await field.press('Control+A');
  await field.press('Delete');
  await field.pressSequentially(text);
  return field;
}

/** Waits for the suggestions to list (at least) `some`; answers all of them. */
async function suggestionsWith(page, what, some) {
  await waitFor(page, what, (want) => {
    const got = [...document.querySelectorAll('[data-testid="ac-item"]')].map((e) => e.dataset.value);
    return want.every((w) => got.includes(w));
  }, some);
  return offered(page);
}

test('autocomplete offers what the validator lets each node read, with last-run fields and values', async () => {
  await seed('feed', feed);
  const ran = await api(env.server, 'POST', '/designs/feed/run', { input: { topic: 'tea', n: 2 } });
  assert.equal(ran.body.status, 'awaiting_agent', JSON.stringify(ran.body));
  const page = await openDesigner(env.browser, `${env.server.url}/designer.html?design=feed`);
  await waitFor(page, 'the first verdict', () => document.querySelector('[data-testid="issues"]').dataset.status === 'done');

  // For every node with a template or condition field, the node ids offered are exactly the ones
  // the validator's scope names (the server's answer, asked here directly).
  const { scopes } = (await api(env.server, 'POST', '/designs/feed/validate?scope=1', { graph: feed })).body;
  const fields = { each: ['over', '{{'], body: ['template', '{{'], check: ['expr', ''], draft: ['prompt', '{{'], side: ['template', '{{'] };
  for (const [id, [key, opener]] of Object.entries(fields)) {
    const before = feed.nodes.find((n) => n.id === id)[key];
    await typeInto(page, id, key, opener);
    const prefix = key === 'expr' ? 'out.' : 'nodes.';
    const want = scopes[id].nodes.map((n) => prefix + n);
    const got = await suggestionsWith(page, `suggestions for ${id}.${key}`, want);
    assert.deepEqual(got.filter((v) => v.startsWith(prefix)).sort(), want.sort(), `${id}: only what the validator lets it read`);
    if (key !== 'expr') {
      assert.ok(got.includes('trigger') && got.includes('run.id'), `${id}: ${got}`);
      assert.equal(got.includes('item'), scopes[id].loop !== null, `${id}: item only inside a loop body (${got})`);
      assert.equal(got.includes('loop.index'), scopes[id].loop !== null, `${id}: loop.index only inside a loop body`);
    }
    await page.getByTestId(`field-${key}`).press('Escape');
    assert.equal(await page.getByTestId('autocomplete').count(), 0, 'Escape closes the list');
    await page.getByTestId(`field-${key}`).fill(before);
  }
  assert.deepEqual(scopes.draft.nodes.sort(), ['check', 'each', 'fetch', 'start'], 'not the side branch, the loop body or itself');

  // After a node id: the fields of its output in the last run, with their values.
  let field = await typeInto(page, 'draft', 'prompt', 'About {{nodes.fetch.');
  const got = await suggestionsWith(page, 'fetch fields', ['nodes.fetch.title', 'nodes.fetch.items', 'nodes.fetch.text', 'nodes.fetch.words']);
  assert.ok(!got.includes('nodes.start'), 'only fields of fetch now');
  assert.match(await page.locator('[data-testid="ac-item"][data-value="nodes.fetch.title"]').innerText(), /Tea/, 'its value beside it');
  mkdirSync(DOCS, { recursive: true });
  await page.screenshot({ path: join(DOCS, 'autocomplete.png') });
  await field.pressSequentially('ti');
  await suggestionsWith(page, 'narrowed to title', ['nodes.fetch.title']);
  assert.deepEqual(await offered(page), ['nodes.fetch.title']);
  await field.press('Enter');
  assert.equal(await field.inputValue(), 'About {{nodes.fetch.title}}', 'the reference is completed and closed');
  await waitFor(page, 'the edit in the graph', () => window.vwfDesigner.getGraph().nodes.find((n) => n.id === 'draft').prompt === 'About {{nodes.fetch.title}}');

  // Deeper paths, one level at a time.
  await field.press('Control+A');
  await field.pressSequentially('{{nodes.fetch.items.');
  await suggestionsWith(page, 'array items', ['nodes.fetch.items.0', 'nodes.fetch.items.1']);
  await field.pressSequentially('0.');
  assert.deepEqual(await suggestionsWith(page, 'an item\'s field', ['nodes.fetch.items.0.name']), ['nodes.fetch.items.0.name']);
  await field.press('Tab');
  assert.equal(await field.inputValue(), '{{nodes.fetch.items.0.name}}');

  // Hovering a reference shows its value in the last run.
  await page.locator('[data-testid="ref"][data-ref="nodes.fetch.items.0.name"]').hover();
  assert.equal(await page.getByTestId('ref-value').innerText(), 'green');
  await page.getByTestId('palette-note').hover();
  assert.equal(await page.getByTestId('ref-value').count(), 0, 'the value hides again');

  // trigger fields: from the last run's input and from the run input box.
  field = await typeInto(page, 'draft', 'prompt', '{{trigger.');
  await suggestionsWith(page, 'the last run\'s input fields', ['trigger.topic', 'trigger.n']);
  await field.press('Escape');
  await page.evaluate(() => window.vwfDesigner.select(null));
  await page.getByTestId('run-input').fill('{"city": "Oslo"}');
  field = await typeInto(page, 'draft', 'prompt', '{{trigger.');
  await suggestionsWith(page, 'the run input box\'s fields beside the last run\'s', ['trigger.city', 'trigger.topic']);
  assert.match(await page.locator('[data-testid="ac-item"][data-value="trigger.city"]').innerText(), /Oslo/);
  await field.press('Escape');
  await page.evaluate(() => window.vwfDesigner.select(null));
  await page.getByTestId('run-input').fill('');

  // Inside the loop body: item fields from the loop's last items.
  field = await typeInto(page, 'body', 'template', 'one {{item.');
  await suggestionsWith(page, 'item fields', ['item.name']);
  await field.press('Enter');
  assert.equal(await field.inputValue(), 'one {{item.name}}');
  await page.locator('[data-testid="ref"][data-ref="item.name"]').hover();
  assert.equal(await page.getByTestId('ref-value').innerText(), 'green');

  // Conditions: out.<node>.<path>, and the value on hover.
  field = await typeInto(page, 'check', 'expr', 'out.fetch.');
  await suggestionsWith(page, 'condition fields', ['out.fetch.title', 'out.fetch.words']);
  await field.pressSequentially('title == "Tea"');
  assert.equal(await page.getByTestId('autocomplete').count(), 0, 'no suggestions past the reference');
  await page.locator('[data-testid="ref"][data-ref="out.fetch.title"]').hover();
  assert.equal(await page.getByTestId('ref-value').innerText(), 'Tea');

  // The validator's verdict on the field follows the typing.
  field = await typeInto(page, 'draft', 'prompt', 'About {{nodes.side}}');
  await waitFor(page, 'the verdict on the prompt', () => /not upstream/.test(document.querySelector('[data-testid="field-msg-prompt"]').textContent));
  await field.press('Control+A');
  await field.pressSequentially('About {{nodes.fetch}}');
  await waitFor(page, 'the verdict cleared', () => document.querySelector('[data-testid="field-msg-prompt"]').textContent === ''
    && document.querySelector('[data-testid="issues"]').dataset.status === 'done');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('renaming a node rewrites every reference and edge naming it, says how many, and undoes', async () => {
  const graph = {
    nodes: [
      { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 100 },
      { id: 'fetch', type: 'command', run: 'echo {"n": 3}', x: 240, y: 100 },
      { id: 'fetch.raw', type: 'command', argv: ['echo', '{{nodes.fetch}}'], x: 240, y: 240 },
      { id: 'check', type: 'condition', expr: 'out.fetch.data.n > 2', x: 440, y: 100 },
      { id: 'post', type: 'http', url: 'https://example.org/{{ nodes.fetch.data.n }}', method: 'POST',
        body: { n: '{{nodes.fetch.data.n}}', raw: '{{nodes.fetch.raw.words}}' }, x: 640, y: 100 },
      { id: 'say', type: 'output', template: '{{nodes.fetch}} / {{nodes.fetch.raw}}', x: 640, y: 240 },
      { id: 'about', type: 'note', text: 'fetch reads {{nodes.fetch.text}}, not {{nodes.fetchy}}', x: 40, y: 240 },
    ],
    edges: [
      { from: 'start', to: 'fetch' }, { from: 'fetch', to: 'fetch.raw' }, { from: 'fetch', to: 'check' },
      { from: 'check', to: 'post', label: 'true' }, { from: 'fetch.raw', to: 'say' }, { from: 'fetch', to: 'say' },
      { from: 'fetch.raw', to: 'post' },
    ],
  };
  const page = await openDesigner(env.browser, `${env.server.url}/designer.html`);
  await page.evaluate((g) => window.vwfDesigner.setGraph(g), graph);
  await page.evaluate(() => window.vwfDesigner.select('fetch'));
  const id = page.getByTestId('field-id');
  await id.fill('load');
  await id.press('Enter');
  await waitFor(page, 'the rename', () => !!window.vwfDesigner.getGraph().nodes.find((n) => n.id === 'load'));
  const renamed = await graphOf(page);
  const node = (gr, i) => gr.nodes.find((n) => n.id === i);
  assert.equal(node(renamed, 'fetch.raw').argv[1], '{{nodes.load}}');
  assert.equal(node(renamed, 'check').expr, 'out.load.data.n > 2');
  assert.equal(node(renamed, 'post').url, 'https://example.org/{{ nodes.load.data.n }}');
  assert.deepEqual(node(renamed, 'post').body, { n: '{{nodes.load.data.n}}', raw: '{{nodes.fetch.raw.words}}' }, 'fetch.raw is another node');
  assert.equal(node(renamed, 'say').template, '{{nodes.load}} / {{nodes.fetch.raw}}');
  assert.equal(node(renamed, 'about').text, 'fetch reads {{nodes.load.text}}, not {{nodes.fetchy}}');
  assert.deepEqual(renamed.edges.map((e) => `${e.from}>${e.to}`),
    ['start>load', 'load>fetch.raw', 'load>check', 'check>post', 'fetch.raw>say', 'load>say', 'fetch.raw>post']);
  // 6 references, 4 edges (each with one end on it).
  assert.match(await page.getByTestId('status').innerText(), /Renamed fetch to load: 10 places changed \(6 references, 4 edge ends\)/);
  await waitFor(page, 'the renamed design judged valid', () => document.querySelector('[data-testid="issues"]').dataset.status === 'done'
    && document.querySelector('[data-testid="issues"]').dataset.errors === '0');

  // A taken id is refused, nothing changes.
  await page.evaluate(() => window.vwfDesigner.select('check'));
  await page.getByTestId('field-id').fill('post');
  await page.getByTestId('field-id').press('Enter');
  assert.match(await page.getByTestId('status').innerText(), /another node is called post/);
  assert.deepEqual(await graphOf(page), renamed);

  // One undo step puts everything back; redo renames again.
  await page.getByTestId('btn-undo').click();
  assert.deepEqual(await graphOf(page), graph);
  await page.getByTestId('btn-redo').click();
  assert.deepEqual(await graphOf(page), renamed);
  assert.deepEqual(page.problems, []);
  await page.close();
});

/** A chain of steps whose ids prefix each other (`a`, `a.b`, `ab`…), each reading earlier steps
 * through `{{nodes.…}}` with paths and spacing, conditions through `out.…`. */
function prefixDesign(seed) {
  const r = random(seed);
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  const pool = ['a', 'a.b', 'a.b.c', 'ab', 'b', 'a.bc', 'x.y', 'x'].sort(() => r() - 0.5);
  const ids = pool.slice(0, 3 + Math.floor(r() * 5));
  // A reference to an earlier step: its id and a path, unless the two read as a longer id
  // (`a` + `.b.c` is `a.b` + `.c`) that is not an earlier step.
  const dotted = (earlier) => {
    const id = pick(earlier);
    const path = pick(['', '.text', '.words', '.data.b', '.b.c', '.c']);
    const longest = ids.filter((i) => (id + path) === i || (id + path).startsWith(i + '.')).sort((x, y) => y.length - x.length)[0];
    return earlier.includes(longest) ? id + path : id;
  };
  const ref = (earlier) => pick(['{{nodes.%}}', '{{ nodes.% }}', '{{nodes.%  }}']).replace('%', dotted(earlier));
  const nodes = [{ id: 'start', type: 'trigger', mode: 'manual', x: 0, y: 0 }];
  const edges = [];
  ids.forEach((id, i) => {
    const earlier = ids.slice(0, i);
    let node;
    if (earlier.length && r() < 0.3) node = { id, type: 'condition', expr: `out.${dotted(earlier)} > 1` };
    else if (earlier.length) node = { id, type: 'agent', prompt: Array.from({ length: 1 + Math.floor(r() * 3) }, () => ref(earlier)).join(' and ') };
    else node = { id, type: 'agent', prompt: 'first' };
    nodes.push({ ...node, x: 200 * (i + 1), y: 0 });
    const from = i === 0 ? 'start' : ids[i - 1];
    const prev = nodes[i];
    edges.push(prev.type === 'condition' ? { from, to: id, label: 'true' } : { from, to: id });
  });
  return { graph: { nodes, edges }, old: pick(ids) };
}

/** The ids each reference of a graph resolves to (longest known id prefix), with its path. */
function resolved(graph) {
  const ids = graph.nodes.map((n) => n.id);
  const out = [];
  const resolve = (dotted) => {
    const id = ids.filter((i) => dotted === i || dotted.startsWith(i + '.')).sort((x, y) => y.length - x.length)[0];
    return id === undefined ? ['?', dotted] : [id, dotted.slice(id.length)];
  };
  for (const n of graph.nodes) {
    if (typeof n.prompt === 'string') for (const m of n.prompt.matchAll(/\{\{\s*nodes\.([^\s}]+)\s*\}\}/g)) out.push([n.id, ...resolve(m[1])]);
    if (typeof n.expr === 'string') out.push([n.id, ...resolve(/^out\.(\S+)/.exec(n.expr)[1])]);
  }
  return out;
}

test('renaming keeps what every reference means, over generated designs whose ids prefix each other', async () => {
  const page = await openDesigner(env.browser, `${env.server.url}/designer.html`);
  const cases = 25;
  for (let seed = 1; seed <= cases; seed++) {
    const { graph, old } = prefixDesign(seed);
    const verdict = await api(env.server, 'POST', '/designs/gen/validate', { graph });
    assert.deepEqual(verdict.body.errors, [], `seed ${seed}: the generated design is valid`);
    await page.evaluate((g) => window.vwfDesigner.setGraph(g), graph);
    await page.evaluate((id) => window.vwfDesigner.select(id), old);
    await page.getByTestId('field-id').fill('renamed');
    await page.getByTestId('field-id').press('Enter');
    const after = await graphOf(page);
    const rename = (id) => (id === old ? 'renamed' : id);
    const expected = resolved(graph).map(([at, id, path]) => [rename(at), rename(id), path]);
    assert.deepEqual(resolved(after), expected, `seed ${seed}: renaming ${old} keeps every reference's meaning`);
    const refs = expected.filter(([, id]) => id === 'renamed').length;
    const ends = graph.edges.reduce((k, e) => k + (e.from === old) + (e.to === old), 0);
    assert.match(await page.getByTestId('status').innerText(), new RegExp(`${refs + ends} places? changed \\(${refs} references?, ${ends} edge ends?\\)`), `seed ${seed}`);
    assert.deepEqual((await api(env.server, 'POST', '/designs/gen/validate', { graph: after })).body.errors, [], `seed ${seed}: still valid`);
    await page.getByTestId('btn-undo').click();
    assert.deepEqual(await graphOf(page), graph, `seed ${seed}: one undo`);
  }
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('a gate renders its question and the run page shows what is being approved', async () => {
  const gated = {
    nodes: [
      { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 100 },
      { id: 'build', type: 'command', argv: ['printf', 'v1.2 built'], x: 240, y: 100 },
      { id: 'gate', type: 'approval', question: 'Ship {{nodes.build}} to {{trigger.env}}?', options: ['ship', 'stop'], x: 440, y: 100 },
      { id: 'done', type: 'output', template: 'shipped', x: 640, y: 100 },
    ],
    edges: [{ from: 'start', to: 'build' }, { from: 'build', to: 'gate' }, { from: 'gate', to: 'done', label: 'ship' }],
  };
  await seed('gated', gated);

  // The canvas: the question offers references, and the validator checks them.
  const canvas = await openDesigner(env.browser, `${env.server.url}/designer.html?design=gated`);
  await waitFor(canvas, 'the first verdict', () => document.querySelector('[data-testid="issues"]').dataset.status === 'done');
  const field = await typeInto(canvas, 'gate', 'question', 'Ship {{');
  await suggestionsWith(canvas, 'the question\'s suggestions', ['nodes.start', 'nodes.build', 'trigger']);
  await field.press('Escape');
  await field.pressSequentially('nodes.done}}?');
  await waitFor(canvas, 'the verdict on the question', () => /not upstream/.test(document.querySelector('[data-testid="field-msg-question"]').textContent));
  assert.deepEqual(canvas.problems, []);
  await canvas.close();

  const run = (await api(env.server, 'POST', '/designs/gated/run', { input: { env: 'prod' } })).body;
  assert.equal(run.status, 'awaiting_approval', JSON.stringify(run));
  const page = await openPage(env.browser, `${env.server.url}/#/runs/${run.run_id}`, { viewport: { width: 1280, height: 900 } });
  await waitFor(page, 'the gate card', () => !!document.querySelector('#pending .question'));
  assert.equal(await page.locator('#pending .question').innerText(), 'Ship v1.2 built to prod?');
  assert.equal(await page.locator('#pending [data-output="build"] pre').innerText(), 'v1.2 built');
  assert.equal(await page.locator('#pending [data-output="trigger"] pre').innerText(), '{"env":"prod"}');
  assert.equal(await page.locator('#pending button[data-option]').count(), 2);
  // The run view of the canvas says the same when the gate is selected.
  const view = page.frameLocator('iframe.canvas');
  await view.getByTestId('node-gate').click();
  await waitFor(page, 'the canvas run view to show the gate', () => /v1\.2 built/.test(document.querySelector('iframe.canvas')?.contentDocument?.querySelector('[data-testid="pending"]')?.textContent || ''));
  assert.match(await view.getByTestId('pending').innerText(), /Ship v1\.2 built to prod\?[\s\S]*build:\nv1\.2 built/);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('dashboard: one run-input box; Save & run opens the run page at once and the canvas colours as steps finish', async () => {
  const release = join(env.server.home, 'release');
  const held = {
    example_input: { who: 'Ada' },
    nodes: [
      { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 100 },
      { id: 'hold', type: 'command', argv: ['sh', '-c', 'while [ ! -e "$1" ]; do sleep 0.05; done; printf held', 'sh', release], x: 240, y: 100 },
      { id: 'greet', type: 'output', template: 'hello {{trigger.who}} after {{nodes.hold}}', x: 440, y: 100 },
    ],
    edges: [{ from: 'start', to: 'hold' }, { from: 'hold', to: 'greet' }],
  };
  await seed('held', held);
  const page = await openDashboardDesigner('held');
  const frame = page.frameLocator('iframe.canvas');
  // One box: the canvas's, filled from the design's example input; the page has none of its own.
  assert.equal(await page.locator('textarea').count(), 0, 'no second run-input box on the page');
  const box = frame.getByTestId('run-input');
  assert.deepEqual(JSON.parse(await box.inputValue()), { who: 'Ada' });
  await box.fill('{"who": "Grace"}');

  await page.getByRole('button', { name: 'Save & run' }).click();
  // The run page opens while the first step is still held.
  await page.waitForURL(/#\/runs\/[0-9a-f]{12}$/);
  const runId = page.url().split('/').pop();
  await waitFor(page, 'the canvas to show the held step running', `(${canvasStates})().hold === 'running'`);
  assert.equal((await api(env.server, 'GET', `/runs/${runId}`)).body.status, 'running', 'opened before the run finished');
  writeFileSync(release, '');
  await waitFor(page, 'the canvas to colour the finished steps',
    `(${canvasStates})().hold === 'done' && (${canvasStates})().greet === 'done'`);
  await waitFor(page, 'the page to say done', () => document.querySelector('.title')?.dataset.status === 'done');
  const done = (await api(env.server, 'GET', `/runs/${runId}`)).body;
  assert.equal(done.outputs.greet.text, 'hello Grace after held', 'the run took the box\'s input');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('dashboard: the embedded canvas says why a connection is refused, and has undo, redo, import and export', async () => {
  await seed('embedded', {
    nodes: [
      { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 100 },
      { id: 'say', type: 'output', template: 'hi', x: 300, y: 100 },
    ],
    edges: [{ from: 'start', to: 'say' }],
  });
  const page = await openDashboardDesigner('embedded');
  const frame = page.frameLocator('iframe.canvas');
  for (const b of ['btn-undo', 'btn-redo', 'btn-import', 'btn-export']) assert.ok(await frame.getByTestId(b).isVisible(), `${b} shown`);
  for (const b of ['btn-save', 'btn-run', 'design-name']) assert.equal(await frame.getByTestId(b).isVisible(), false, `${b} is the page's job`);

  // A connection into the trigger is refused, and the canvas says why.
  await frame.getByTestId('port-out-say').dragTo(frame.getByTestId('node-start'));
  assert.match(await frame.getByTestId('status').innerText(), /Not connected: nothing may lead into a trigger/);
  assert.ok(await frame.getByTestId('status').isVisible());

  // Undo and redo from the canvas's own buttons.
  await frame.getByTestId('palette-note').click();
  await frame.getByTestId('node-note1').waitFor();
  await frame.getByTestId('btn-undo').click();
  assert.equal(await frame.getByTestId('node-note1').count(), 0);
  await frame.getByTestId('btn-redo').click();
  await frame.getByTestId('node-note1').waitFor();
  await waitFor(page, 'the page to count the edit unsaved', () => document.getElementById('design-state')?.textContent === 'unsaved changes');

  // Export shows the graph; import replaces it.
  await frame.getByTestId('btn-export').click();
  const exported = JSON.parse(await frame.getByTestId('export-text').inputValue());
  assert.deepEqual(exported.nodes.map((n) => n.id), ['start', 'say', 'note1']);
  await frame.getByTestId('dialog-export').getByRole('button', { name: 'Close' }).click();
  await frame.getByTestId('btn-import').click();
  await frame.getByTestId('import-text').fill(JSON.stringify({ nodes: [{ id: 'only', type: 'trigger', mode: 'manual' }], edges: [] }));
  await frame.getByTestId('import-load').click();
  await frame.getByTestId('node-only').waitFor();
  assert.match(await frame.getByTestId('status').innerText(), /Imported 1 nodes/);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('file://: without a server the suggestions say what they need, and renaming still works', async () => {
  const page = await openDesigner(env.browser, pathToFileURL(join(ROOT, 'web', 'designer.html')).href);
  await page.evaluate(() => window.vwfDesigner.setGraph({
    nodes: [{ id: 'start', type: 'trigger', mode: 'manual', x: 0, y: 0 }, { id: 'a', type: 'agent', prompt: 'p', x: 240, y: 0 },
      { id: 'b', type: 'agent', prompt: 'p', x: 480, y: 0 }],
    edges: [{ from: 'start', to: 'a' }, { from: 'a', to: 'b' }],
  }));
  await typeInto(page, 'b', 'prompt', 'Use {{');
  await waitFor(page, 'the note', () => /need the server/.test(document.querySelector('[data-testid="autocomplete"]')?.textContent || ''));
  assert.equal(await page.getByTestId('ac-item').count(), 0, 'no scope is guessed without the validator');
  await page.getByTestId('field-prompt').pressSequentially('nodes.a}}');
  await page.evaluate(() => window.vwfDesigner.select('a'));
  await page.getByTestId('field-id').fill('first');
  await page.getByTestId('field-id').press('Enter');
  assert.equal((await graphOf(page)).nodes[2].prompt, 'Use {{nodes.first}}');
  assert.match(await page.getByTestId('status').innerText(), /3 places changed/);
  assert.deepEqual(page.problems, []);
  await page.close();
});
