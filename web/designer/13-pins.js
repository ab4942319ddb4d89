// ---------------------------------------------------------------------------------------------
// Pins and test runs. A design's `pins` maps a step id to the output a test run uses instead of
// running that step (a text, or an output view {text, data, ...}); normal runs never read them.
// Pinning is an edit of the design like any other (one undo step, saved with the design). From
// a node's panel a step can be run alone (`only`: what leads to it comes from pins and the
// design's past runs) or with everything leading to it (`until`); the result shows on the node.
// ---------------------------------------------------------------------------------------------
/** The pinned output of step `id`, if it has one. */
function pinOf(id) { return isObj(graph.pins) && Object.prototype.hasOwnProperty.call(graph.pins, id) ? graph.pins[id] : undefined; }

/** Pins `value` on step `id`, or removes its pin (`undefined`). */
function setPin(id, value) {
  change(() => {
    if (value === undefined) {
      if (isObj(graph.pins)) delete graph.pins[id];
    } else {
      if (!isObj(graph.pins)) graph.pins = {};
      graph.pins[id] = value;
    }
    if (isObj(graph.pins) && !Object.keys(graph.pins).length) delete graph.pins;
  }, { panel: true });
  say(value === undefined ? `${id} is not pinned: test runs run it` : `Pinned ${id}: test runs use this output instead of running it`, 'good');
}

/** A typed pin: JSON of an object or a string as written, anything else as the text. */
function typedPin(text) {
  try {
    const v = JSON.parse(text);
    if (isObj(v) || typeof v === 'string') return v;
  } catch (_) { /* plain text */ }
  return text;
}

/** An output's text (an output view's `text`, else its JSON). */
function outputText(out) { return isObj(out) && typeof out.text === 'string' ? out.text : typeof out === 'string' ? out : JSON.stringify(out); }

/** Step `id`'s output in the run on the canvas, else in the design's last run. */
function lastOutput(id) {
  for (const r of [runState, lastRun]) if (r && r.design === designName && isObj(r.outputs) && r.outputs[id] !== undefined) return r.outputs[id];
  return undefined;
}

function renderTestSection(box, node) {
  if (node.type === 'trigger' || node.type === 'note') return;
  const sec = h('div', { class: 'field test-section', 'data-testid': 'test-section' }, h('label', { text: 'Test' }));
  const pinned = pinOf(node.id);
  const last = lastOutput(node.id);
  if (pinned !== undefined) {
    sec.append(h('p', { class: 'muted', text: 'Pinned: a test run uses this output instead of running the step (a normal run never does).' }),
      h('pre', { 'data-testid': 'pinned-output', text: isObj(pinned) ? JSON.stringify(pinned, null, 2) : String(pinned) }),
      h('div', { class: 'row' }, h('button', { 'data-testid': 'btn-unpin', onclick: () => setPin(node.id, undefined), text: 'Unpin' })));
  } else {
    const hint = node.type === 'condition' ? '{"value": true}' : node.type === 'approval' ? '{"answer": "approve"}' : 'Output text, or {"text": "…", "data": …}';
    const area = h('textarea', { 'data-testid': 'pin-input', rows: 2, placeholder: hint, spellcheck: 'false' });
    sec.append(area, h('div', { class: 'row' },
      h('button', { 'data-testid': 'btn-pin', text: 'Pin this output', onclick: () => { if (area.value.trim()) setPin(node.id, typedPin(area.value)); else say('Type the output to pin first', 'bad'); } }),
      last !== undefined ? h('button', { 'data-testid': 'btn-pin-last', onclick: () => setPin(node.id, last), text: "Pin the last run's output" }) : null));
  }
  if (SERVED) {
    sec.append(h('div', { class: 'row' },
      h('button', { 'data-testid': 'btn-run-step', title: 'A test run of this step alone: what leads to it gives its pin or its last output', onclick: () => run(undefined, { only: node.id }), text: 'Run this step' }),
      h('button', { 'data-testid': 'btn-run-until', title: 'A test run of this step and every step leading to it', onclick: () => run(undefined, { until: node.id }), text: 'Run up to here' })));
  }
  if (last !== undefined) sec.append(h('details', { open: true }, h('summary', { text: 'Last output' }), h('pre', { 'data-testid': 'last-output', text: outputText(last) })));
  box.append(sec);
}

function renderEdgePanel(box, index) {
  const e = edges()[index];
  const from = nodeById(e.from);
  box.append(h('div', { class: 'heading' }, h('h3', { text: `${e.from} → ${e.to}` }), h('span', { class: 'badge', text: 'Edge' })));
  const choices = labelChoices(from);
  const select = h('select', { id: 'f-edge-label', 'data-testid': 'edge-label' });
  const current = e.label === undefined || e.label === null ? '' : String(e.label);
  const opts = [['', choices.length ? '(choose a label)' : '(no label)'], ...choices.map((c) => [c, c])];
  if (current && !choices.includes(current)) opts.push([current, current]);
  for (const [v, label] of opts) select.append(h('option', { value: v, text: label }));
  select.value = current;
  select.addEventListener('change', () => {
    const v = select.value;
    change(() => { if (v === '') delete e.label; else e.label = v; }, { panel: true });
    document.querySelector('[data-testid="edge-label"]')?.focus();
  });
  const what = from ? ({ condition: 'Taken when the condition is true or false.', approval: 'Taken when the answer is this option; without a label, on every answer.', loop: 'each enters the loop body; done runs after the last pass.' }[from.type] || 'Plain edges carry no label.') : '';
  box.append(h('div', { class: 'field', 'data-field': 'label' }, h('label', { for: 'f-edge-label' }, 'Label', h('small', { text: ' — ' + what })), select, h('div', { class: 'msg' })));
  box.append(h('div', { class: 'row' }, h('button', { 'data-testid': 'btn-delete', onclick: deleteSelection, text: 'Delete edge' })));
}

function renderDesignPanel(box) {
  box.append(h('div', { class: 'heading' }, h('h3', { text: designName || 'Untitled design' }), h('span', { class: 'badge', text: 'Design' })));
  box.append(h('p', { class: 'muted', text: `${nodes().length} nodes, ${edges().length} edges. Select a node or an edge to edit it.` }));
  const edit = (value, def) => change(() => set(graph, def.key, value), { key: 'design:' + def.key });
  appendRows(box, DESIGN_FIELDS, graph, edit, { idPrefix: 'd', own: (def) => def.key === 'inputs' && inputsEditor() });
  if (SERVED) {
    const input = h('textarea', { id: 'run-input', 'data-testid': 'run-input', rows: 2, placeholder: '{"topic": "…"} (optional)', spellcheck: 'false' });
    input.value = runInput;
    input.addEventListener('input', () => { runInput = input.value; });
    box.append(h('div', { class: 'field' }, h('label', { for: 'run-input' }, 'Run input', h('small', { text: ' — JSON given to Run, not saved' })), input));
  }
  if (Array.isArray(graph.activities) && !Array.isArray(graph.edges)) {
    box.append(h('p', { class: 'muted', text: 'This design uses the sequential form (activities); the canvas edits nodes and edges and keeps the activities as they are.' }));
  }
}
let runInput = '';

/** Focuses the panel input of `key`, or the first one inside it (`schedule` → its preset). */
function focusField(key) {
  const rows = [...document.querySelectorAll('#panel .field[data-field]')];
  const row = rows.find((r) => r.dataset.field === key) || rows.find((r) => r.dataset.field.startsWith(key + '.'));
  const input = row && row.querySelector('input, select, textarea');
  if (input) input.focus();
}

/** Outlines the panel's fields that the last validation names. */
function markPanel() {
  if (READ_ONLY) return;
  const cur = currentIssues();
  const all = [...cur.errors.map((i) => ({ ...i, kind: 'error' })), ...cur.warnings.map((i) => ({ ...i, kind: 'warning' }))];
  // The design's own fields: in its panel, and in a trigger's (the runs-at-once group).
  const design = all.filter((i) => i.field && i.node === undefined && i.edge === undefined);
  let list = design;
  if (sel && sel.node !== undefined) {
    const node = nodes()[sel.node];
    list = node ? all.filter((i) => i.node === node.id && i.field) : [];
  } else if (sel && sel.edge !== undefined) {
    list = all.filter((i) => i.edge === sel.edge).map((i) => ({ ...i, field: 'label' }));
  }
  // An issue about a whole object (`concurrency`) outlines each of its rows, said under the first.
  const said = new Set();
  for (const row of document.querySelectorAll('#panel .field[data-field]')) {
    const key = row.dataset.field;
    const mine = (row.closest('[data-scope="design"]') ? design : list).filter((i) => i.field === key || key.startsWith(i.field + '.'));
    const err = mine.some((i) => i.kind === 'error');
    row.classList.toggle('error', err);
    row.classList.toggle('warning', !err && mine.length > 0);
    const input = row.querySelector('input, select, textarea');
    if (input) { if (err) input.setAttribute('aria-invalid', 'true'); else input.removeAttribute('aria-invalid'); }
    const msg = row.querySelector('.msg');
    if (msg) msg.textContent = mine.filter((i) => !said.has(i)).map((i) => i.message).join(' · ');
    for (const i of mine) said.add(i);
  }
}

