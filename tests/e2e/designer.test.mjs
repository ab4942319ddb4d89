// The canvas (web/designer.html) in a real Chromium: a design built with the mouse against a real
// `vwf serve` (saved, judged by the server, fixed, exported, run, and its gate answered on the
// dashboard's run page with every node coloured), edges cut from the keyboard, the
// read-only run view the dashboard embeds, the embedding contract (window.vwfDesigner and the
// messages to the parent), and the page opened from disk with no server at all.
// The graphs the canvas exports are written to tests/fixtures/gui/ for the Rust suite
// (crates/vwf/tests/gui_fixtures.rs), which validates and runs them through the CLI and the API.
// Every wait is for a selector or a condition; nothing sleeps.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startServer, launch, newPage, saveFixture, api, ROOT, DOCS } from './helpers.mjs';
import {
  openDesigner, graphOf, byId, drop, connect, exported,
  canvasStates, canvasShowsEveryNode, waitFor, waitForCanvasStates, waitForRunStatus, boxOf,
} from './canvas.mjs';

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

/** The canvas at `url` (a page that records page errors; each test ends by asserting there were none). */
const openPage = (url, viewport) => openDesigner(browser, url, viewport);

/** The parsed relative luminance contrast of two CSS rgb() colours. */
function contrast(a, b) {
  const lum = (c) => {
    const [r, g, bl] = c.match(/[\d.]+/g).slice(0, 3).map(Number).map((v) => {
      const s = v / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

/** Computed colours of every node: box fill, title fill, and the canvas behind them. */
function nodeColours() {
  const canvas = getComputedStyle(document.querySelector('[data-testid="canvas"]')).backgroundColor;
  return [...document.querySelectorAll('g.node')].map((g) => ({
    id: g.dataset.nodeId,
    box: getComputedStyle(g.querySelector('.box')).fill,
    text: getComputedStyle(g.querySelector('.title, .detail')).fill,
    canvas,
  }));
}

function assertLegible(colours, theme) {
  assert.ok(colours.length > 0, 'nodes drawn');
  for (const c of colours) {
    for (const v of [c.box, c.text]) {
      assert.match(v, /^rgb\(/, `${theme} ${c.id}: an opaque colour, got ${v}`);
    }
    assert.notEqual(c.box, c.text, `${theme} ${c.id}: text and box differ`);
    assert.ok(contrast(c.box, c.text) >= 4.5, `${theme} ${c.id}: text contrast ${contrast(c.box, c.text).toFixed(2)} (${c.text} on ${c.box})`);
    assert.notEqual(c.canvas, 'rgba(0, 0, 0, 0)', `${theme}: the canvas has a background`);
  }
}

test('served: a design built by mouse is saved, flagged, fixed, exported, run, and answered on the run page with every node coloured', async () => {
  const page = await openPage(`${server.url}/designer.html`);

  // Every node type is offered.
  for (const type of ['trigger', 'agent', 'condition', 'approval', 'output', 'note', 'command', 'http', 'loop', 'wait', 'emit']) {
    await page.getByTestId(`palette-${type}`).waitFor();
  }

  // Drag six node types onto the canvas; ids are generated per type.
  await drop(page, 'note', 110, 80);
  await drop(page, 'trigger', 110, 260);
  await drop(page, 'command', 320, 260);
  await drop(page, 'condition', 530, 260);
  await drop(page, 'approval', 740, 260);
  await drop(page, 'output', 950, 260);
  await drop(page, 'output', 740, 420, 'output2');

  // The note is a sticky: no ports. The trigger has no input port.
  assert.equal(await page.getByTestId('port-in-note1').count(), 0);
  assert.equal(await page.getByTestId('port-out-note1').count(), 0);
  assert.equal(await page.getByTestId('port-in-trigger1').count(), 0);

  // Connect by dragging from output ports; a condition has a port for each branch, and its
  // edges are labelled by the port they leave (the panel can still change the label).
  await connect(page, 'trigger1', 'command1');
  await connect(page, 'command1', 'condition1');
  assert.equal(await page.getByTestId('port-out-condition1').count(), 0, 'no unlabelled port on a condition');
  await connect(page, 'condition1', 'approval1', 'true');
  const conditionLabels = await page.getByTestId('edge-label').locator('option').allTextContents();
  assert.deepEqual(conditionLabels.slice(1), ['true', 'false'], 'a condition edge offers true/false');
  assert.equal(await page.getByTestId('edge-label').inputValue(), 'true');
  await connect(page, 'condition1', 'output2', 'false');
  assert.equal(await page.getByTestId('edge-label').inputValue(), 'false');

  // Fill fields in the panel by typing.
  await page.getByTestId('node-command1').click();
  await page.getByTestId('field-run').pressSequentially('echo hello');
  await page.getByTestId('field-label').fill('Say hello');
  await page.getByTestId('node-condition1').click();
  await page.getByTestId('field-expr').pressSequentially('out.command1.exit_code == 0');
  await page.getByTestId('node-approval1').click();
  await page.getByTestId('field-question').fill('Send it?');
  await page.getByTestId('field-options').fill('send\nskip');
  await page.getByTestId('node-output1').click();
  await page.getByTestId('field-template').fill('Command said: {{nodes.command1}}');
  await page.getByTestId('node-output2').click();
  await page.getByTestId('field-template').fill('The command failed');
  await page.getByTestId('node-note1').click();
  await page.getByTestId('field-text').fill('Built with the mouse by the browser test');

  // The approval has a port for each of its own options.
  await connect(page, 'approval1', 'output1', 'send');
  const approvalLabels = await page.getByTestId('edge-label').locator('option').allTextContents();
  assert.deepEqual(approvalLabels.slice(1), ['send', 'skip'], 'an approval edge offers its options');
  assert.equal(await page.getByTestId('edge-label').inputValue(), 'send');

  // A note takes no edges: dropping a connection on it adds nothing.
  const before = (await graphOf(page)).edges.length;
  await page.getByTestId('port-out-output1').dragTo(page.getByTestId('node-note1'));
  assert.equal((await graphOf(page)).edges.length, before, 'no edge into a note');

  // Save under a name.
  await page.getByTestId('design-name').fill('built');
  await page.getByTestId('design-name').press('Enter');
  await page.getByTestId('btn-save').click();
  await page.getByTestId('status').filter({ hasText: 'Saved built' }).waitFor();
  const saved = await api(server, 'GET', '/designs/built');
  assert.equal(saved.body.ok, true);
  assert.deepEqual(saved.body.graph, await graphOf(page), 'the server holds exactly the canvas graph');

  // A bad condition is flagged on its node and its field by the server.
  await page.getByTestId('node-condition1').click();
  await page.getByTestId('field-expr').fill('');
  await page.getByTestId('field-expr').pressSequentially('x > 1');
  await page.locator('[data-testid="issue-condition1"].error').waitFor();
  await page.locator('[data-testid="issues"][data-status="done"]').waitFor();
  const item = page.getByTestId('issue-item').filter({ hasText: 'condition1 · expr' });
  await item.waitFor();
  assert.match(await item.innerText(), /out\./, 'the message explains the expected form');
  assert.equal(await page.getByTestId('field-expr').getAttribute('aria-invalid'), 'true');
  assert.match(await page.getByTestId('field-msg-expr').innerText(), /condition must start/);
  assert.equal(await page.locator('g.node.has-error').count(), 1, 'only the condition is in error');

  // Saving it is refused, and the refusal is shown; the saved design is unchanged.
  await page.getByTestId('btn-save').click();
  await page.getByTestId('status').filter({ hasText: 'Not saved' }).waitFor();
  assert.equal((await api(server, 'GET', '/designs/built')).body.graph.nodes.find((n) => n.id === 'condition1').expr, 'out.command1.exit_code == 0');

  // Clicking a message selects what it names.
  await page.getByTestId('node-trigger1').click();
  await item.click();
  assert.equal(await page.getByTestId('field-expr').inputValue(), 'x > 1');

  // Fixed, it validates clean (the server's verdict: no errors).
  await page.getByTestId('field-expr').fill('out.command1.exit_code == 0');
  await page.getByTestId('btn-validate').click();
  await page.locator('[data-testid="issues"][data-status="done"][data-errors="0"]').waitFor();
  assert.equal(await page.locator('[data-testid="issue-condition1"].error').count(), 0);
  assert.equal(await page.locator('g.node.has-error').count(), 0);
  const verdict = await page.evaluate(() => window.vwfDesigner.validate());
  assert.deepEqual(verdict.errors, []);

  await page.getByTestId('btn-save').click();
  await page.getByTestId('status').filter({ hasText: 'Saved built' }).waitFor();

  // Export: the exact graph, as the canvas and the server hold it.
  const graph = await exported(page);
  assert.deepEqual(graph, await graphOf(page));
  assert.deepEqual(graph, (await api(server, 'GET', '/designs/built')).body.graph);
  assert.deepEqual(graph.nodes.map((n) => `${n.type}:${n.id}`),
    ['note:note1', 'trigger:trigger1', 'command:command1', 'condition:condition1', 'approval:approval1', 'output:output1', 'output:output2']);
  assert.deepEqual(graph.edges, [
    { from: 'trigger1', to: 'command1' },
    { from: 'command1', to: 'condition1' },
    { from: 'condition1', to: 'approval1', label: 'true' },
    { from: 'condition1', to: 'output2', label: 'false' },
    { from: 'approval1', to: 'output1', label: 'send' },
  ]);
  assert.deepEqual(byId(graph, 'approval1').options, ['send', 'skip']);
  assert.equal(byId(graph, 'command1').run, 'echo hello');
  assert.equal(byId(graph, 'command1').label, 'Say hello');
  for (const n of graph.nodes) assert.ok(Number.isFinite(n.x) && Number.isFinite(n.y), `${n.id} has a position`);
  saveFixture('designer-built', graph);

  // Run: the server runs the saved design; the canvas shows the state and links the run.
  await page.getByTestId('btn-run').click();
  await page.getByTestId('run-link').waitFor();
  const href = await page.getByTestId('run-link').getAttribute('href');
  assert.match(href, /^index\.html#\/runs\/[0-9a-f]{12}$/);
  // The run answers once it has started; the canvas colours its steps as they settle.
  await page.locator('[data-testid="node-approval1"][data-state="pending"]').waitFor();
  assert.equal(await page.getByTestId('node-command1').getAttribute('data-state'), 'done');
  assert.equal(await page.getByTestId('node-output2').getAttribute('data-state'), 'skipped', 'the false branch is not taken');

  // Follow the link to the dashboard's run page: the run waits at the gate, and the embedded
  // canvas (run mode) shows where it stands. It draws the plan the run started with, and a note
  // is not part of a run: it is not drawn there.
  const runId = href.split('/').pop();
  await page.getByTestId('run-link').click();
  await page.waitForURL((u) => u.pathname.endsWith('/index.html') && u.hash === `#/runs/${runId}`);
  await waitForRunStatus(page, 'awaiting_approval');
  assert.match(await page.locator('#pending').innerText(), /Send it\?/);
  assert.deepEqual(await page.locator('#pending button[data-option]').evaluateAll((bs) => bs.map((b) => b.dataset.option)), ['send', 'skip']);
  const atGate = { trigger1: 'done', command1: 'done', condition1: 'done', approval1: 'pending', output1: null, output2: 'skipped' };
  await waitForCanvasStates(page, 'the run view to show the gate pending', atGate);

  // Answer the gate on the run page; the run finishes and every node of the run is coloured.
  await page.locator('#pending button[data-option="send"]').click();
  await waitForRunStatus(page, 'done');
  assert.equal(await page.locator('#pending').isHidden(), true, 'nothing left to answer');
  assert.equal(await page.locator('#steps tr[data-node="approval1"]').getAttribute('data-status'), 'done');
  assert.match(await page.locator('#outputs details[data-node="output1"] pre').first().textContent(), /Command said: hello/);
  const finished = { trigger1: 'done', command1: 'done', condition1: 'done', approval1: 'done', output1: 'done', output2: 'skipped' };
  await waitForCanvasStates(page, 'the run view to colour every node', finished);
  assert.deepEqual(await page.evaluate(canvasStates), finished, 'every node of the run, coloured');
  assert.equal(await page.frameLocator('iframe.canvas').getByTestId('node-note1').count(), 0, 'the note is not part of the run');
  await waitFor(page, 'every node to be visible in the run view', `(${canvasShowsEveryNode})()`);

  const ran = (await api(server, 'GET', `/runs/${runId}`)).body;
  assert.equal(ran.status, 'done');
  assert.equal(ran.design, 'built');
  assert.deepEqual(ran.skipped, ['output2']);
  assert.equal(ran.outputs.approval1.answer, 'send');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('served: every node type\'s panel writes the contract\'s JSON; templates open from the list', async () => {
  const page = await openPage(`${server.url}/designer.html`);
  const add = async (type) => {
    await page.getByTestId(`palette-${type}`).click();
    await page.getByTestId(`node-${type}1`).waitFor();
  };

  // Trigger: the mode picks its fields; a weekly schedule is an object with a numeric day.
  await add('trigger');
  assert.equal(await page.getByTestId('field-mode').inputValue(), 'manual');
  await page.getByTestId('field-mode').selectOption('schedule');
  await page.getByTestId('field-schedule.preset').selectOption('weekly');
  await page.getByTestId('field-schedule.time').fill('25:00');
  await page.getByTestId('field-schedule.dow').selectOption('1');
  await page.getByTestId('field-schedule.tz').fill('Europe/Paris');
  assert.equal(await page.getByTestId('field-schedule.cron').count(), 0, 'cron belongs to the custom preset');
  assert.deepEqual(byId(await graphOf(page), 'trigger1').schedule, { preset: 'weekly', time: '25:00', dow: 1, tz: 'Europe/Paris' });
  // The server's complaint about the schedule lands on the schedule's fields.
  await page.locator('[data-testid="issue-trigger1"].error').waitFor();
  await page.locator('.field.error[data-field="schedule.time"]').waitFor();
  await page.getByTestId('field-schedule.time').fill('09:00');
  await page.getByTestId('btn-validate').click();
  await page.locator('[data-testid="issues"][data-status="done"]').waitFor();
  assert.equal(await page.locator('[data-testid="issue-trigger1"].error').count(), 0);
  await page.getByTestId('field-mode').selectOption('heartbeat');
  await page.getByTestId('field-every').fill('30m');
  await page.getByTestId('field-window').fill('08:00-18:00');
  await page.getByTestId('field-mode').selectOption('event');
  await page.getByTestId('field-sources').fill('report.ready\nalerts.*');
  const trigger = byId(await graphOf(page), 'trigger1');
  assert.equal(trigger.mode, 'event');
  assert.deepEqual(trigger.sources, ['report.ready', 'alerts.*']);
  assert.equal(trigger.every, '30m', 'fields of another mode are kept');

  // Agent: numbers are numbers; the prompt is a template.
  await add('agent');
  await page.getByTestId('field-prompt').fill('Summarise {{trigger}}');
  await page.getByTestId('field-retries').fill('2');
  await page.getByTestId('field-max_tokens').fill('500');
  await page.getByTestId('field-profile').fill('writer');
  // HTTP: headers are an object, a template body stays text, accept takes "2xx".
  await add('http');
  await page.getByTestId('field-method').selectOption('POST');
  await page.getByTestId('field-url').fill('https://example.org/hook');
  await page.getByTestId('field-headers').fill('{"Accept": "application/json"}');
  await page.getByTestId('field-body').fill('{{nodes.agent1}}');
  await page.getByTestId('field-accept').fill('2xx');
  // Emit: a JSON payload is JSON.
  await add('emit');
  await page.getByTestId('field-event').fill('report.ready');
  await page.getByTestId('field-payload').fill('{"from": "{{run.id}}"}');
  // Wait, loop, output, command, approval, condition, note.
  await add('wait');
  await page.getByTestId('field-seconds').fill('5');
  await add('loop');
  await page.getByTestId('field-over').fill('{{nodes.http1.body}}');
  await page.getByTestId('field-concurrency').fill('2');
  await add('output');
  assert.equal(await page.getByTestId('field-target').count(), 0, 'no target until it delivers');
  await page.getByTestId('field-deliver').selectOption('channel');
  await page.getByTestId('field-target').fill('telegram:123456');
  await add('command');
  await page.getByTestId('field-argv').fill('printf\n%s\nhello');
  await page.getByTestId('field-env').fill('{"LANG": "C"}');
  await add('approval');
  await page.getByTestId('field-timeout_minutes').fill('60');
  await page.getByTestId('field-on_timeout').selectOption('escalate');
  await add('note');
  await page.getByTestId('field-color').selectOption('green');

  const g = await graphOf(page);
  assert.deepEqual(byId(g, 'agent1'), { id: 'agent1', type: 'agent', x: byId(g, 'agent1').x, y: byId(g, 'agent1').y, prompt: 'Summarise {{trigger}}', retries: 2, max_tokens: 500, profile: 'writer' });
  const http = byId(g, 'http1');
  assert.deepEqual([http.method, http.url, http.headers, http.body, http.accept], ['POST', 'https://example.org/hook', { Accept: 'application/json' }, '{{nodes.agent1}}', '2xx']);
  assert.deepEqual(byId(g, 'emit1').payload, { from: '{{run.id}}' });
  assert.equal(byId(g, 'wait1').seconds, 5);
  assert.equal(byId(g, 'loop1').concurrency, 2);
  assert.deepEqual([byId(g, 'output1').deliver, byId(g, 'output1').target], ['channel', 'telegram:123456']);
  assert.deepEqual(byId(g, 'command1').argv, ['printf', '%s', 'hello']);
  assert.deepEqual(byId(g, 'command1').env, { LANG: 'C' });
  assert.deepEqual([byId(g, 'approval1').timeout_minutes, byId(g, 'approval1').on_timeout], [60, 'escalate']);
  assert.equal(byId(g, 'note1').color, 'green');

  // A loop's edges are labelled each / done by the port they leave.
  await connect(page, 'loop1', 'wait1', 'done');
  assert.deepEqual((await page.getByTestId('edge-label').locator('option').allTextContents()).slice(1), ['each', 'done']);
  const built = await graphOf(page);
  assert.equal(built.edges.find((e) => e.from === 'loop1').label, 'done');

  // Open lists saved designs and templates; a template keeps its extra fields.
  await page.getByTestId('btn-open').click();
  await page.getByTestId('open-template-morning-brief').click();
  await page.getByTestId('node-brief').waitFor();
  const template = JSON.parse(readFileSync(join(ROOT, 'examples', 'morning-brief.designer.json'), 'utf8'));
  assert.deepEqual(await graphOf(page), template, 'a template opens exactly as shipped');
  assert.equal(await page.getByTestId('design-name').inputValue(), 'morning-brief');
  // Undo returns to the design before it.
  await page.getByTestId('btn-undo').click();
  await page.getByTestId('node-http1').waitFor();
  assert.deepEqual(await graphOf(page), built);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('served: an edge is cut with click + Delete, and every change undoes and redoes', async () => {
  const graph = {
    description: 'Cut me',
    custom_top: { kept: true },
    nodes: [
      { id: 'tip', type: 'note', text: 'A note has no ports', color: 'blue', x: 40, y: 20 },
      { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 160 },
      { id: 'work', type: 'command', run: 'echo hi', x: 300, y: 160, owner: 'someone' },
      { id: 'out', type: 'output', x: 560, y: 160 },
    ],
    edges: [{ from: 'start', to: 'work' }, { from: 'work', to: 'out' }],
  };
  assert.equal((await api(server, 'POST', '/designs/cut', { graph })).body.ok, true);
  const page = await openPage(`${server.url}/designer.html?design=cut`);
  await page.getByTestId('edge-work-out').waitFor();
  assert.equal(await page.getByTestId('design-name').inputValue(), 'cut');

  // The note offers no ports at all; the trigger no input.
  assert.equal(await page.getByTestId('port-in-tip').count(), 0);
  assert.equal(await page.getByTestId('port-out-tip').count(), 0);
  assert.equal(await page.getByTestId('port-in-start').count(), 0);
  assert.equal(await page.getByTestId('port-out-start').count(), 1);

  // Click the edge, Delete removes it.
  await page.getByTestId('edge-work-out').click();
  assert.equal(await page.getByTestId('edge-label').count(), 1, 'the edge panel is shown');
  await page.keyboard.press('Delete');
  await page.getByTestId('edge-work-out').waitFor({ state: 'detached' });
  assert.deepEqual((await graphOf(page)).edges, [{ from: 'start', to: 'work' }]);

  // Undo brings it back, redo cuts it again.
  await page.keyboard.press('Control+z');
  await page.getByTestId('edge-work-out').waitFor();
  await page.keyboard.press('Control+Shift+Z');
  await page.getByTestId('edge-work-out').waitFor({ state: 'detached' });

  // Backspace on a selected node removes it with its edges; undo restores both.
  await page.getByTestId('node-work').click();
  await page.keyboard.press('Backspace');
  await page.getByTestId('node-work').waitFor({ state: 'detached' });
  assert.deepEqual((await graphOf(page)).edges, []);
  await page.keyboard.press('Control+z');
  await page.getByTestId('node-work').waitFor();
  assert.deepEqual((await graphOf(page)).edges, [{ from: 'start', to: 'work' }]);

  // Keyboard selection: Escape clears, Tab steps through nodes in order.
  await page.keyboard.press('Escape');
  assert.equal(await page.locator('g.node.selected').count(), 0);
  await page.getByTestId('canvas').focus();
  await page.keyboard.press('Tab');
  await page.locator('[data-testid="node-tip"].selected').waitFor();
  await page.keyboard.press('Tab');
  await page.locator('[data-testid="node-start"].selected').waitFor();
  await page.keyboard.press('ArrowRight');
  await page.locator('[data-testid="node-work"].selected').waitFor();

  // Renaming an id carries its edges along; unknown fields survive every edit.
  await page.getByTestId('field-id').fill('job');
  await page.getByTestId('field-id').press('Enter');
  await page.getByTestId('edge-start-job').waitFor();
  const g = await graphOf(page);
  assert.deepEqual(g.custom_top, { kept: true });
  assert.equal(byId(g, 'job').owner, 'someone');
  assert.equal(g.description, 'Cut me');

  // Dragging a node moves it (and is one undo step).
  const box = await boxOf(page, 'node-out');
  await page.mouse.move(box.x + 60, box.y + 20);
  await page.mouse.down();
  await page.mouse.move(box.x + 60, box.y + 140, { steps: 4 });
  await page.mouse.up();
  const moved = byId(await graphOf(page), 'out');
  assert.ok(moved.y > 160 + 60, `moved down: ${moved.y}`);
  await page.keyboard.press('Control+z');
  await page.waitForFunction(() => window.vwfDesigner.getGraph().nodes.find((n) => n.id === 'out').y === 160);

  assert.deepEqual(page.problems, []);
  await page.close();
});

test('served: the read-only run view colours each node by its step state', async () => {
  const gated = {
    nodes: [
      { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 120 },
      { id: 'count', type: 'command', run: 'echo 7', x: 260, y: 120 },
      { id: 'check', type: 'condition', expr: 'out.count.text > 5', x: 480, y: 120 },
      { id: 'gate', type: 'approval', question: 'Ship?', options: ['ship', 'hold'], x: 700, y: 40 },
      { id: 'shipped', type: 'output', template: 'shipped {{nodes.count}}', x: 920, y: 40 },
      { id: 'small', type: 'output', template: 'small', x: 700, y: 220 },
    ],
    edges: [
      { from: 'start', to: 'count' }, { from: 'count', to: 'check' },
      { from: 'check', to: 'gate', label: 'true' }, { from: 'check', to: 'small', label: 'false' },
      { from: 'gate', to: 'shipped', label: 'ship' },
    ],
  };
  assert.equal((await api(server, 'POST', '/designs/gated', { graph: gated })).body.ok, true);
  const started = await api(server, 'POST', '/designs/gated/run', {});
  assert.equal(started.body.status, 'awaiting_approval');
  const id = started.body.run_id;
  // The design changes after the run started: the run view draws the plan the run started with.
  const edited = { nodes: gated.nodes.filter((n) => n.id !== 'small'), edges: gated.edges.filter((e) => e.to !== 'small') };
  assert.equal((await api(server, 'POST', '/designs/gated', { graph: edited })).body.ok, true);

  const page = await openPage(`${server.url}/designer.html?run=${id}&embed=1`);
  await page.locator('[data-testid="node-gate"][data-state="pending"]').waitFor();
  assert.equal(await page.getByTestId('toolbar').isVisible(), false, 'embed=1 hides the toolbar');
  assert.equal(await page.getByTestId('palette-agent').isVisible(), false, 'a run view edits nothing');
  const states = () => page.evaluate(() => Object.fromEntries([...document.querySelectorAll('g.node')].map((g) => [g.dataset.nodeId, g.dataset.state || null])));
  assert.deepEqual(await states(), { start: 'done', count: 'done', check: 'done', gate: 'pending', shipped: null, small: 'skipped' });
  assert.equal(await page.getByTestId('port-out-count').count(), 1);
  assert.match(await page.getByTestId('pending').innerText(), /Ship\?\nOptions: ship, hold/, 'the run summary says what it waits for');

  // The panel shows a node's step and output.
  await page.getByTestId('node-count').click();
  assert.equal(await page.getByTestId('step-output').textContent(), '7', 'the text view of stdout (trailing newline dropped)');
  assert.equal(await page.getByTestId('step-state').innerText(), 'done');
  // Nothing can be changed: Delete does nothing, there is no field to type in.
  await page.keyboard.press('Delete');
  assert.equal(await page.getByTestId('node-count').count(), 1);
  assert.equal(await page.locator('[data-testid^="field-"]').count(), 0);

  // Answered elsewhere, the view follows the run to its end.
  const answered = await api(server, 'POST', `/runs/${id}/respond`, { node: 'gate', answer: 'ship' });
  assert.equal(answered.body.status, 'done');
  await page.locator('[data-testid="node-shipped"][data-state="done"]').waitFor();
  assert.equal(await page.getByTestId('node-gate').getAttribute('data-state'), 'done');
  await page.close();

  // Loop passes (`body#0`, `body#1`, …) are aggregated on the body node.
  const loopy = {
    nodes: [
      { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 120 },
      { id: 'list', type: 'command', run: 'echo [1,2,3]', x: 260, y: 120 },
      { id: 'each', type: 'loop', over: '{{nodes.list}}', x: 480, y: 120 },
      { id: 'body', type: 'command', run: 'echo item-{{item}}', x: 700, y: 220 },
      { id: 'after', type: 'output', x: 700, y: 40 },
    ],
    edges: [
      { from: 'start', to: 'list' }, { from: 'list', to: 'each' },
      { from: 'each', to: 'body', label: 'each' }, { from: 'each', to: 'after', label: 'done' },
    ],
  };
  assert.equal((await api(server, 'POST', '/designs/loopy', { graph: loopy })).body.ok, true);
  const looped = await api(server, 'POST', '/designs/loopy/run', {});
  assert.equal(looped.body.status, 'done');
  const view = await openPage(`${server.url}/designer.html?run=${looped.body.run_id}`);
  await view.locator('[data-testid="node-body"][data-state="done"]').waitFor();
  assert.equal(await view.getByTestId('state-body').textContent(), 'done ×3');
  await view.getByTestId('node-body').click();
  assert.equal(await view.locator('[data-testid^="step-body#"]').count(), 3);
  assert.equal(await view.getByTestId('toolbar').isVisible(), true, 'without embed=1 the toolbar shows');
  assert.deepEqual(page.problems, []);
  assert.deepEqual(view.problems, []);
  await view.close();
});

test('served: the embedding contract (vwfDesigner and messages to the parent)', async () => {
  const page = await newPage(browser, { viewport: { width: 1400, height: 900 } });
  // The host is a page of the server's own origin: the canvas may be framed by its dashboard
  // alone (frame-ancestors 'self'; tests/e2e/framing.test.mjs has the other origins).
  await page.goto(`${server.url}/healthz`);
  await page.setContent('<!doctype html><body style="margin:0"></body>');
  const src = `${server.url}/designer.html?design=embedded&embed=1`;
  const navigated = page.waitForEvent('framenavigated', { predicate: (f) => f.url() === src });
  await page.evaluate((url) => {
    window.messages = [];
    window.addEventListener('message', (e) => window.messages.push(e.data));
    const f = document.createElement('iframe');
    f.src = url;
    f.style.cssText = 'width:1380px;height:860px;border:0';
    document.body.append(f);
  }, src);
  const frame = await navigated;
  await frame.waitForFunction(() => !!window.vwfDesigner);
  await frame.getByTestId('palette-trigger').waitFor();
  // Embedded, the host names, saves and runs the design; the canvas keeps its own editing buttons.
  assert.equal(await frame.getByTestId('design-name').isVisible(), false);
  assert.equal(await frame.getByTestId('btn-save').isVisible(), false);
  assert.equal(await frame.getByTestId('btn-undo').isVisible(), true);

  // setGraph draws what it is given; getGraph gives it back exactly.
  const graph = {
    nodes: [
      { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 40 },
      { id: 'say', type: 'command', run: 'echo embedded', x: 280, y: 40, extra: [1, 2] },
    ],
    edges: [{ from: 'start', to: 'say' }],
  };
  await frame.evaluate((g) => window.vwfDesigner.setGraph(g), graph);
  await frame.getByTestId('edge-start-say').waitFor();
  assert.deepEqual(await frame.evaluate(() => window.vwfDesigner.getGraph()), graph);
  await page.waitForFunction(() => window.messages.some((m) => m.type === 'vwf-designer' && m.event === 'changed' && m.name === 'embedded'));

  // select(id) selects a node and shows its fields.
  assert.equal(await frame.evaluate(() => window.vwfDesigner.select('say')), true);
  assert.equal(await frame.getByTestId('field-run').inputValue(), 'echo embedded');
  assert.equal(await frame.evaluate(() => window.vwfDesigner.select('nobody')), false);

  // validate() answers the server's verdict.
  const v = await frame.evaluate(() => window.vwfDesigner.validate());
  assert.equal(v.ok, true);
  assert.deepEqual(v.errors, []);

  // Saving and running post their events with the name and the run id.
  assert.equal((await frame.evaluate(() => window.vwfDesigner.save())).ok, true);
  await page.waitForFunction(() => window.messages.some((m) => m.event === 'saved' && m.name === 'embedded'));
  // run() answers once the run has started; the canvas then follows it to its end.
  const ran = await frame.evaluate(() => window.vwfDesigner.run());
  assert.match(ran.run_id, /^[0-9a-f]{12}$/);
  await frame.locator('[data-testid="node-say"][data-state="done"]').waitFor();
  const message = await page.waitForFunction(() => window.messages.find((m) => m.event === 'ran'));
  assert.deepEqual(await message.jsonValue(), { type: 'vwf-designer', event: 'ran', name: 'embedded', run_id: ran.run_id });
  await page.close();
});

test('served: leaving the canvas with unsaved edits asks first; saved, it does not', async () => {
  const page = await openPage(`${server.url}/designer.html`);
  const dialogs = [];
  page.on('dialog', async (d) => { dialogs.push(d.type()); await d.dismiss(); });
  await drop(page, 'trigger', 120, 160, 'trigger1');
  await page.getByTestId('dirty').waitFor();
  // Closing the tab, reloading and another address fire the same event; the dismissed question
  // keeps the page and its edit.
  await assert.rejects(page.goto(`${server.url}/`), /ERR_ABORTED/);
  assert.deepEqual(dialogs, ['beforeunload']);
  assert.equal((await graphOf(page)).nodes.length, 1);
  await page.getByTestId('design-name').fill('left-alone');
  await page.getByTestId('btn-save').click();
  await page.getByTestId('dirty').waitFor({ state: 'hidden' });
  await page.goto(`${server.url}/`);
  assert.deepEqual(dialogs, ['beforeunload'], 'a saved canvas is left without a question');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('file://: built and exported without a server; legible with no host stylesheet', async () => {
  const url = pathToFileURL(join(ROOT, 'web', 'designer.html')).href;
  const page = await openPage(url, { width: 1280, height: 760 });
  assert.equal(await page.getByTestId('btn-save').isVisible(), false, 'no saving without a server');
  assert.match(await page.getByTestId('issues').innerText(), /vwf serve/);

  // Click adds a node in the middle of the view; drag it aside, then drop the others in place.
  await page.getByTestId('palette-trigger').click();
  await page.getByTestId('node-trigger1').waitFor();
  const t = await boxOf(page, 'node-trigger1');
  const canvas = await page.getByTestId('canvas').boundingBox();
  await page.mouse.move(t.x + 60, t.y + 20);
  await page.mouse.down();
  await page.mouse.move(canvas.x + 60 + 60, canvas.y + 300 + 20, { steps: 4 });
  await page.mouse.up();
  const moved = byId(await graphOf(page), 'trigger1');
  assert.ok(Math.abs(moved.x - 60) <= 2 && Math.abs(moved.y - 300) <= 2, `dropped where the mouse let go: ${moved.x},${moved.y}`);
  await drop(page, 'command', 390, 332);
  await drop(page, 'output', 650, 332);
  await drop(page, 'note', 390, 160);
  await connect(page, 'trigger1', 'command1');
  await connect(page, 'command1', 'output1');
  await page.getByTestId('node-command1').click();
  await page.getByTestId('field-run').fill('echo from-file');
  await page.getByTestId('field-label').fill('Print a line');
  await page.getByTestId('node-output1').click();
  await page.getByTestId('field-label').fill('Result');
  await page.getByTestId('field-template').fill('The command printed {{nodes.command1}}');
  await page.getByTestId('node-note1').click();
  await page.getByTestId('field-text').fill('Opened from disk: import and export only');

  // Export: the text area and the download hold the same exact JSON.
  const graph = await exported(page);
  assert.deepEqual(graph, await graphOf(page));
  await page.getByTestId('btn-export').click();
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('btn-download').click()]);
  assert.deepEqual(JSON.parse(readFileSync(await download.path(), 'utf8')), graph);
  await page.getByTestId('dialog-export').getByRole('button', { name: 'Close' }).click();
  assert.deepEqual(graph.edges, [{ from: 'trigger1', to: 'command1' }, { from: 'command1', to: 'output1' }]);
  assert.equal(byId(graph, 'command1').run, 'echo from-file');
  saveFixture('designer-file', graph);

  // Import (paste) brings a design back, and undo returns to the one before.
  await page.getByTestId('btn-import').click();
  await page.getByTestId('import-text').fill(JSON.stringify({ nodes: [{ id: 'solo', type: 'trigger', mode: 'manual' }], edges: [] }));
  await page.getByTestId('import-load').click();
  await page.getByTestId('node-solo').waitFor();
  await page.getByTestId('canvas').focus();
  await page.keyboard.press('Control+z');
  await page.getByTestId('node-command1').waitFor();
  assert.deepEqual(await graphOf(page), graph);

  // Legible with no host stylesheet, in both themes.
  await page.getByTestId('design-name').fill('from-disk');
  await page.getByTestId('design-name').press('Enter');
  await page.getByTestId('btn-fit').click();
  await page.getByTestId('node-command1').click();
  const light = await page.evaluate(nodeColours);
  assertLegible(light, 'light');
  mkdirSync(DOCS, { recursive: true });
  await page.screenshot({ path: join(DOCS, 'designer.png') });
  await page.getByTestId('btn-theme').click(); // auto → light
  await page.getByTestId('btn-theme').click(); // light → dark
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
  const dark = await page.evaluate(nodeColours);
  assertLegible(dark, 'dark');
  const fillOf = (colours, id) => colours.find((x) => x.id === id).box;
  assert.notEqual(fillOf(dark, 'command1'), fillOf(light, 'command1'), 'the dark theme repaints the nodes');
  assert.deepEqual(page.problems, []);
  await page.close();
});

// Saving under a name other than the one the design was opened or last saved as only creates
// (`create: true`): an existing design's name (after opening another, "New" or a rename) is
// refused with the server's 409 and shown, and that design is unchanged; a plain Save of the
// opened design still replaces it.
/** A small valid design whose output says `text`. */
const design = (text) => ({
  nodes: [{ id: 'start', type: 'trigger', mode: 'manual' }, { id: 'out', type: 'output', template: text }],
  edges: [{ from: 'start', to: 'out' }],
});

/** The output text of the saved design `name`. */
const savedText = async (name) => (await api(server, 'GET', `/designs/${name}`)).body.graph.nodes.find((n) => n.id === 'out').template;

test('served: a save under a new name never replaces a design; saving the opened design does', async () => {
  for (const [name, text] of [['save-keep', 'kept'], ['save-mine', 'mine 1']]) {
    assert.equal((await api(server, 'POST', `/designs/${name}`, { graph: design(text) })).body.ok, true);
  }
  const page = await openPage(`${server.url}/designer.html?design=save-mine`);
  await page.getByTestId('status').filter({ hasText: 'Opened save-mine' }).waitFor();
  const edit = (text) => page.evaluate((g) => window.vwfDesigner.setGraph(g), design(text));
  /** Types `name`, saves, and waits for the status that starts with `expect`. */
  const saveAs = async (name, expect) => {
    await page.getByTestId('design-name').fill(name);
    await page.getByTestId('design-name').press('Enter');
    await page.getByTestId('btn-save').click();
    const status = page.getByTestId('status').filter({ hasText: `${expect}` });
    await status.waitFor();
    return status.innerText();
  };

  // The opened design: a plain save replaces it.
  await edit('mine 2');
  await saveAs('save-mine', 'Saved save-mine');
  assert.equal(await savedText('save-mine'), 'mine 2');

  // Renamed to an existing design's name: refused, shown, nothing replaced.
  await edit('mine 3');
  const refused = await saveAs('save-keep', 'Not saved');
  assert.match(refused, /a design named save-keep already exists; choose another name/, refused);
  assert.equal(await savedText('save-keep'), 'kept', 'the existing design is unchanged');
  assert.equal(await savedText('save-mine'), 'mine 2');

  // Renamed to a new name: created; saving it again replaces it (it is now the opened design).
  await saveAs('save-fresh', 'Saved save-fresh');
  assert.equal(await savedText('save-fresh'), 'mine 3');
  await edit('fresh 2');
  await saveAs('save-fresh', 'Saved save-fresh');
  assert.equal(await savedText('save-fresh'), 'fresh 2');
  // And the name it came from is now "another" name: saving back onto it is refused too.
  await saveAs('save-mine', 'Not saved');
  assert.equal(await savedText('save-mine'), 'mine 2');

  // "New", then an existing name: refused; a new name: created.
  await page.getByTestId('btn-new').click();
  await page.getByTestId('status').filter({ hasText: 'New design' }).waitFor();
  await edit('blank');
  await saveAs('save-keep', 'Not saved');
  assert.equal(await savedText('save-keep'), 'kept');
  await saveAs('save-brand', 'Saved save-brand');
  assert.equal(await savedText('save-brand'), 'blank');

  assert.deepEqual(page.problems, []);
  await page.close();
});
