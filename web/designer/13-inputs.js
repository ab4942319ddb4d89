// ---------------------------------------------------------------------------------------------
// The design's declared input (`inputs`), edited as a field list
// ---------------------------------------------------------------------------------------------
// The server reads `inputs` as a small JSON Schema: `{"type": "object", "properties": {<name>:
// {"type", "description"?}}, "required": [...]}`. The panel shows it as rows (name, type,
// required, description) and writes the schema back on every edit; a value the rows cannot hold
// (hand-written extras, another shape) stays a JSON field, so nothing is rewritten behind a user.
const INPUT_TYPES = ['string', 'number', 'integer', 'boolean', 'object', 'array'];

/** The rows of a declared input, or `null` when the value is not one the rows can hold. */
function inputRows(schema) {
  if (schema === undefined || schema === null) return [];
  if (!isObj(schema) || schema.type !== 'object') return null;
  if (Object.keys(schema).some((k) => !['type', 'properties', 'required'].includes(k))) return null;
  const props = schema.properties === undefined ? {} : schema.properties;
  const required = schema.required === undefined ? [] : schema.required;
  if (!isObj(props) || !Array.isArray(required)) return null;
  const rows = [];
  for (const [name, f] of Object.entries(props)) {
    if (!isObj(f) || !INPUT_TYPES.includes(f.type)) return null;
    if (Object.keys(f).some((k) => k !== 'type' && k !== 'description')) return null;
    if (f.description !== undefined && typeof f.description !== 'string') return null;
    rows.push({ name, type: f.type, required: required.includes(name), description: f.description || '' });
  }
  return rows;
}

/** The schema the rows stand for (no named row: no declared input). */
function inputSchema(rows) {
  const named = rows.filter((r) => r.name.trim());
  if (!named.length) return undefined;
  const properties = {};
  for (const r of named) {
    properties[r.name.trim()] = r.description.trim() ? { type: r.type, description: r.description.trim() } : { type: r.type };
  }
  const required = named.filter((r) => r.required).map((r) => r.name.trim());
  return required.length ? { type: 'object', properties, required } : { type: 'object', properties };
}

/** The panel block editing `graph.inputs`, or `null` when its value needs the JSON field. */
function inputsEditor() {
  const rows = inputRows(graph.inputs);
  if (!rows) return null;
  const write = (structural) => {
    change(() => set(graph, 'inputs', inputSchema(rows)), { key: structural ? null : 'design:inputs', panel: structural });
  };
  const list = h('div', { class: 'input-rows', 'data-testid': 'inputs-rows' });
  rows.forEach((row, i) => {
    const name = h('input', { 'data-testid': `input-name-${i}`, 'aria-label': 'Field name', value: row.name, placeholder: 'name', spellcheck: 'false', autocomplete: 'off' });
    name.addEventListener('input', () => { row.name = name.value; write(false); });
    const type = h('select', { 'data-testid': `input-type-${i}`, 'aria-label': 'Type' });
    for (const t of INPUT_TYPES) type.append(h('option', { value: t, text: t }));
    type.value = row.type;
    type.addEventListener('change', () => { row.type = type.value; write(false); });
    const required = h('input', { type: 'checkbox', 'data-testid': `input-required-${i}`, checked: row.required });
    required.addEventListener('change', () => { row.required = required.checked; write(false); });
    const about = h('input', { 'data-testid': `input-description-${i}`, 'aria-label': 'Description', value: row.description, placeholder: 'description (shown to agents)', spellcheck: 'false', autocomplete: 'off' });
    about.addEventListener('input', () => { row.description = about.value; write(false); });
    const remove = h('button', { 'data-testid': `input-remove-${i}`, title: 'Remove this field', text: '✕' });
    remove.addEventListener('click', () => { rows.splice(i, 1); write(true); });
    list.append(h('div', { class: 'input-row', 'data-testid': 'input-row' },
      name, type, h('label', { class: 'check' }, required, ' required'), remove, about));
  });
  const add = h('button', { 'data-testid': 'input-add', text: 'Add field' });
  add.addEventListener('click', () => {
    let n = rows.length + 1;
    while (rows.some((r) => r.name === `field${n}`)) n++;
    rows.push({ name: `field${n}`, type: 'string', required: false, description: '' });
    write(true);
    const names = document.querySelectorAll('#panel [data-testid^="input-name-"]');
    if (names.length) names[names.length - 1].select();
  });
  return h('div', { class: 'field', 'data-field': 'inputs' },
    h('label', { text: 'Inputs', title: 'the fields of the design\'s input' },
      h('small', { text: ' — the fields of its input; agents calling it as a tool must fit them' })),
    list, h('div', { class: 'row' }, add), h('div', { class: 'msg', 'data-testid': 'field-msg-inputs' }));
}
