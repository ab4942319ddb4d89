// ---------------------------------------------------------------------------------------------
// An approval gate's panel rows of its own: who answers (`approvers`) as a small editor, where
// the question is sent (`notify`) and what is shown beside it (`context`) with their hints.
// `approvers` is `{required: 1–10 (default 1), allowed: [identity…], distinct: true (default),
// veto: [option…]}`; the editor writes only the keys away from their defaults and removes
// `approvers` once nothing is left. A value it cannot hold (another shape, extra keys) keeps
// the JSON field, so nothing is rewritten behind a user. The server checks what is written.
// ---------------------------------------------------------------------------------------------
const APPROVER_KEYS = ['required', 'allowed', 'distinct', 'veto'];
const strings = (v) => Array.isArray(v) && v.every((x) => typeof x === 'string');

/** Whether the editor can show `value` as it is (none counts). */
function approversFit(value) {
  if (value === undefined) return true;
  if (!isObj(value) || Object.keys(value).some((k) => !APPROVER_KEYS.includes(k))) return false;
  return (value.required === undefined || typeof value.required === 'number')
    && (value.allowed === undefined || strings(value.allowed))
    && (value.distinct === undefined || typeof value.distinct === 'boolean')
    && (value.veto === undefined || strings(value.veto));
}

/** The `approvers` object the editor's values stand for, keys at their defaults left out;
 * `undefined` when every one is at its default. */
function approversValue({ required, allowed, distinct, veto }) {
  const out = {};
  if (required !== undefined && required !== 1) out.required = required;
  if (allowed.length) out.allowed = allowed;
  if (distinct === false) out.distinct = false;
  if (veto.length) out.veto = veto;
  return Object.keys(out).length ? out : undefined;
}

/** The editor of gate `node` (at `index`)'s approvers: `{el, options()}` (`options()` redraws
 * the veto boxes after the gate's options changed), or `null` when its value needs the JSON field. */
function approversEditor(node, index) {
  if (!approversFit(node.approvers)) return null;
  const a = node.approvers || {};
  const required = h('input', { id: 'f-approvers-required', 'data-testid': 'approvers-required', type: 'number', min: 1, max: 10, step: 1,
    inputmode: 'numeric', placeholder: '1', value: a.required === undefined ? '' : String(a.required), style: 'width: 6em' });
  const allowed = h('textarea', { id: 'f-approvers-allowed', 'data-testid': 'approvers-allowed', rows: 2, spellcheck: 'false', autocomplete: 'off',
    placeholder: 'anyone; or one per line:\ntelegram:123456\nslack:U0123\nann' });
  allowed.value = (a.allowed || []).join('\n');
  const distinct = h('input', { type: 'checkbox', 'data-testid': 'approvers-distinct', checked: a.distinct !== false, style: 'width: auto' });
  const vetoBox = h('div', { class: 'row', role: 'group', 'aria-label': 'Ends at once (veto)', 'data-testid': 'approvers-veto', style: 'flex-wrap: wrap' });

  // Every value is read from the inputs, so the node gets what they show.
  const read = () => {
    const t = required.value.trim();
    const n = t === '' ? undefined : Number(t);
    return {
      required: n === undefined || !Number.isFinite(n) ? undefined : n,
      allowed: allowed.value.split('\n').map((s) => s.trim()).filter(Boolean),
      distinct: distinct.checked,
      veto: [...vetoBox.querySelectorAll('input[type="checkbox"]')].filter((c) => c.checked).map((c) => c.value),
    };
  };
  // Typing in one input is one undo step, as in any field; each tick is its own.
  const write = (part) => change(() => set(node, 'approvers', approversValue(read())), { key: part ? `node:${index}:approvers.${part}` : null });

  /** One box per option of the gate, and one for any vetoed answer no longer among them. */
  const drawVeto = () => {
    const ticked = vetoBox.childElementCount ? read().veto : (a.veto || []);
    const options = labelChoices(node);
    vetoBox.replaceChildren(...[...options, ...ticked.filter((o) => !options.includes(o))].map((o) => {
      const box = h('input', { type: 'checkbox', value: o, 'data-testid': `approvers-veto-${o}`, checked: ticked.includes(o), style: 'width: auto' });
      box.addEventListener('change', () => write(null));
      return h('label', { class: 'check', style: 'display: inline-flex; gap: 3px; font-weight: 400; margin: 0' }, box, o);
    }));
  };
  drawVeto();
  required.addEventListener('input', () => write('required'));
  allowed.addEventListener('input', () => write('allowed'));
  distinct.addEventListener('change', () => write(null));

  const sub = (label, hint, input) => h('div', { style: 'margin: 4px 0 6px' },
    h('label', { for: input.matches('input, textarea') ? input.id : null, style: 'font-weight: 400' }, label, h('small', { text: ' — ' + hint })), input);
  const el = h('div', { class: 'field', 'data-field': 'approvers', 'data-testid': 'approvers-editor' },
    h('label', {}, 'Approvers', h('small', { text: ' — how many people must give the same answer, and who may' })),
    sub('People required', '1–10; the gate ends at the required-th same answer', required),
    sub('Allowed', 'one identity per line: telegram:<user id>, slack:<user id> or a name; empty: anyone', allowed),
    h('label', { class: 'check', style: 'display: flex; gap: 4px; align-items: center; font-weight: 400' }, distinct, 'Each person once'),
    sub('Ends at once (veto)', 'one such answer decides the gate', vetoBox),
    h('div', { class: 'msg', 'data-testid': 'field-msg-approvers' }));
  return { el, options: drawVeto };
}

/** The row of a gate's field when it has one of its own (`approvers`, `notify`, `context`),
 * else `null` (the generic row). `edit` records a generic row's change; `gate.options` is set to
 * redraw the approvers' veto boxes. */
function gateRow(def, node, index, edit, gate) {
  if (node.type !== 'approval') return null;
  if (def.key === 'approvers') {
    const editor = approversEditor(node, index);
    if (!editor) return null;
    gate.options = editor.options;
    return editor.el;
  }
  if (def.key === 'notify') {
    return fieldRow({ ...def, hint: 'where the question goes when the gate opens, one per line', placeholder: 'telegram:123456\nslack:#ops\nwebhook:name' }, node, edit);
  }
  if (def.key === 'context') {
    return fieldRow({ ...def, kind: 'area', rows: 3, hint: 'template shown beside the question; default: the parents\' texts' }, node, edit);
  }
  return null;
}
