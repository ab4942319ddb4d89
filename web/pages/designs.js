// Designs: the saved designs and the built-in templates (#/designs), and one design open in the
// embedded canvas (#/designer/<name>), with charts of how its runs went (overview.js). The canvas
// is web/designer.html in embed mode (its own toolbar hidden); the buttons here read its graph
// through `window.vwfDesigner` and call the API, so saving, validating and running always show
// the server's verdict. `#/designer/<name>?version=N` shows recorded version N on the canvas
// instead, read-only (the canvas in its version view), with a banner to restore it or compare it
// with the newest.
import { api, h, enc, navigate, say, issueList } from '../app.js';
import { recentRuns } from './runs.js';
import { versionsSection } from './versions.js';
import { runDialog } from './run-dialog.js';
import { statsSection } from './overview.js';

const BLANK = { nodes: [{ id: 'start', type: 'trigger', mode: 'manual', x: 40, y: 120 }], edges: [] };

/** What the next design page says first: a restore made from a read-only version opens the
 * design's newest version, and says there what it did. */
let flash = null;

export async function renderList(root) {
  const msg = h('div', { class: 'notice', hidden: true });
  const [saved, builtIn] = await Promise.all([api('GET', '/designs'), api('GET', '/templates')]);
  const names = saved.body.designs || [];

  const designs = h('section', { id: 'designs' }, h('h2', {}, 'Saved designs'));
  if (!saved.body.ok) designs.append(h('p', { class: 'notice error' }, saved.body.error));
  else if (names.length === 0) designs.append(h('p', { class: 'muted' }, 'No saved designs yet: start from a template below, or a blank one.'));
  else {
    const disabled = new Set(saved.body.disabled || []);
    designs.append(h('table', {}, names.map((name) => designRow(name, msg, disabled.has(name)))));
  }

  const blankName = h('input', { name: 'blank-name', placeholder: 'new-design', 'aria-label': 'New design name' });
  const blank = h('form', { class: 'inline', onsubmit: (e) => { e.preventDefault(); create(blankName.value.trim(), BLANK, msg); } },
    blankName, h('button', { type: 'submit' }, 'New blank design'));

  const templates = h('section', { id: 'templates' }, h('h2', {}, 'Templates'));
  if (!builtIn.body.ok) templates.append(h('p', { class: 'notice error' }, builtIn.body.error));
  else if (builtIn.body.templates.length === 0) templates.append(h('p', { class: 'muted' }, 'No templates found (VWF_EXAMPLES_DIR names a directory without any).'));
  else templates.append(h('div', { class: 'cards' }, builtIn.body.templates.map((t) => templateCard(t, names, msg))));

  root.append(h('div', { class: 'title' }, h('h1', {}, 'Designs'), blank), msg, designs, templates);
}

function designRow(name, msg, disabled) {
  // Run asks for the input first, prefilled with the design's example or its last run's.
  const run = h('button', { 'data-action': 'run', onclick: () => runDialog(name, (input) => runDesign(name, input, run, msg)) }, 'Run…');
  const row = h('tr', { 'data-design': name },
    h('td', {}, h('a', { href: `#/designer/${enc(name)}` }, name)),
    h('td', { class: 'actions' },
      h('a', { class: 'button', href: `#/designer/${enc(name)}` }, 'Open'), ' ', run, ' ',
      enableToggle(name, disabled, msg), ' ',
      h('a', { class: 'button', href: `#/schedules?design=${enc(name)}` }, 'Schedule'), ' ',
      h('a', { class: 'button', href: `#/runs?design=${enc(name)}` }, 'Runs'), ' ',
      deleteButton(name, msg, () => row.remove())));
  return row;
}

/** Turns the design's automatic trigger on or off (`POST /designs/{name}/enable|disable`); the
 * button says what a click does, `data-enabled` what the design is now. Imports arrive disabled. */
function enableToggle(name, disabled, msg) {
  const label = (on) => (on ? 'Disable trigger' : 'Enable trigger');
  const button = h('button', { 'data-action': 'toggle-enabled', 'data-enabled': String(!disabled), onclick: async () => {
    const on = button.dataset.enabled !== 'true';
    button.disabled = true;
    const r = await api('POST', `/designs/${enc(name)}/${on ? 'enable' : 'disable'}`);
    button.disabled = false;
    if (!r.body.ok) return say(msg, 'error', `Not changed: ${r.body.error}`);
    say(msg, 'ok', r.body.enabled ? `Enabled ${name}: its trigger fires from now on.` : `Disabled ${name}: its trigger does not fire until enabled.`);
    button.dataset.enabled = String(r.body.enabled);
    button.textContent = label(r.body.enabled);
  } }, label(!disabled));
  return button;
}

/** Delete, asking once more first (the second click deletes). The runs stay readable; a schedule
 * of the design is paused by the server, which says so. */
function deleteButton(name, msg, done) {
  const button = h('button', { class: 'danger', 'data-action': 'delete', onclick: async () => {
    if (!button.dataset.armed) {
      button.dataset.armed = '1';
      button.textContent = `Confirm delete ${name}`;
      return;
    }
    button.disabled = true;
    const r = await api('DELETE', `/designs/${enc(name)}`);
    if (!r.body.ok) {
      button.disabled = false;
      return say(msg, 'error', `Not deleted: ${r.body.error}`);
    }
    done();
    say(msg, 'ok', `Deleted ${name}. Its runs stay readable: `, h('a', { href: `#/runs?design=${enc(name)}` }, `runs of ${name}`), '.',
      r.body.schedule ? ` Its schedule is paused (${r.body.schedule.paused_reason}).` : '');
  } }, 'Delete');
  return button;
}

function templateCard(t, names, msg) {
  let suggestion = t.name;
  for (let i = 2; names.includes(suggestion); i++) suggestion = `${t.name}-${i}`;
  const name = h('input', { name: 'name', value: suggestion, 'aria-label': `Name for a design from ${t.name}` });
  const nodes = Array.isArray(t.graph.nodes) ? t.graph.nodes.length : 0;
  return h('form', { class: 'card', 'data-template': t.name, onsubmit: (e) => { e.preventDefault(); create(name.value.trim(), t.graph, msg); } },
    h('h3', {}, t.name), h('p', {}, t.description || h('span', { class: 'muted' }, 'No description.')),
    h('p', { class: 'muted small' }, `${nodes} nodes`),
    h('div', { class: 'inline' }, name, h('button', { type: 'submit' }, 'New from template')));
}

/** Creates design `name` from `graph` and opens it in the designer. The server creates it only
 * under a name no design has (`create: true`), so a new design never replaces a saved one; its
 * refusal is shown, with the way to the design that has the name. */
async function create(name, graph, msg) {
  if (!name) return say(msg, 'error', 'Give the design a name first.');
  const r = await api('POST', `/designs/${enc(name)}`, { graph, create: true });
  if (r.body.ok) return navigate(`#/designer/${enc(name)}`);
  const taken = r.status === 409
    ? h('p', {}, 'Nothing was replaced: ', h('a', { href: `#/designer/${enc(name)}` }, `open ${name}`), ', or choose another name.')
    : null;
  say(msg, 'error', h('p', {}, `Not created: ${r.body.error}`), taken, r.body.errors ? issueList(r.body.errors) : null);
}

/** Starts a run of a saved design and opens its page at once (the API answers as soon as the run
 * has started; the run page follows it live). `scope` adds to the request (`test: true`). */
async function runDesign(name, input, button, msg, scope = {}) {
  button.disabled = true;
  const label = button.textContent;
  button.textContent = 'Starting…';
  const r = await api('POST', `/designs/${enc(name)}/run`, input === undefined ? { ...scope, wait: false } : { ...scope, input, wait: false });
  button.disabled = false;
  button.textContent = label;
  if (r.body.run_id) return navigate(`#/runs/${r.body.run_id}`);
  say(msg, 'error', h('p', {}, `Not started: ${r.body.error}`), r.body.errors ? issueList(r.body.errors) : null);
}

export async function renderDesigner(root, page) {
  const [name] = page.params;
  const shown = Number(page.query.get('version')) || null; // a recorded version, read-only
  const msg = h('div', { class: 'notice', hidden: true });
  if (flash) say(msg, 'ok', flash);
  flash = null;
  const state = h('span', { class: 'muted', id: 'design-state' }, 'loading the canvas…');
  const loaded = await api('GET', shown ? `/designs/${enc(name)}/versions/${shown}` : `/designs/${enc(name)}`);
  if (!loaded.body.ok) {
    root.append(h('h1', {}, name), h('p', { class: 'notice error' }, loaded.body.error),
      shown ? h('p', {}, h('a', { href: `#/designer/${enc(name)}` }, `${name}, newest version`)) : null, h('a', { href: '#/designs' }, '← Designs'));
    return;
  }
  // What the server holds, as the canvas gives it once loaded: an edit is a difference from it.
  let lastSaved = loaded.body.graph;
  let dirty = false;
  const refreshState = () => {
    dirty = !shown && !!designer() && !same(designer().getGraph(), lastSaved);
    state.textContent = shown ? `version ${shown} (read-only)` : dirty ? 'unsaved changes' : 'saved';
  };
  page.guard = () => (dirty ? `${name} has unsaved changes. Leave without saving them?` : null);
  const at = shown ? `&version=${shown}` : '';
  const frame = h('iframe', { class: 'canvas', title: shown ? `Designer: ${name}, version ${shown} (read-only)` : `Designer: ${name}`, src: `designer.html?design=${enc(name)}${at}&embed=1` });
  const designer = () => frame.contentWindow && frame.contentWindow.vwfDesigner;
  const pick = (node) => designer() && designer().select(node);
  const buttons = {
    save: h('button', { disabled: true, onclick: () => save() }, 'Save'),
    validate: h('button', { disabled: true, onclick: () => validate() }, 'Validate'),
    run: h('button', { disabled: true, class: 'primary', onclick: () => run() }, 'Save & run'),
    test: h('button', { disabled: true, 'data-action': 'test-run', title: 'Save, then run with each pinned step giving its pinned output instead of running', onclick: () => run({ test: true }) }, 'Test run'),
  };
  // A read-only version is neither saved nor run from here: its banner restores it first.
  const setBusy = (busy) => Object.values(buttons).forEach((b) => { b.disabled = busy || !designer() || !!shown; });

  async function save() {
    setBusy(true);
    let graph;
    try {
      graph = designer().getGraph();
    } catch (e) {
      setBusy(false);
      say(msg, 'error', `The canvas could not give its graph: ${e.message}`);
      return false;
    }
    const r = await api('POST', `/designs/${enc(name)}`, { graph });
    setBusy(false);
    if (r.body.ok) {
      lastSaved = graph;
      refreshState(); // an edit made while saving is still unsaved
      say(msg, 'ok', `Saved ${name} (${r.body.nodes} nodes).`);
      versions.reload();
      return true;
    }
    say(msg, 'error', h('p', {}, `Not saved: ${r.body.error}`), r.body.errors ? issueList(r.body.errors, pick) : null);
    return false;
  }

  async function validate() {
    setBusy(true);
    let v = null;
    try {
      v = await designer().validate(); // the canvas marks the server's verdict on its nodes
    } catch { /* fall back to asking the API here */ }
    if (!v || !Array.isArray(v.errors)) v = (await api('POST', `/designs/${enc(name)}/validate`, { graph: designer().getGraph() })).body;
    setBusy(false);
    if (!Array.isArray(v.errors)) return say(msg, 'error', `Cannot validate: ${v.error}`);
    const issues = [...v.errors, ...(v.warnings || []).map((w) => ({ ...w, message: `warning: ${w.message}` }))];
    say(msg, v.errors.length ? 'error' : 'ok', h('p', {}, v.errors.length ? `${v.errors.length} error(s).` : 'Valid.'), issues.length ? issueList(issues, pick) : null);
  }

  // The run input is the canvas's own box (its side panel, with nothing selected), which also
  // feeds its suggestions of `trigger.` fields. `{test: true}`: a test run, pinned steps giving
  // their pinned output.
  async function run(scope = {}) {
    const given = designer().getRunInput();
    if (given.error) return say(msg, 'error', given.error);
    if (!(await save())) return;
    await runDesign(name, given.input, scope.test ? buttons.test : buttons.run, msg, scope);
  }

  // The canvas tells its parent what happened in it (its own keyboard shortcuts included).
  const onMessage = (e) => {
    if (e.origin !== location.origin || e.source !== frame.contentWindow || !e.data || e.data.type !== 'vwf-designer') return;
    if (e.data.event === 'changed') refreshState();
    if (e.data.event === 'saved') {
      lastSaved = designer().getGraph();
      refreshState();
      versions.reload();
    }
    if (e.data.event === 'ran' && e.data.run_id && !e.data.step) navigate(`#/runs/${e.data.run_id}`);
    if (e.data.event === 'fullscreen') frame.classList.toggle('full', !!e.data.on);
  };
  window.addEventListener('message', onMessage);
  page.onLeave(() => window.removeEventListener('message', onMessage));

  // The canvas sets `window.vwfDesigner` as it starts and then loads the design; the buttons
  // wait until it shows the saved graph (no dead controls, and never an early empty graph saved
  // over the design). A canvas that does not load it in time is given it.
  const saved = loaded.body.graph;
  const count = (g) => (g && Array.isArray(g.nodes) ? g.nodes.length : -1);
  frame.addEventListener('load', () => {
    let tries = 0;
    const ready = () => {
      if (!page.alive) return;
      const d = designer();
      let shown = -1;
      try {
        shown = d ? count(d.getGraph()) : -1;
      } catch { /* still starting */ }
      if (d && (shown === count(saved) || tries >= 30)) {
        if (shown !== count(saved)) d.setGraph(saved);
        lastSaved = d.getGraph();
        refreshState();
        setBusy(false);
      } else if (++tries < 60) {
        setTimeout(ready, 100);
      } else {
        state.textContent = 'the canvas did not start (web/designer.html)';
      }
    };
    ready();
  });

  // A restore saves on the server: the canvas then shows what it saved. Made from a read-only
  // version, it opens the design (its newest version, now the restored content) to edit.
  const versions = versionsSection(name, page, (graph, said) => {
    if (shown) {
      flash = said;
      navigate(`#/designer/${enc(name)}`);
      return;
    }
    if (!graph) return;
    if (designer()) designer().setGraph(graph);
    lastSaved = designer() ? designer().getGraph() : graph;
    refreshState();
  });
  root.classList.add('wide');
  root.append(
    h('div', { class: 'title' },
      h('h1', {}, h('a', { href: '#/designs', class: 'muted' }, 'Designs'), ' / ', name), state),
    h('div', { class: 'toolbar' }, buttons.save, buttons.validate, buttons.run, buttons.test,
      h('a', { class: 'button', href: `#/schedules?design=${enc(name)}` }, 'Schedule…'),
      h('a', { class: 'button', id: 'standalone', href: `designer.html?design=${enc(name)}${at}`, target: '_blank', rel: 'noopener', title: 'The same canvas on a page of its own (save here first: it opens the saved design)' }, 'Open in the standalone designer'),
      shown ? null : h('span', { class: 'muted small' }, 'Run input: in the canvas side panel, with nothing selected.')),
    msg, shown ? versionBanner(name, shown, versions) : null, frame, statsSection(name, page), versions.section, recentRuns(name, page));
}

/** Over a recorded version shown read-only: which it is, and what can be done with it. */
function versionBanner(name, shown, versions) {
  return h('div', { id: 'version-banner', class: 'version-banner' },
    h('b', {}, `Version ${shown} (read-only)`),
    h('span', { class: 'muted small' }, 'As it was saved: nothing here can be edited or saved.'),
    h('button', { 'data-action': 'restore-version', title: 'Save this version\'s content as the newest version, then edit it', onclick: (e) => versions.restore(shown, e.currentTarget) }, 'Restore this version'),
    h('button', { 'data-action': 'compare-version', title: 'The diff of this version against the newest', onclick: () => versions.compare(shown) }, 'Compare with now'),
    h('a', { class: 'button', href: `#/designer/${enc(name)}` }, 'Edit the newest'));
}

/** Whether two graphs are the same JSON (what the canvas shows against what was last saved). */
function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}
