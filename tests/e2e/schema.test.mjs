// The forms read the design model instead of copying it: the canvas's inspector offers, for every
// node type and trigger mode, the fields GET /schema lists, with their allowed values and
// defaults, both served (from the server's answer) and opened from disk (from the copy embedded
// in the page); the schedules page takes its presets from the same answer. A model changed in
// transit shows on both pages, so what they show is read, not written in the page.
// Every wait is for a selector or a condition; nothing sleeps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { api, newPage, ROOT, serverAndBrowser } from './helpers.mjs';
import { openDesigner, openPage, waitFor } from './canvas.mjs';

const ctx = serverAndBrowser();
const SCHEMA_ROUTE = '**/api/plugins/visual-workflow/schema';

/** The canvas at `url`, once it has taken the model from `from` (served or embedded). */
async function canvas(url, from, setup) {
  const page = await newPage(ctx.browser, { viewport: { width: 1600, height: 900 } });
  page.problems = [];
  page.on('pageerror', (e) => page.problems.push(e.message));
  if (setup) await setup(page);
  await page.goto(url);
  await page.waitForFunction((want) => !!window.vwfDesigner && document.body.dataset.schema === want, from);
  return page;
}

/** Adds a node of `type` from the palette and answers its id. */
async function add(page, type) {
  const before = (await page.evaluate(() => window.vwfDesigner.getGraph())).nodes.length;
  await page.getByTestId(`palette-${type}`).click();
  await waitFor(page, `a ${type} node`, (n) => window.vwfDesigner.getGraph().nodes.length === n + 1, before);
  return page.evaluate(() => window.vwfDesigner.getGraph().nodes.at(-1).id);
}

/** What the panel shows for field `key`: its placeholder, and a select's choices. */
function shown(page, key) {
  return page.getByTestId(`field-${key}`).evaluate((el) => ({
    placeholder: el.getAttribute('placeholder'),
    options: el.tagName === 'SELECT' ? [...el.options].map((o) => o.value) : null,
  }));
}

/** Checks the panel of the selected node against the model's `fields` (`prefix` for nested ones). */
async function panelMatches(page, fields, at, prefix = '') {
  let checked = 0;
  for (const f of fields) {
    if (f.kind === 'object') { checked += await panelMatches(page, f.fields, at, `${prefix}${f.name}.`); continue; }
    const key = prefix + f.name;
    if ((await page.getByTestId(`field-${key}`).count()) === 0) continue; // shown only with a value or a preset (checked below)
    const s = await shown(page, key);
    const select = f.kind === 'enum' || !!f.labels;
    if (f.kind === 'enum') assert.deepEqual(s.options, ['', ...f.values], `${at}.${key} offers the model's values`);
    if (f.labels) assert.deepEqual(s.options, ['', ...f.labels.map((_, i) => String(f.min + i))], `${at}.${key}`);
    if (f.default !== undefined && !select) {
      const want = Array.isArray(f.default) ? f.default.join('\n') : typeof f.default === 'string' ? f.default : JSON.stringify(f.default);
      assert.equal(s.placeholder, want, `${at}.${key} shows its default`);
    }
    checked += 1;
  }
  return checked;
}

/** Every node type and trigger mode of `schema` has its fields in the panel; answers how many were checked. */
async function everyTypeAndMode(page, schema) {
  let checked = 0;
  for (const t of schema.node_types) {
    const id = await add(page, t.type);
    await page.getByTestId(`node-${id}`).click();
    const keys = await page.locator('#panel .field[data-field]').evaluateAll((rows) => rows.map((r) => r.dataset.field));
    for (const f of t.fields) {
      if (f.kind !== 'object' && !(t.type === 'output' && f.name === 'target')) assert.ok(keys.includes(f.name), `${t.type} shows ${f.name}: ${keys}`);
    }
    checked += await panelMatches(page, t.fields, t.type);
    if (t.type !== 'trigger') continue;
    for (const m of schema.trigger_modes) {
      await page.getByTestId('field-mode').selectOption(m.mode);
      checked += await panelMatches(page, m.fields, m.mode);
    }
    // A schedule shows the inputs its preset reads.
    await page.getByTestId('field-mode').selectOption('schedule');
    for (const p of schema.schedule_presets) {
      await page.getByTestId('field-schedule.preset').selectOption(p.preset);
      for (const sub of ['time', 'minute', 'dow', 'cron']) {
        assert.equal(await page.getByTestId(`field-schedule.${sub}`).count(), p.fields.includes(sub) ? 1 : 0, `${p.preset} and ${sub}`);
      }
      checked += 1;
    }
  }
  return checked;
}

/** The canvas at `url` takes the model from `from`: every panel matches what GET /schema says, and
 * an http node offers OPTIONS (which the validator always took) with its default timeout shown. */
async function panelsAreTheModel(url, from) {
  const schema = (await api(ctx.server, 'GET', '/schema')).body;
  const page = await canvas(url, from);
  const checked = await everyTypeAndMode(page, schema);
  assert.ok(checked > 50, `${checked} fields checked`);
  const http = await add(page, 'http');
  await page.getByTestId(`node-${http}`).click();
  assert.ok((await shown(page, 'method')).options.includes('OPTIONS'));
  assert.equal((await shown(page, 'timeout_seconds')).placeholder, '30');
  await page.getByTestId('field-method').selectOption('OPTIONS');
  assert.equal((await page.evaluate(() => window.vwfDesigner.getGraph())).nodes.at(-1).method, 'OPTIONS');
  assert.deepEqual(page.problems, []);
  await page.close();
}

test('served: every node type\'s and trigger mode\'s panel fields are the model\'s; an http node offers OPTIONS', async () => {
  await panelsAreTheModel(`${ctx.server.url}/designer.html`, 'served');
});

test('file://: the embedded model gives the same panels, OPTIONS and the defaults included', async () => {
  await panelsAreTheModel(pathToFileURL(join(ROOT, 'web', 'designer.html')).href, 'embedded');
});

test('served: a model changed in transit changes the canvas and the schedules page', async () => {
  const real = (await api(ctx.server, 'GET', '/schema')).body;
  const changed = structuredClone(real);
  const http = changed.node_types.find((t) => t.type === 'http');
  http.fields.find((f) => f.name === 'method').values.push('QUERY');
  http.fields.find((f) => f.name === 'timeout_seconds').default = 42;
  changed.schedule_presets.push({ preset: 'fortnightly', fields: ['time', 'dow'], required: ['time'] });
  changed.trigger_modes.find((m) => m.mode === 'schedule').fields[0].fields.find((f) => f.name === 'preset').values.push('fortnightly');
  const rewrite = (page) => page.route(SCHEMA_ROUTE, (route) => route.fulfill({ json: changed }));

  const page = await canvas(`${ctx.server.url}/designer.html`, 'served', rewrite);
  const id = await add(page, 'http');
  await page.getByTestId(`node-${id}`).click();
  const method = await shown(page, 'method');
  assert.deepEqual(method.options, ['', ...http.fields.find((f) => f.name === 'method').values]);
  assert.equal((await shown(page, 'timeout_seconds')).placeholder, '42');
  await add(page, 'trigger');
  await page.getByTestId('field-mode').selectOption('schedule');
  await page.getByTestId('field-schedule.preset').selectOption('fortnightly');
  await page.getByTestId('field-schedule.dow').waitFor();
  assert.deepEqual(page.problems, []);
  await page.close();

  const dashboard = await openPage(ctx.browser, `${ctx.server.url}/#/schedules`, { viewport: { width: 1280, height: 900 } });
  await dashboard.route(SCHEMA_ROUTE, (route) => route.fulfill({ json: changed }));
  await dashboard.reload();
  const form = dashboard.locator('#schedule-form');
  await form.waitFor();
  const presets = await form.locator('select[name="preset"] option').evaluateAll((o) => o.map((x) => x.value));
  assert.deepEqual(presets, changed.schedule_presets.map((p) => p.preset));
  await form.locator('select[name="preset"]').selectOption('fortnightly');
  await waitFor(dashboard, 'the day input', () => !document.querySelector('label[data-field="dow"]').hidden);
  assert.equal(await form.locator('label[data-field="cron"]').isHidden(), true);
  const days = await form.locator('select[name="dow"] option').allTextContents();
  assert.deepEqual(days, real.trigger_modes.find((m) => m.mode === 'schedule').fields[0].fields.find((f) => f.name === 'dow').labels);
  assert.deepEqual(dashboard.problems, []);
  await dashboard.close();
});
