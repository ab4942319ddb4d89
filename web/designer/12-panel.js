// ---------------------------------------------------------------------------------------------
// Side panel
// ---------------------------------------------------------------------------------------------
function showValue(def, v) {
  if (v === undefined || v === null) return '';
  switch (def.kind) {
    case 'list': return Array.isArray(v) ? v.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))).join('\n') : typeof v === 'string' ? v : JSON.stringify(v);
    case 'json': case 'object': return typeof v === 'string' ? v : JSON.stringify(v, null, 2);
    case 'number': return typeof v === 'number' ? String(v) : typeof v === 'string' ? v : JSON.stringify(v);
    default: return typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : JSON.stringify(v);
  }
}
/** The JSON value a field's text stands for; `undefined` removes the field. */
function readValue(def, text) {
  switch (def.kind) {
    case 'number': {
      const t = text.trim();
      if (!t) return undefined;
      const n = Number(t);
      return Number.isFinite(n) ? n : text;
    }
    case 'select':
      if (text === '') return undefined;
      if (def.boolean) return text === 'true';
      return def.number && /^-?\d+$/.test(text) ? Number(text) : text;
    case 'list': {
      const items = text.split('\n').map((s) => s.trim()).filter(Boolean);
      return items.length ? items : undefined;
    }
    case 'json': case 'object': {
      const t = text.trim();
      if (!t) return undefined;
      if (/^[[{"\d-]|^(true|false|null)$/.test(t)) { try { return JSON.parse(t); } catch (e) { /* plain text */ } }
      return text;
    }
    default: return text === '' ? undefined : text;
  }
}

/** One labelled input bound to `target[def.key]`; `onEdit(value)` records the change. */
function fieldRow(def, target, onEdit, { idPrefix = 'f' } = {}) {
  const id = `${idPrefix}-${def.key.replace(/\./g, '-')}`;
  const value = get(target, def.key);
  let input;
  const attrs = { id, 'data-testid': 'field-' + def.key, 'data-key': def.key, placeholder: def.placeholder, spellcheck: 'false', autocomplete: 'off' };
  if (def.kind === 'select') {
    input = h('select', attrs);
    const opts = def.options.slice();
    const shown = value === undefined ? '' : String(value);
    if (!opts.some(([v]) => v === shown)) opts.push([shown, value === undefined ? '(none)' : typeof value === 'string' ? value : JSON.stringify(value)]);
    for (const [v, label] of opts) input.append(h('option', { value: v, text: label }));
    input.value = shown;
  } else if (def.kind === 'area' || def.kind === 'list' || def.kind === 'json' || def.kind === 'object') {
    input = h('textarea', { ...attrs, rows: def.rows || (def.kind === 'list' ? 3 : 4) });
    input.value = showValue(def, value);
  } else {
    input = h('input', { ...attrs, type: 'text', inputmode: def.kind === 'number' ? 'numeric' : undefined, list: def.list ? 'list-' + def.list : undefined });
    input.value = showValue(def, value);
  }
  input.addEventListener(def.kind === 'select' ? 'change' : 'input', () => onEdit(readValue(def, input.value), def));
  return h('div', { class: 'field', 'data-field': def.key },
    h('label', { for: id }, def.label, def.hint ? h('small', { text: ' — ' + def.hint }) : null),
    input, h('div', { class: 'msg', 'data-testid': 'field-msg-' + def.key }),
    def.tpl || def.expr ? assistField(input, def) : null);
}

/** Appends the rows of `defs` bound to `target`; a group's fields (`retry.…`, `concurrency.…`,
 * see GROUPS) go in the group's box, open when `target` has the group. `own(def)` may give a
 * row of its own; `scope: 'design'` marks rows of the design shown in a node's panel. */
function appendRows(box, defs, target, onEdit, { idPrefix = 'f', scope, own } = {}) {
  const boxes = {};
  for (const def of defs) {
    if (def.when && !def.when(target)) continue;
    const name = def.key.includes('.') && GROUPS[def.key.split('.')[0]] ? def.key.split('.')[0] : null;
    if (!name) { box.append((own && own(def)) || fieldRow(def, target, onEdit, { idPrefix })); continue; }
    if (!boxes[name]) {
      const g = GROUPS[name];
      boxes[name] = h('details', { class: 'group', 'data-group': name, 'data-scope': scope, open: isObj(target[name]) },
        h('summary', { text: g.title }), g.about ? h('p', { class: 'muted', text: g.about }) : null);
      box.append(boxes[name]);
    }
    const row = fieldRow(def, target, onEdit, { idPrefix });
    if (def.required) dropWhenCleared(row, target, name, defs.filter((d) => d.required && d.key.startsWith(name + '.')));
    boxes[name].append(row);
  }
}

/** A group left without any of its required fields (`concurrency` without a limit) is removed
 * whole once the field is left, so no half-set object stays behind; one undo step with the edit
 * that cleared it. */
function dropWhenCleared(row, target, name, needs) {
  row.querySelector('input, select, textarea').addEventListener('change', () => {
    if (!isObj(target[name]) || needs.some((d) => get(target, d.key) !== undefined)) return;
    change(() => { delete target[name]; }, { key: lastKey, panel: true });
    say(`Removed ${name}: no ${needs.map((d) => d.key.slice(name.length + 1)).join(' nor ')} set`);
  });
}

function renderPanel() {
  const box = $('panel');
  box.replaceChildren();
  if (READ_ONLY) { renderRunPanel(box); return; }
  if (sel && sel.nodes) renderManyPanel(box);
  else if (sel && sel.node !== undefined && isObj(nodes()[sel.node])) renderNodePanel(box, sel.node);
  else if (sel && sel.edge !== undefined && isObj(edges()[sel.edge])) renderEdgePanel(box, sel.edge);
  else renderDesignPanel(box);
  markPanel();
}

function renderNodePanel(box, index) {
  const node = nodes()[index];
  const info = TYPE_INFO[node.type];
  box.append(h('div', { class: 'heading' },
    h('h3', { text: node.label || node.id }),
    h('span', { class: 'badge', style: info ? `border-color: ${info.colour}` : '', text: info ? info.title : String(node.type) })));
  if (info) box.append(h('p', { class: 'muted', text: info.about + (node.type === 'note' ? '. It has no ports and takes no edges.' : '') }));
  // The id is renamed on commit (Enter or leaving the field), so edges follow the final name.
  const idInput = h('input', { id: 'f-id', 'data-testid': 'field-id', value: node.id ?? '', spellcheck: 'false', autocomplete: 'off' });
  idInput.addEventListener('change', () => renameNode(index, idInput.value.trim()));
  box.append(h('div', { class: 'field', 'data-field': 'id' }, h('label', { for: 'f-id' }, 'Id', h('small', { text: ' — used in {{nodes.<id>}}' })), idInput, h('div', { class: 'msg', 'data-testid': 'field-msg-id' })));
  const gate = {}; // a gate's approvers editor, told when the gate's options change
  const edit = (value, def) => {
    change(() => set(node, def.key, value), { key: `node:${index}:${def.key}`, panel: !!def.rerender });
    if (def.rerender) focusField(def.key);
    if (def.key === 'options' && gate.options) gate.options();
  };
  appendRows(box, [...COMMON_FIELDS, ...fieldsOf(node)], node, edit, { own: (def) => gateRow(def, node, index, edit, gate) });
  // Where runs start, the design's limit on how many run at once: written to the design.
  if (node.type === 'trigger') {
    const editDesign = (value, def) => change(() => set(graph, def.key, value), { key: 'design:' + def.key });
    appendRows(box, DESIGN_FIELDS.filter((d) => d.key.startsWith('concurrency.')), graph, editDesign, { idPrefix: 'd', scope: 'design' });
  }
  const known = new Set(['id', 'type', 'x', 'y', 'label', ...fieldsOf(node).map((d) => d.key.split('.')[0])]);
  if (node.type === 'trigger') for (const m of MODES) for (const d of TRIGGER_FIELDS[m]) known.add(d.key.split('.')[0]);
  const other = Object.keys(node).filter((k) => !known.has(k));
  if (other.length) {
    const kept = {};
    for (const k of other) kept[k] = node[k];
    box.append(h('div', { class: 'field extra' }, h('label', { text: 'Other fields (kept as they are)' }), h('pre', { text: JSON.stringify(kept, null, 2) })));
  }
  renderTestSection(box, node);
  box.append(h('div', { class: 'row' }, h('button', { 'data-testid': 'btn-delete', onclick: deleteSelection, text: 'Delete node' })));
}

