// Shared helpers for the browser tests: a real `vwf serve` on a fresh home, and Debian's
// Chromium driven by playwright-core. No test waits by sleeping: every wait is for a condition.
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
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

/** Starts `vwf serve` on a free port; resolves to {url, api, home, stop()}. `bin` and `cwd`
 * start another copy of vwf from another directory; a variable set to undefined is removed. */
export async function startServer(home = freshHome(), env = {}, { bin = VWF, cwd } = {}) {
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
  return {
    url: info.url.replace(/\/$/, ''),
    api: info.api.replace(/\/$/, ''),
    home,
    stderr: () => stderr,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
    },
  };
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
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

/** How many long-poll reads `server` holds now (its `vwf_live_waiters` gauge): a page that
 * follows a run sits in one. */
export async function heldReads(server) {
  const text = await (await fetch(`${server.api}/metrics`)).text();
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
