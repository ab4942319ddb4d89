// The pages built into the binary, in a real Chromium: a copy of vwf in a temporary directory of
// its own, started from an empty working directory with VWF_WEB_DIR and VWF_EXAMPLES_DIR unset,
// so nothing can come from the repository. The canvas loads and works, and the dashboard lists
// every built-in template. (The Rust suite, crates/vwf/tests/install.rs, checks a `cargo install`ed
// binary byte for byte with the repository hidden; this checks the same embedded pages render.)
// Every wait is for a condition; nothing sleeps.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { startServer, launch, freshHome, ROOT, VWF } from './helpers.mjs';
import { openPage, openDesigner, waitFor, graphOf } from './canvas.mjs';

let server;
let browser;
let dir;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vwf-installed-'));
  const bin = join(dir, 'bin', 'vwf');
  mkdirSync(join(dir, 'bin'));
  copyFileSync(VWF, bin);
  mkdirSync(join(dir, 'empty'));
  server = await startServer(freshHome(), { VWF_WEB_DIR: undefined, VWF_EXAMPLES_DIR: undefined }, { bin, cwd: join(dir, 'empty') });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('the embedded canvas loads and edits a graph', async () => {
  const page = await openDesigner(browser, `${server.url}/designer.html`);
  assert.doesNotMatch(await page.content(), /not built yet/);
  const before = await graphOf(page);
  await page.evaluate(() => window.vwfDesigner.setGraph({
    description: 'embedded', nodes: [{ id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 120 }], edges: [],
  }));
  await waitFor(page, 'the canvas draws the node', () => document.querySelectorAll('g.node').length === 1);
  assert.equal((await graphOf(page)).description, 'embedded');
  assert.ok(before && Array.isArray(before.nodes));
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('the embedded dashboard lists every built-in template', async () => {
  const names = readdirSync(join(ROOT, 'examples')).filter((f) => f.endsWith('.designer.json')).map((f) => f.slice(0, -'.designer.json'.length)).sort();
  const page = await openPage(browser, `${server.url}/#/designs`, { viewport: { width: 1280, height: 900 } });
  await waitFor(page, 'every template card', (n) => document.querySelectorAll('form[data-template]').length === n, names.length);
  const shown = await page.evaluate(() => [...document.querySelectorAll('form[data-template]')].map((f) => f.dataset.template).sort());
  assert.deepEqual(shown, names);
  assert.deepEqual(page.problems, []);
  await page.close();
});
