// Who may frame the canvas, and where its messages go, in a real Chromium against a real `vwf
// serve` (SPEC §17): the dashboard embeds the canvas (same origin) and it still works there, its
// messages posted to the dashboard's origin only; a page of another origin cannot frame it
// unless `[server] frame_ancestors` lists that origin, and then the messages go to that origin.
// A browser context without the login gets 401 from the API, and the login link lets it in.
// Every wait is for a condition; nothing sleeps.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, launch, newPage, logIn, api, freshHome } from './helpers.mjs';
import { waitFor } from './canvas.mjs';

let server;
/** A server whose `[server] frame_ancestors` lists the host page's origin. */
let listed;
let browser;
let host;
let hostOrigin;
/** What the host page frames: set per test. */
let framed = '';

const hello = {
  nodes: [
    { id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 120 },
    { id: 'out', type: 'output', template: 'hello', x: 300, y: 120 },
  ],
  edges: [{ from: 'start', to: 'out' }],
};

before(async () => {
  // A page on another origin (another port of 127.0.0.1) that frames `framed` and records the
  // messages it receives, with their origins.
  host = createServer((req, res) => {
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end(`<!doctype html><title>host</title>
<script>
  window.received = [];
  window.addEventListener('message', (e) => window.received.push({ origin: e.origin, data: e.data }));
</script>
<iframe id="canvas" src="${framed}" onload="window.frameLoaded = true" style="width: 900px; height: 600px"></iframe>`);
  });
  await new Promise((r) => host.listen(0, '127.0.0.1', r));
  hostOrigin = `http://127.0.0.1:${host.address().port}`;
  server = await startServer();
  const home = freshHome();
  writeFileSync(join(home, 'visual-workflow.toml'), `[server]\nframe_ancestors = ["${hostOrigin}"]\n`);
  listed = await startServer(home);
  browser = await launch();
  for (const s of [server, listed]) assert.equal((await api(s, 'POST', '/designs/hello', { graph: hello })).body.ok, true);
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await listed?.stop();
  await new Promise((r) => host?.close(r));
});

test('the dashboard embeds the canvas; its messages go to the dashboard origin only', async () => {
  const page = await newPage(browser, { viewport: { width: 1400, height: 900 } });
  // Records the target origin of every message posted to the dashboard window (the canvas calls
  // window.parent.postMessage, which is this window's, same origin).
  await page.addInitScript(() => {
    if (window !== window.top) return;
    window.targets = [];
    const post = window.postMessage.bind(window);
    window.postMessage = (message, target, ...rest) => {
      window.targets.push(target);
      return post(message, target, ...rest);
    };
  });
  await page.goto(`${server.url}/#/designer/hello`);
  const frame = page.frameLocator('iframe.canvas');
  await frame.getByTestId('node-out').waitFor();
  const canvas = page.frames().find((f) => f.url().includes('/designer.html'));
  // An edit in the canvas: the dashboard hears of it (its unsaved marker) and the canvas's
  // verdict comes from the API, through the session cookie of the login.
  await canvas.evaluate(() => {
    const g = window.vwfDesigner.getGraph();
    g.nodes.find((n) => n.id === 'out').template = 'hello again';
    window.vwfDesigner.setGraph(g);
  });
  await waitFor(page, 'a message from the canvas', () => window.targets.length > 0);
  const targets = await page.evaluate(() => window.targets);
  assert.deepEqual([...new Set(targets)], [server.url], `posted only to ${server.url}: ${targets}`);
  const verdict = await canvas.evaluate(() => window.vwfDesigner.validate());
  assert.equal(verdict.ok, true, JSON.stringify(verdict));
  await page.close();
});

test('a page of another origin cannot frame the canvas', async () => {
  framed = `${server.url}/designer.html?embed=1`;
  const page = await newPage(browser);
  await page.goto(`${hostOrigin}/`);
  await waitFor(page, 'the frame to finish loading', () => window.frameLoaded === true);
  const frame = page.frames().find((f) => f !== page.mainFrame());
  const shown = await frame.evaluate(() => typeof window.vwfDesigner).catch(() => 'blocked');
  assert.notEqual(shown, 'object', 'the browser refused to show the canvas in a foreign frame');
  assert.deepEqual(await page.evaluate(() => window.received), []);
  await page.close();
});

test('an origin in [server] frame_ancestors frames the canvas and gets its messages, with the server as their origin', async () => {
  framed = `${listed.url}/designer.html?embed=1`;
  const page = await newPage(browser);
  await page.goto(`${hostOrigin}/`);
  await waitFor(page, 'the frame to finish loading', () => window.frameLoaded === true);
  const frame = page.frames().find((f) => f.url().startsWith(listed.url));
  assert.ok(frame, 'the canvas is shown in the frame');
  await frame.waitForFunction(() => !!window.vwfDesigner);
  await frame.evaluate(() => window.vwfDesigner.setGraph({
    nodes: [{ id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 120 }], edges: [],
  }));
  await waitFor(page, 'a message from the canvas', () => window.received.length > 0);
  const received = await page.evaluate(() => window.received);
  for (const { origin, data } of received) {
    assert.equal(origin, listed.url);
    assert.equal(data.type, 'vwf-designer');
  }
  await page.close();
});

test('as in the Hermes Workflows tab: a listed origin frames the dashboard, whose API calls carry the login cookie and which embeds the canvas', async () => {
  framed = `${listed.url}/#/designer/hello`;
  // Logged in through the link in this browser context, as a person would in another tab: the
  // host (127.0.0.1, another port) and vwf serve are one site, so the frame sends the cookie.
  const page = await newPage(browser, { viewport: { width: 1400, height: 900 } });
  await page.goto(`${hostOrigin}/`);
  const dashboard = page.frameLocator('#canvas');
  const canvas = dashboard.frameLocator('iframe.canvas');
  await canvas.getByTestId('node-out').waitFor();
  assert.equal(await dashboard.locator('#token').isHidden(), true, 'the dashboard did not have to ask for a token');
  const inner = page.frames().find((f) => f.url().includes('/designer.html'));
  assert.ok(inner.url().startsWith(listed.url));
  assert.equal((await inner.evaluate(() => window.vwfDesigner.validate())).ok, true);
  await page.close();
});

test('the API answers a browser only after the login link', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${server.url}/`);
  const ask = () => page.evaluate(async () => (await fetch('/api/plugins/visual-workflow/designs')).status);
  assert.equal(await ask(), 401, 'no cookie, no token: refused');
  // The dashboard asks for the token instead of showing data.
  await page.locator('#token:not([hidden])').waitFor();
  await logIn(context, server);
  assert.equal(await ask(), 200);
  const cookies = await context.cookies(server.url);
  const session = cookies.find((c) => c.name === `vwf-session-${new URL(server.url).port}`);
  assert.ok(session, JSON.stringify(cookies));
  assert.equal(session.httpOnly, true);
  assert.equal(session.sameSite, 'Strict');
  assert.equal(await page.evaluate(() => document.cookie), '', 'no script reads the session cookie');
  await context.close();
});
