// Shared helpers for the browser tests: a real `vwf serve` on a fresh home, and Debian's
// Chromium driven by playwright-core. No test waits by sleeping: every wait is for a condition.
//
// The API needs a token (SPEC §17). A server started here made its own and wrote it to
// `<home>/workflow-serve-<port>.token` before its first line; `api()` sends it as a bearer, and
// `newPage()` logs a fresh browser context in to every running server through its login link
// (`/login?token=…`, which sets the session cookie), as a person opening that link would.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';
import { before, after } from 'node:test';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const VWF = process.env.VWF_BIN || join(ROOT, 'target', 'debug', 'vwf');
export const FIXTURES = join(ROOT, 'tests', 'fixtures', 'gui');
export const DOCS = join(ROOT, 'docs');

/** A fresh home directory. */
export function freshHome() {
  return mkdtempSync(join(tmpdir(), 'vwf-e2e-'));
}

/** The servers started and not stopped yet: a new browser context logs in to each. */
const running = new Set();

/** Starts `vwf serve` on a free port; resolves to {url, api, home, token, login, stop()}. `bin`
 * and `cwd` start another copy of vwf from another directory; a variable set to undefined is
 * removed. `token` is the API token: the one the server made (read from its file), or, for a
 * home whose config names one (`[server] token_env`), its value given as `{ token }`. */
export async function startServer(home = freshHome(), env = {}, { bin = VWF, cwd, token } = {}) {
  const vars = { ...process.env, VWF_HOME: home, ...env };
  for (const [k, v] of Object.entries(vars)) if (v === undefined) delete vars[k];
  const child = spawn(bin, ['--home', home, '--json', 'serve', '--bind', '127.0.0.1:0'], {
    env: vars,
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const lines = createInterface({ input: child.stdout });
  const first = await new Promise((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`vwf serve exited ${code}: ${stderr}`)));
  });
  const info = JSON.parse(first);
  const url = info.url.replace(/\/$/, '');
  const file = join(home, `workflow-serve-${new URL(url).port}.token`);
  if (!token && existsSync(file)) token = readFileSync(file, 'utf8').trim();
  const server = {
    url,
    api: info.api.replace(/\/$/, ''),
    home,
    token,
    login: `${url}/login?token=${encodeURIComponent(token ?? '')}`,
    stderr: () => stderr,
    async stop() {
      running.delete(server);
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
    },
  };
  running.add(server);
  return server;
}

/** Logs `context` (a browser context) in to `server` through its login link: the session
 * cookie it sets is then the context's, for pages and their API calls alike. */
export async function logIn(context, server) {
  const res = await context.request.get(server.login, { maxRedirects: 0 });
  if (res.status() !== 303) throw new Error(`login to ${server.url} answered ${res.status()}: ${await res.text()}`);
}

/** A page in a fresh browser context logged in to every running server (`browser.newPage`
 * with the login); closing the page closes its context. */
export async function newPage(browser, options = {}) {
  const context = await browser.newContext(options);
  for (const server of running) await logIn(context, server);
  const page = await context.newPage();
  page.once('close', () => context.close().catch(() => {}));
  return page;
}

/** Launches headless Chromium with the flags this machine needs. */
export async function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_BIN || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** Writes the JSON a canvas produced, for the Rust suite to validate and run. */
export function saveFixture(name, graph) {
  mkdirSync(FIXTURES, { recursive: true });
  writeFileSync(join(FIXTURES, `${name}.json`), JSON.stringify(graph, null, 2) + '\n');
}

/** Calls the API with JSON. */
export async function api(server, method, path, body) {
  const res = await fetch(server.api + path, {
    method,
    headers: { authorization: `Bearer ${server.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

/** How many long-poll reads `server` holds now (its `vwf_live_waiters` gauge): a page that
 * follows a run sits in one. */
export async function heldReads(server) {
  const text = await (await fetch(`${server.api}/metrics`, { headers: { authorization: `Bearer ${server.token}` } })).text();
  const line = text.split('\n').find((l) => l.startsWith('vwf_live_waiters '));
  if (!line) throw new Error(`no vwf_live_waiters in the metrics:\n${text}`);
  return Number(line.split(' ')[1]);
}

/** Waits (a bounded poll of a real process) until `server` holds `n` long-poll reads, or, with
 * `atMost`, until it holds no more than `n`. */
export async function untilHeld(server, n, { atMost = false } = {}) {
  const deadline = Date.now() + 15000;
  for (;;) {
    const held = await heldReads(server);
    if (atMost ? held <= n : held >= n) return;
    if (Date.now() > deadline) throw new Error(`${server.url} holds ${held} long-poll reads, not ${atMost ? 'at most' : 'at least'} ${n}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** For a test file: a `vwf serve` and a Chromium started before its tests and stopped after
 * them. Answers an object whose `server` and `browser` are set once they run. */
export function serverAndBrowser() {
  const ctx = {};
  before(async () => {
    ctx.server = await startServer();
    ctx.browser = await launch();
  });
  after(async () => {
    await ctx.browser?.close();
    await ctx.server?.stop();
  });
  return ctx;
}
