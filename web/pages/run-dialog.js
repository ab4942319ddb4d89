// The dialog a run from the Designs list starts in: the run's input, prefilled with the design's
// `example_input` (templates carry one) or else its newest run's input, shown as a form of the
// fields the design declares (`inputs`) or as JSON when it declares none. Nothing runs until the
// person presses Run, so a design is never started blind with an empty input.
import { api, h, enc } from '../app.js';

/** The input a run of `graph` is offered: its example, else the newest run's, else none. */
async function suggested(name, graph) {
  if (graph && graph.example_input !== undefined && graph.example_input !== null) return { input: graph.example_input, from: 'the design’s example input' };
  const runs = await api('GET', `/runs?design=${enc(name)}&limit=1`);
  const last = runs.body.ok && runs.body.runs && runs.body.runs[0];
  if (last && last.trigger && last.trigger.input !== null && last.trigger.input !== undefined) {
    return { input: last.trigger.input, from: `the input of run ${last.run_id}` };
  }
  return { input: undefined, from: null };
}

/** The declared fields of `graph`'s input, if it declares them as the canvas edits them. */
function declared(graph) {
  const schema = graph && graph.inputs;
  if (!schema || typeof schema !== 'object' || !schema.properties || typeof schema.properties !== 'object') return null;
  const required = Array.isArray(schema.required) ? schema.required : [];
  return Object.entries(schema.properties).map(([field, f]) => ({
    field, type: (f && f.type) || 'string', description: (f && f.description) || '', required: required.includes(field),
  }));
}

/** One form row for a declared field, prefilled from `value`; `read()` answers its JSON value
 * (`undefined` when left empty) or throws with what is wrong. */
function fieldRow(f, value) {
  const id = `run-field-${f.field}`;
  let input;
  let read;
  if (f.type === 'boolean') {
    input = h('input', { id, type: 'checkbox', name: f.field });
    input.checked = value === true;
    read = () => input.checked;
  } else if (f.type === 'object' || f.type === 'array') {
    input = h('textarea', { id, name: f.field, rows: 3, spellcheck: 'false' });
    input.value = value === undefined ? '' : JSON.stringify(value, null, 2);
    read = () => {
      if (!input.value.trim()) return undefined;
      try { return JSON.parse(input.value); } catch (e) { throw new Error(`${f.field}: not JSON (${e.message})`); }
    };
  } else {
    const numeric = f.type === 'number' || f.type === 'integer';
    input = h('input', { id, name: f.field, inputmode: numeric ? 'decimal' : undefined, spellcheck: 'false', autocomplete: 'off' });
    input.value = value === undefined || value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value);
    read = () => {
      const t = input.value;
      if (!t.trim()) return undefined;
      if (!numeric) return t;
      const n = Number(t);
      if (!Number.isFinite(n) || (f.type === 'integer' && !Number.isInteger(n))) throw new Error(`${f.field}: ${f.type === 'integer' ? 'a whole number' : 'a number'}, not ${JSON.stringify(t)}`);
      return n;
    };
  }
  const row = h('div', { class: 'field', 'data-run-field': f.field },
    h('label', { for: id }, f.field, f.required ? ' *' : '', h('span', { class: 'muted small' }, ` ${f.type}${f.description ? ` — ${f.description}` : ''}`)),
    input);
  return { row, read, field: f };
}

/** Opens the run dialog for design `name`; `start(input)` starts the run (and reports).
 * `preset` ({input, from}) is the input to offer instead of the suggested one. */
export async function runDialog(name, start, preset) {
  const loaded = await api('GET', `/designs/${enc(name)}`);
  const graph = loaded.body.ok ? loaded.body.graph : null;
  const { input, from } = preset || await suggested(name, graph);
  const fields = declared(graph);
  const problem = h('p', { class: 'notice error', hidden: true, 'data-testid': 'run-dialog-problem' });
  let body;
  let read;
  if (fields) {
    const given = input && typeof input === 'object' && !Array.isArray(input) ? input : {};
    const rows = fields.map((f) => fieldRow(f, given[f.field]));
    body = h('div', { class: 'run-form' }, rows.map((r) => r.row));
    read = () => {
      const out = {};
      for (const r of rows) {
        const v = r.read();
        if (v === undefined && r.field.required) throw new Error(`${r.field.field} is required`);
        if (v !== undefined) out[r.field.field] = v;
      }
      return out;
    };
  } else {
    const text = h('textarea', { name: 'input', rows: 8, spellcheck: 'false', 'aria-label': 'Run input (JSON)', placeholder: '{"topic": "…"} (empty: no input)' });
    text.value = input === undefined ? '' : JSON.stringify(input, null, 2);
    body = text;
    read = () => {
      if (!text.value.trim()) return undefined;
      try { return JSON.parse(text.value); } catch (e) { throw new Error(`the input is not JSON: ${e.message}`); }
    };
  }
  const dialog = h('dialog', { class: 'run-dialog', 'data-testid': 'run-dialog', 'aria-label': `Run ${name}` });
  const close = () => { dialog.close(); dialog.remove(); };
  const run = h('button', { class: 'primary', type: 'submit', 'data-testid': 'run-dialog-run' }, 'Run');
  const form = h('form', { method: 'dialog', onsubmit: async (e) => {
    e.preventDefault();
    let value;
    try {
      value = read();
    } catch (err) {
      problem.textContent = err.message;
      problem.hidden = false;
      return;
    }
    close();
    await start(value);
  } },
  h('h2', {}, 'Run ', h('code', {}, name)),
  h('p', { class: 'muted small' }, fields ? 'The fields the design declares as its input.' : 'The run’s input, as JSON.',
    from ? ` Prefilled with ${from}.` : ''),
  body, problem,
  h('div', { class: 'toolbar' }, run, h('button', { type: 'button', onclick: close }, 'Cancel')));
  dialog.append(form);
  dialog.addEventListener('cancel', () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  return dialog;
}
