// ---------------------------------------------------------------------------------------------
// Expressions: suggestions while typing a template ({{…}}) or a condition (out.…), the value
// each reference had in the design's last run, and renaming a node with its references.
// What a node may name is the validator's answer (`scopes` of POST …/validate?scope=1), never
// worked out here; the last run's outputs, pins and the run input box only supply field names and
// values to show. Before any run, the fields a step will output come from its type's output view
// (outputViewOf), a design step's from the saved design it runs, the input's from `inputs`.
// ---------------------------------------------------------------------------------------------
/** {nodeId: {nodes: [ids a reference may name], loop: id | null}} from the last validation. */
let scopes = null;
/** The newest run of this design (a run result), for field names and values; null if none. */
let lastRun = null;
/** Each step's output in the newest of the design's recent runs that has one (a step the newest
 * run did not reach keeps the one before): {id: output view}. */
let lastSeen = {};
const REF_CHARS = /^[A-Za-z0-9_.\-]*$/;

/** The run input box's JSON, or undefined when it is empty or not JSON. */
function runInputValue() {
  if (!runInput.trim()) return undefined;
  try { return JSON.parse(runInput); } catch (e) { return undefined; }
}

/** The node the panel shows, or null. */
function panelNode() { return sel && sel.node !== undefined && isObj(nodes()[sel.node]) ? nodes()[sel.node] : null; }

/** Longest id of `ids` that `dotted` is or starts with (then a dot), and the rest. */
function longestId(ids, dotted) {
  let best = null;
  for (const id of ids) {
    if (!id) continue;
    const rest = dotted === id ? '' : dotted.startsWith(id + '.') ? dotted.slice(id.length + 1) : null;
    if (rest !== null && (!best || id.length > best.id.length)) best = { id, rest };
  }
  return best;
}

/** A step's output view as it is addressed: its fields, and the keys of an object `data`. */
function addressable(view) {
  if (!isObj(view)) return view;
  return isObj(view.data) ? { ...view.data, ...view } : view;
}
/** The run input as a template sees it (`trigger…`): the fields of the run input box and of the
 * last run's input (the box's values first), then the view's own `text` and `data`. */
function inputView() {
  const given = runInputValue();
  const last = lastRun && isObj(lastRun.trigger) ? lastRun.trigger.input : undefined;
  const input = given !== undefined ? given : last;
  if (input === undefined) return undefined;
  return { ...(isObj(last) ? last : {}), ...(isObj(given) ? given : {}), text: JSON.stringify(input), data: input };
}
/** What `root` (nodes.<id>, trigger, item) stood for in the last run; undefined when unknown. */
function rootValue(kind, id) {
  if (kind === 'trigger') return inputView();
  if (kind === 'item') {
    // The first item the loop's `over` gave in the last run (a reference, or literal JSON).
    const sc = scopes && panelNode() ? scopes[panelNode().id] : null;
    const lp = sc && sc.loop ? nodeById(sc.loop) : null;
    if (!lp || typeof lp.over !== 'string') return undefined;
    const one = /^\s*\{\{\s*([A-Za-z0-9_.\-]+)\s*\}\}\s*$/.exec(lp.over);
    let items = one ? refValue(one[1]).value : lp.over;
    if (typeof items === 'string') { try { items = JSON.parse(items); } catch (e) { return undefined; } }
    return Array.isArray(items) && items.length ? items[0] : undefined;
  }
  const trig = nodes().find((n) => isObj(n) && n.type === 'trigger');
  if (trig && trig.id === id) return inputView();
  if (lastRun && isObj(lastRun.outputs) && lastRun.outputs[id] !== undefined) return addressable(lastRun.outputs[id]);
  if (lastSeen[id] !== undefined) return addressable(lastSeen[id]);
  const pin = pinOf(id);
  return pin === undefined ? undefined : addressable(pinView(pin));
}
/** A pin as the output view a test run gives from it: a text, or the view it states. */
function pinView(pin) {
  const parse = (t) => { try { return JSON.parse(t); } catch (e) { return null; } };
  if (typeof pin === 'string') return { text: pin, data: parse(pin) };
  if (isObj(pin) && pin.data === undefined && typeof pin.text === 'string') return { ...pin, data: parse(pin.text) };
  return pin;
}

/** Saved designs that design steps run, read for their steps' names: name → graph, or null
 * while it is read (or when there is none). Read again when a design is opened. */
const childDesigns = new Map();
function childDesign(name) {
  if (!SERVED || typeof name !== 'string' || !name) return null;
  if (!childDesigns.has(name)) {
    childDesigns.set(name, null);
    api('GET', `/designs/${enc(name)}`).then((r) => {
      if (!r.body || !r.body.ok || !isObj(r.body.graph) || !Array.isArray(r.body.graph.nodes)) return;
      childDesigns.set(name, r.body.graph);
      if (acField) acField();
    });
  }
  return childDesigns.get(name);
}

/** The fields one level below `path` that a reference's root will have, known before any run:
 * a step's output view as its type gives it (and its `error`'s), a design step's child steps
 * under `outputs` (and their views), the fields the design declares for its input (`trigger.`). */
function expectedFields(parts, path) {
  const declared = () => (inputRows(graph.inputs) || []).map((r) => r.name.trim()).filter(Boolean);
  if (parts.kind === 'trigger') return path === '' || path === 'data' ? declared() : [];
  const node = parts.kind === 'node' ? nodeById(parts.id) : null;
  if (!node) return [];
  if (node.type === 'trigger') return path === '' ? [...VIEW_BASE, ...declared()] : path === 'data' ? declared() : [];
  const child = node.type === 'design' ? childDesign(node.design) : null; // read ahead of `outputs.`
  if (path === '') return outputViewOf(node.type);
  // What a failed step gives its error path (its `error`).
  if (path === 'error' && outputViewOf(node.type).includes('error')) return ['message', 'kind', 'attempts', ...({ http: ['status'], command: ['exit_code'] }[node.type] || [])];
  if (!child) return [];
  const steps = child.nodes.filter((n) => isObj(n) && typeof n.id === 'string' && n.type !== 'note' && n.type !== 'trigger');
  if (path === 'outputs') return steps.map((n) => n.id);
  const step = path.startsWith('outputs.') ? steps.find((n) => n.id === path.slice('outputs.'.length)) : null;
  return step ? outputViewOf(step.type) : [];
}
function walk(value, path) {
  let cur = value;
  for (const part of path ? path.split('.') : []) {
    if (isObj(cur)) cur = cur[part];
    else if (Array.isArray(cur) && /^\d+$/.test(part)) cur = cur[Number(part)];
    else return undefined;
    if (cur === undefined) return undefined;
  }
  return cur;
}
/** Splits a reference (`nodes.a.b`, `out.a.b`, `trigger.x`, `item.x`) into root and path. */
function splitRef(ref, ids) {
  const m = /^(nodes|out)\.(.*)$/.exec(ref);
  if (m) { const hit = longestId(ids, m[2]); return hit ? { kind: 'node', id: hit.id, path: hit.rest, base: `${m[1]}.${hit.id}` } : null; }
  const t = /^(trigger|item)(?:\.(.*))?$/.exec(ref);
  return t ? { kind: t[1], id: null, path: t[2] || '', base: t[1] } : null;
}
/** The value a reference had in the last run: {known, value}. */
function refValue(ref) {
  if (ref === 'loop.index') return { known: !!lastRun, value: 0 };
  const parts = splitRef(ref, nodes().filter(isObj).map((n) => n.id));
  if (!parts) return { known: false };
  const root = rootValue(parts.kind, parts.id);
  // A step or the input named without a path inserts its text.
  const value = !parts.path && parts.kind !== 'item' && isObj(root) && 'text' in root ? root.text : walk(root, parts.path);
  return value === undefined ? { known: false } : { known: true, value };
}
function preview(value, n = 60) { return clip(typeof value === 'string' ? value : JSON.stringify(value), n); }

/** What may be typed at the caret: {from, items: [{insert, detail}], note}, or null. */
function suggest(node, def, before) {
  let from, q, prefix;
  if (def.expr) {
    const m = /^(\s*)([A-Za-z0-9_.\-]*)$/.exec(before);
    if (!m || !('out.'.startsWith(m[2]) || m[2].startsWith('out.'))) return null;
    from = m[1].length; q = m[2]; prefix = 'out';
  } else {
    const open = before.lastIndexOf('{{');
    if (open < 0 || before.indexOf('}}', open) >= 0) return null;
    const inner = before.slice(open + 2);
    const lead = /^\s*/.exec(inner)[0];
    q = inner.slice(lead.length);
    if (!REF_CHARS.test(q)) return null;
    from = open + 2 + lead.length; prefix = 'nodes';
  }
  const sc = scopes && scopes[node.id];
  const items = [];
  const add = (insert, value) => items.push({ insert, detail: value === undefined ? '' : preview(value, 40) });
  const children = (value, base) => {
    for (const [k, v] of Object.entries(isObj(value) ? value : Array.isArray(value) ? value.slice(0, 10) : {})) {
      add(`${base}.${k}`, v);
    }
  };
  const parts = sc ? splitRef(q, sc.nodes) : null;
  if (parts && (parts.kind !== 'node' || q.length > parts.base.length)) {
    // Inside a reference that names its root: the fields one level below what is typed.
    const path = parts.path.includes('.') ? parts.path.slice(0, parts.path.lastIndexOf('.')) : '';
    const value = walk(rootValue(parts.kind, parts.id), path);
    const base = path ? `${parts.base}.${path}` : parts.base;
    children(value, base);
    // What the step will output, before a run has shown it (after the last run's own fields).
    for (const k of expectedFields(parts, path)) if (!items.some((it) => it.insert === `${base}.${k}`)) add(`${base}.${k}`);
  } else if (sc) {
    const known = (ref) => { const v = refValue(ref); return v.known ? v.value : undefined; };
    for (const id of sc.nodes) add(`${prefix}.${id}`, known(`nodes.${id}`));
    if (!def.expr) {
      add('trigger', known('trigger'));
      if (sc.loop) { add('item', rootValue('item')); add('loop.index'); }
      add('run.id');
      add('run.design', designName || undefined);
    }
  }
  const lower = q.toLowerCase();
  const shown = items.filter((it) => it.insert.toLowerCase().startsWith(lower) && it.insert !== q);
  const note = !SERVED ? 'Suggestions of steps need the server (vwf serve).' : !sc ? 'Checking what this step can read…' : null;
  return { from, items: shown.slice(0, 50), note };
}

let acBox = null, acShow = null;
/** The suggestions of the field being typed in (shown or not), asked again when more is known. */
let acField = null;
function closeSuggestions() { if (acBox) { acBox.remove(); acBox = null; } acShow = null; }

/** Wires a template or condition input: suggestions while typing, reference chips below it. */
function assistField(input, def) {
  const chips = h('div', { class: 'refs', 'data-testid': 'refs-' + def.key });
  let state = null; // {from, items, active}
  const apply = (item) => {
    const caret = input.selectionStart;
    const text = input.value;
    let insert = item.insert;
    let tail = text.slice(caret);
    if (!def.expr && !/^\s*\}\}/.test(tail)) tail = '}}' + tail;
    input.value = text.slice(0, state.from) + insert + tail;
    const at = state.from + insert.length;
    input.setSelectionRange(at, at);
    closeSuggestions();
    state = null;
    input.dispatchEvent(new Event('input', { bubbles: true }));
  };
  const show = () => {
    closeSuggestions();
    const node = panelNode();
    const caret = input.selectionStart;
    if (!node || caret !== input.selectionEnd) { state = null; return; }
    const got = suggest(node, def, input.value.slice(0, caret));
    if (!got || (!got.items.length && !got.note)) { state = null; return; }
    state = { ...got, active: 0 };
    const r = input.getBoundingClientRect();
    acBox = h('ul', { class: 'ac', 'data-testid': 'autocomplete', role: 'listbox' });
    if (got.note && !got.items.length) acBox.append(h('li', { class: 'ac-note', text: got.note }));
    got.items.forEach((item, i) => {
      const li = h('li', { 'data-testid': 'ac-item', 'data-value': item.insert, role: 'option', class: i === 0 ? 'active' : '' },
        h('span', { text: item.insert }), item.detail ? h('small', { text: item.detail }) : null);
      li.addEventListener('pointerdown', (e) => { e.preventDefault(); apply(item); });
      acBox.append(li);
    });
    document.body.append(acBox);
    // Under the field, kept inside the window.
    acBox.style.left = Math.max(4, Math.min(r.left, window.innerWidth - acBox.offsetWidth - 4)) + 'px';
    acBox.style.top = Math.max(4, Math.min(r.bottom + 2, window.innerHeight - acBox.offsetHeight - 4)) + 'px';
    acShow = show;
  };
  const move = (step) => {
    const lis = acBox ? [...acBox.querySelectorAll('[data-testid="ac-item"]')] : [];
    if (!lis.length) return;
    state.active = (state.active + step + lis.length) % lis.length;
    lis.forEach((li, i) => li.classList.toggle('active', i === state.active));
    lis[state.active].scrollIntoView({ block: 'nearest' });
  };
  input.addEventListener('input', () => { show(); showRefs(chips, input.value, def); });
  input.addEventListener('focus', () => { acField = show; if (def.expr) show(); });
  input.addEventListener('blur', () => { closeSuggestions(); state = null; if (acField === show) acField = null; });
  input.addEventListener('keydown', (e) => {
    if (!acBox || !state) return;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') { e.preventDefault(); move(e.key === 'ArrowDown' ? 1 : -1); }
    else if ((e.key === 'Enter' || e.key === 'Tab') && state.items.length) { e.preventDefault(); apply(state.items[state.active]); }
    else if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); closeSuggestions(); state = null; }
  });
  showRefs(chips, input.value, def);
  return chips;
}

/** The references a field's text makes, each a chip whose hover shows its last-run value. */
function showRefs(box, text, def) {
  const refs = [];
  if (def.expr) { const m = /^\s*(out\.[A-Za-z0-9_.\-]+)/.exec(text); if (m) refs.push(m[1]); }
  else for (const m of text.matchAll(/\{\{\s*([A-Za-z0-9_.\-]+)\s*\}\}/g)) if (!refs.includes(m[1])) refs.push(m[1]);
  box.replaceChildren(...refs.map((ref) => {
    const chip = h('span', { class: 'ref', 'data-testid': 'ref', 'data-ref': ref, tabindex: 0, text: ref });
    const tip = () => {
      const v = refValue(ref.replace(/^out\./, 'nodes.'));
      return v.known ? (typeof v.value === 'string' ? v.value : JSON.stringify(v.value, null, 2)) : lastRun ? 'No value in the last run.' : 'No run of this design yet: run it to see values.';
    };
    const enter = () => {
      hideRefTip();
      const r = chip.getBoundingClientRect();
      refTip = h('pre', { class: 'ref-tip', 'data-testid': 'ref-value', text: tip() });
      refTip.style.left = Math.max(4, Math.min(r.left, window.innerWidth - 370)) + 'px';
      refTip.style.top = Math.min(r.bottom + 3, window.innerHeight - 60) + 'px';
      document.body.append(refTip);
    };
    chip.addEventListener('mouseenter', enter);
    chip.addEventListener('focus', enter);
    chip.addEventListener('mouseleave', hideRefTip);
    chip.addEventListener('blur', hideRefTip);
    return chip;
  }));
}
let refTip = null;
function hideRefTip() { if (refTip) { refTip.remove(); refTip = null; } }

/** The newest run of the open design, for suggestions and values. */
async function loadLastRun() {
  if (!SERVED || READ_ONLY || !designName) return;
  const name = designName;
  childDesigns.clear();
  const r = await api('GET', `/runs?design=${enc(name)}&limit=50`);
  if (name !== designName || !r.body || !Array.isArray(r.body.runs)) return;
  const runs = r.body.runs.filter((run) => isObj(run) && run.design === name && isObj(run.outputs));
  lastRun = runs[0] || null;
  lastSeen = {};
  for (const run of runs.slice().reverse()) Object.assign(lastSeen, run.outputs);
}

/** Every reference to node `old` in `text` (templates, and `out.` when `expr`) renamed to
 * `neu`: {text, count}. A reference names the longest known id it starts with (`ids`). */
function renameIn(text, old, neu, ids, expr) {
  let count = 0;
  const swap = (whole, head, ref, tail) => {
    const hit = longestId(ids, ref);
    if (!hit || hit.id !== old) return whole;
    count++;
    return `${head}${neu}${hit.rest ? '.' + hit.rest : ''}${tail}`;
  };
  let out = text.replace(/(\{\{\s*nodes\.)([A-Za-z0-9_.\-]+)(\s*\}\})/g, swap);
  if (expr) out = out.replace(/^(\s*out\.)([A-Za-z0-9_.\-]+)()/, swap);
  return { text: out, count };
}
/** Renames in every string of a node's fields (not its id or type); returns the count. */
function renameInNode(n, old, neu, ids) {
  let count = 0;
  const visit = (v, expr) => {
    if (typeof v === 'string') { const r = renameIn(v, old, neu, ids, expr); count += r.count; return r.text; }
    if (Array.isArray(v)) return v.map((x) => visit(x, false));
    if (isObj(v)) { for (const k of Object.keys(v)) v[k] = visit(v[k], false); return v; }
    return v;
  };
  for (const k of Object.keys(n)) if (k !== 'id' && k !== 'type') n[k] = visit(n[k], n.type === 'condition' && k === 'expr');
  return count;
}

