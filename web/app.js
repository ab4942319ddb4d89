// The dashboard shell: hash routes, one page module each (web/pages/), and the few helpers the
// pages share (API calls, building elements, showing times). The browser holds no rule of the
// contract: validation, schedules and run states are the server's answers, shown as they come.
// The canvas is never drawn here; pages embed web/designer.html.

export const API = '/api/plugins/visual-workflow';

// [pattern, module, export]; a pattern's groups are the page's params.
const ROUTES = [
  [/^\/designs$/, 'designs', 'renderList'],
  [/^\/designer\/([^/]+)$/, 'designs', 'renderDesigner'],
  [/^\/runs$/, 'runs', 'render'],
  [/^\/runs\/([^/]+)$/, 'run', 'render'],
  [/^\/schedules$/, 'schedules', 'render'],
  [/^\/overview$/, 'overview', 'render'],
];

// The page on screen: {cleanups: [fn], alive: bool, guard: fn | null}. A page that could lose
// work sets `guard` to a function answering why leaving it would (or null when nothing would).
let current = null;

/** Calls the API; resolves to {status, body}. Never throws: a network error (or `signal`
 * aborting the call) is status 0. */
export async function api(method, path, body, signal) {
  const headers = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  const token = sessionStorage.getItem('vwf-token');
  if (token) headers.authorization = `Bearer ${token}`;
  let res;
  try {
    res = await fetch(API + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal });
  } catch (e) {
    return { status: 0, body: { ok: false, error: `cannot reach the server: ${e.message}` } };
  }
  let data;
  try {
    data = await res.json();
  } catch {
    data = { ok: false, error: `HTTP ${res.status} without a JSON body` };
  }
  if (res.status === 401) askForToken(data.error);
  return { status: res.status, body: data };
}

/** `h('button', {class: 'x', onclick}, 'text', child…)`: an element. Null/false children and
 * attributes are left out. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

export const enc = encodeURIComponent;

export function navigate(hash) {
  if (location.hash === hash) {
    if (mayLeave()) route();
  } else location.hash = hash;
}

/** What leaving the page on screen would lose, or null. */
function loss() {
  return (current && current.alive && current.guard && current.guard()) || null;
}

/** Whether the page on screen may be left: nothing to lose, or the person said so. */
function mayLeave() {
  const why = loss();
  return !why || window.confirm(why);
}

/** A status word as a coloured badge. */
export function badge(status) {
  return h('span', { class: `badge s-${status || 'unknown'}`, 'data-status': status || '' }, (status || 'unknown').replace(/_/g, ' '));
}

/** Replaces `el`'s content with a message; kind is ok | error | info. */
export function say(el, kind, ...content) {
  const parts = content.flat().filter((c) => c !== null && c !== undefined && c !== false);
  el.className = `notice ${kind}`;
  el.replaceChildren(...parts);
  el.hidden = parts.length === 0;
}

/** Validation issues `{node?, edge?, field?, message}` as a list; `pick(node)` on click. */
export function issueList(issues, pick) {
  return h('ul', { class: 'issues' }, issues.map((i) => {
    const where = [i.node, i.field].filter(Boolean).join(' · ') || (i.edge !== undefined ? `edge ${JSON.stringify(i.edge)}` : '');
    const label = where ? [h('b', {}, where), ': ', i.message] : [i.message];
    return h('li', {}, i.node && pick ? h('a', { href: '#', onclick: (e) => { e.preventDefault(); pick(i.node); } }, label) : label);
  }));
}

/** "12 s ago", "3 min ago", "2 h ago", "5 d ago". */
export function ago(ts) {
  const t = Date.parse(ts);
  if (Number.isNaN(t)) return '';
  const s = Math.round((Date.now() - t) / 1000);
  if (s < 0) return `in ${span(-s)}`;
  return `${span(s)} ago`;
}

function span(s) {
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h`;
  return `${Math.floor(s / 86400)} d`;
}

/** A timestamp in the browser's local time, or "—". */
export function when(ts) {
  const t = Date.parse(ts);
  return Number.isNaN(t) ? '—' : new Date(t).toLocaleString();
}

/** A timestamp as the wall clock of time zone `tz` reads it ("1 Dec 2026, 09:00 CET"), or "—". */
export function inZone(ts, tz) {
  const t = Date.parse(ts);
  if (Number.isNaN(t)) return '—';
  const timeZone = !tz || tz === 'Z' ? 'UTC' : tz;
  try {
    return new Date(t).toLocaleString(undefined, { timeZone, year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' });
  } catch {
    return `${new Date(t).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  }
}

/** The viewer's own time zone (IANA name). */
export const viewerZone = Intl.DateTimeFormat().resolvedOptions().timeZone;

/** Whether zone `tz` reads the same wall clock as the viewer's at `ts`. */
export function sameClock(ts, tz) {
  return inZone(ts, tz).replace(/\s\S+$/, '') === inZone(ts, viewerZone).replace(/\s\S+$/, '');
}

/** Time between two timestamps: "0.12 s", "4.0 s", "2 min 5 s". */
export function elapsed(from, to) {
  const ms = Date.parse(to) - Date.parse(from);
  if (Number.isNaN(ms)) return '';
  if (ms < 10000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

/** Seconds a following read asks the server to hold it while nothing changes (the server cuts
 * it to its own limit). */
const FOLLOW_WAIT = 25;

/** Follows `path` (a run, the runs listing) with long-poll reads: each read passes the `stamp` of
 * the answer before as `since=`, and the server answers as soon as what it reads differs, a
 * change made on any instance, or after FOLLOW_WAIT seconds. `show(r)` shows each answer and
 * resolves to whether to go on following. An answer that brings nothing new (the wait was over,
 * a server holding as many reads as it will, a server that gives no stamp) is followed by the
 * next read a second later; a new one a quarter of a second later, so a run that moves fast is
 * read at most four times a second. A hidden tab holds no read (a browser opens only a few
 * connections to one server, and tabs share them); it follows again once shown. The returned
 * function reads now: it starts following, or cuts short the read held at the moment; it
 * resolves once an answer is shown. */
export function follow(page, path, show) {
  const sep = path.includes('?') ? '&' : '?';
  let stamp = null;
  let running = false;
  let now = false; // read at once, without waiting for a change
  let held = null; // the AbortController of the read in flight
  let wake = null; // cuts the pause between two reads short
  let shown = [];
  const interrupt = () => {
    if (held) held.abort();
    if (wake) wake();
  };
  const hidden = () => document.visibilityState === 'hidden';
  const onVisibility = () => {
    if (hidden()) { if (held) held.abort(); } else if (wake) wake();
  };
  document.addEventListener('visibilitychange', onVisibility);
  page.onLeave(() => { document.removeEventListener('visibilitychange', onVisibility); interrupt(); });
  const pause = (ms) => new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    wake = () => { clearTimeout(timer); resolve(); };
  });
  const settle = () => { shown.forEach((f) => f()); shown = []; };
  async function loop() {
    running = true;
    try {
      while (page.alive) {
        const asked = stamp;
        if (asked && !now && hidden()) {
          await pause(3600000); // until shown (or left)
          wake = null;
          continue;
        }
        const query = asked && !now ? `since=${asked}&wait=${FOLLOW_WAIT}` : 'wait=0';
        now = false;
        held = new AbortController();
        const r = await api('GET', `${path}${sep}${query}`, undefined, held.signal);
        const interrupted = held.signal.aborted;
        held = null;
        if (!page.alive) return;
        if (interrupted) continue; // read again: at once (`now`), or once shown
        stamp = typeof r.body.stamp === 'string' ? r.body.stamp : null;
        const again = await show(r);
        settle();
        if (!again || !page.alive) return;
        if (!now) await pause(stamp && stamp !== asked ? 250 : 1000);
        wake = null;
      }
    } finally {
      running = false;
      settle();
    }
  }
  return () => new Promise((resolve) => {
    shown.push(resolve);
    now = true;
    if (running) interrupt();
    else loop();
  });
}

function askForToken(why) {
  const bar = document.getElementById('token');
  if (!bar || !bar.hidden) return;
  const input = h('input', { type: 'password', placeholder: 'API token', 'aria-label': 'API token' });
  bar.replaceChildren(
    h('span', {}, why || 'This server needs an API token.'), ' ', input, ' ',
    h('button', { onclick: () => { sessionStorage.setItem('vwf-token', input.value.trim()); bar.hidden = true; route(); } }, 'Use token'));
  bar.hidden = false;
}

async function route() {
  const [path, query] = (location.hash.replace(/^#/, '') || '/designs').split('?');
  if (current) {
    current.alive = false;
    current.cleanups.forEach((f) => f());
  }
  const page = { alive: true, cleanups: [], guard: null, onLeave(f) { this.cleanups.push(f); } };
  current = page;
  const root = h('div', { class: 'page' });
  document.getElementById('view').replaceChildren(root);
  const section = path.split('/')[1] || 'designs';
  for (const a of document.querySelectorAll('nav a')) {
    a.toggleAttribute('aria-current', a.dataset.section === section || (section === 'designer' && a.dataset.section === 'designs'));
  }
  const match = ROUTES.map(([re, mod, fn]) => [path.match(re), mod, fn]).find(([m]) => m);
  if (!match) {
    root.append(h('h1', {}, 'Not found'), h('p', {}, 'No page at ', h('code', {}, location.hash), '. ', h('a', { href: '#/designs' }, 'Designs')));
    return;
  }
  const [m, mod, fn] = match;
  page.params = m.slice(1).map(decodeURIComponent);
  page.query = new URLSearchParams(query || '');
  try {
    const module = await import(`./pages/${mod}.js`);
    if (page.alive) await module[fn](root, page);
  } catch (e) {
    if (page.alive) root.append(h('p', { class: 'notice error' }, `This page failed: ${e.message}`));
    console.error(e);
  }
}

// Another dashboard page (a link, back, a typed address): asked first when the page on screen
// would lose work; staying puts its address back without reloading it.
window.addEventListener('hashchange', (e) => {
  if (mayLeave()) route();
  else history.replaceState(null, '', e.oldURL);
});
// Closing the tab, reloading or leaving the dashboard: the browser's own question.
window.addEventListener('beforeunload', (e) => {
  const why = loss();
  if (why) {
    e.preventDefault();
    e.returnValue = why; // browsers that ignore preventDefault ask when this is set
  }
});
if (!location.hash) history.replaceState(null, '', '#/designs');
route();
