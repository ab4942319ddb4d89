// ---------------------------------------------------------------------------------------------
// Node types: how each is drawn and which fields its panel offers (SPEC §3, §10).
// Which fields a type has, what kind of value each holds, its default, range and allowed values
// are the model's: the server's GET /schema, or the copy embedded above when opened from disk.
// This page adds only how a field is shown (label, hint, rows, which lists it suggests from).
// Panel field kinds: text, area, number, select, list (one item per line), json (JSON if it
// parses, else the text), object (a JSON object). `key` may be a path into an object
// ("schedule.time"). None of this decides what is valid: the server says that.
// ---------------------------------------------------------------------------------------------
const TYPE_INFO = {
  trigger: { title: 'Trigger', colour: 'var(--vwf-type-trigger, #7c3aed)', about: 'Where a run starts' },
  agent: { title: 'Agent', colour: 'var(--vwf-type-agent, #2563eb)', about: 'A model writes or decides' },
  condition: { title: 'Condition', colour: 'var(--vwf-type-condition, #c2410c)', about: 'Branches on true / false' },
  approval: { title: 'Approval', colour: 'var(--vwf-type-approval, #be185d)', about: 'A person answers a question' },
  output: { title: 'Output', colour: 'var(--vwf-type-output, #047857)', about: 'Collects and delivers a message' },
  note: { title: 'Note', colour: 'var(--vwf-type-note, #a16207)', about: 'A sticky label; never runs' },
  command: { title: 'Command', colour: 'var(--vwf-type-command, #475569)', about: 'Runs a shell command' },
  http: { title: 'HTTP', colour: 'var(--vwf-type-http, #0e7490)', about: 'Makes an HTTP request' },
  loop: { title: 'Loop', colour: 'var(--vwf-type-loop, #7e22ce)', about: 'Runs a body for each item' },
  wait: { title: 'Wait', colour: 'var(--vwf-type-wait, #64748b)', about: 'Pauses the run' },
  emit: { title: 'Emit', colour: 'var(--vwf-type-emit, #15803d)', about: 'Announces an event' },
  wait_event: { title: 'Wait for event', colour: 'var(--vwf-type-wait-event, #0f766e)', about: 'Pauses until an event arrives' },
  design: { title: 'Design', colour: 'var(--vwf-type-design, #4338ca)', about: 'Runs another saved design' },
};
/** How a type the page has no words for is drawn in the palette. */
const typeInfo = (type) => TYPE_INFO[type] || { title: type, colour: 'var(--vwf-type-note, #a16207)', about: 'A node type' };
/** The fields every step's output view has (SPEC §4), and what each node type adds: what the
 * engine and the drivers write, offered after `out.<id>.` before any run (`error`: what a step
 * that failed gives the error path it took). A model that states them (a node type's
 * `output_view` in GET /schema) is used instead. */
const VIEW_BASE = ['text', 'data', 'words', 'chars', 'lines'];
const OUTPUT_VIEW = {
  agent: ['model', 'tokens', 'usage', 'cost', 'currency', 'tool_calls', 'tool_usage', 'tool_cost', 'edited', 'error'],
  condition: ['value'],
  approval: ['answer', 'fields', 'by'],
  output: ['collected', 'deliveries', 'error'],
  command: ['exit_code', 'stderr', 'stdout', 'edited', 'error'],
  http: ['status', 'headers', 'body', 'error'],
  loop: ['items', 'count'],
  wait: ['resumed_at'],
  emit: ['event', 'runs', 'resumed', 'error'],
  wait_event: ['event', 'payload', 'timed_out'],
  design: ['run_id', 'design', 'status', 'outputs', 'usage', 'cost', 'currency', 'error'],
};
/** The fields of a `type` step's output view, the base ones first. */
function outputViewOf(type) {
  const model = SCHEMA && Array.isArray(SCHEMA.node_types) ? SCHEMA.node_types.find((t) => t.type === type) : null;
  const extra = model && Array.isArray(model.output_view) ? model.output_view : OUTPUT_VIEW[type] || [];
  return [...VIEW_BASE, ...extra.filter((k) => typeof k === 'string' && !VIEW_BASE.includes(k))];
}
/** What a freshly added node starts with (beyond id, type, x, y). */
const NEW_NODE = { trigger: { mode: 'manual' }, note: { text: '', color: 'yellow' } };
/** The canvas's own note colours (any text is kept; these are the ones it paints). */
const NOTE_COLOURS = ['yellow', 'blue', 'green', 'pink', 'purple', 'grey'];

/** How each field is shown, by `type.field`, `mode.field` (trigger modes) or `design.field`;
 * `empty` labels a select's unset choice, `names` its values. */
const SHOWN = {
  'trigger.mode': { label: 'Mode', rerender: true },
  'agent.prompt': { label: 'Prompt', hint: 'template, e.g. {{nodes.fetch}}', widget: 'area', rows: 5 },
  'agent.profile': { label: 'Profile', hint: 'a configured bot', list: 'profiles' },
  'agent.model': { label: 'Model', hint: 'overrides the profile\'s model', list: 'models' },
  'agent.timeout_seconds': { label: 'Timeout (seconds)' },
  'condition.expr': { label: 'Expression', hint: 'out.<node>.<path> <op> <value>' },
  'approval.question': { label: 'Question', hint: 'template, e.g. Ship {{nodes.build}}?', widget: 'area', rows: 3 },
  'approval.options': { label: 'Options', hint: 'one answer per line' },
  'approval.timeout_minutes': { label: 'Deadline (minutes)' },
  'approval.on_timeout': { label: 'On timeout' },
  'output.deliver': { label: 'Deliver', empty: 'only collect', names: { notification: 'notification (home channel)', channel: 'channel (a chat)' }, rerender: true },
  'output.target': { label: 'Target', hint: 'telegram, telegram:123456, slack:#ops…', list: 'targets', when: (n) => !!n.deliver || n.target !== undefined },
  'output.template': { label: 'Template', hint: 'message; default: the parents\' texts', widget: 'area', rows: 4 },
  'note.text': { label: 'Text', widget: 'area', rows: 4 },
  'note.color': { label: 'Colour', widget: 'select', options: NOTE_COLOURS.map((c) => [c, c]) },
  'command.run': { label: 'Run', hint: 'a shell command; template values are quoted', widget: 'area', rows: 4 },
  'command.argv': { label: 'Or argv', hint: 'one argument per line, no shell' },
  'command.cwd': { label: 'Working directory' },
  'command.env': { label: 'Environment', hint: 'JSON object' },
  'command.timeout_seconds': { label: 'Timeout (seconds)' },
  'http.url': { label: 'URL' },
  'http.headers': { label: 'Headers', hint: 'JSON object' },
  'http.body': { label: 'Body', hint: 'template text or JSON' },
  'http.accept': { label: 'Accept', hint: 'e.g. "2xx", 200 or [200, 404]' },
  'http.timeout_seconds': { label: 'Timeout (seconds)' },
  'loop.over': { label: 'Over', hint: 'template giving a JSON array' },
  'wait.duration': { label: 'Or duration', placeholder: '30s, 5m, 1h' },
  'emit.payload': { label: 'Payload', hint: 'template text or JSON' },
  'design.design': { label: 'Design', hint: 'a saved design to run', list: 'designs' },
  'design.input': { label: 'Input', hint: 'JSON or text; strings may be templates, e.g. {"message": "{{nodes.summary}}"}' },
  'design.wait': { label: 'Wait for it', hint: 'park until it ends and take its outputs' },
  'design.version': { label: 'Version', hint: 'default: the version saved when the run starts' },
  'wait_event.event': { label: 'Event', hint: 'e.g. pr.merged' },
  'wait_event.match': { label: 'Match', hint: 'event.payload.<path> <op> <value>; the value may be a template' },
  'wait_event.timeout': { label: 'Timeout', placeholder: '30m, 2h, 7d' },
  'wait_event.on_timeout': { label: 'On timeout' },
  'schedule.schedule.time': { label: 'Time', hint: 'HH:MM, 24-hour' },
  'schedule.schedule.dow': { label: 'Day of week' },
  'schedule.schedule.cron': { label: 'Cron', hint: 'five fields' },
  'schedule.schedule.tz': { label: 'Time zone' },
  'heartbeat.tz': { label: 'Time zone' },
  'event.sources': { label: 'Sources', hint: 'event names or prefixes (name.*), one per line' },
  'event.cooldown_seconds': { label: 'Cooldown (seconds)' },
  'folder.path': { label: 'Folder' },
  'folder.debounce_ms': { label: 'Debounce (ms)' },
  'watch.command': { label: 'Command', hint: 'long-lived; prints one JSON line per change', widget: 'area', rows: 3 },
  'watch.restart_delay_seconds': { label: 'Restart delay (seconds)' },
  'watch.dedupe_minutes': { label: 'Dedupe (minutes)' },
  'webhook.path': { label: 'Path', hint: 'served at POST /hooks/<path>; the sender signs instead of sending the API token' },
  'webhook.secret_env': { label: 'Secret variable', hint: 'the environment variable holding the signing secret (never the secret itself)' },
  'webhook.signature': { label: 'Signature', hint: "the sender's scheme" },
  'webhook.header': { label: 'Signature header', hint: 'hmac-sha256 only' },
  'webhook.tolerance_seconds': { label: 'Tolerance (seconds)', hint: 'how old a signed timestamp may be (stripe, slack)' },
  'design.description': { label: 'Description', widget: 'area', rows: 3 },
  'design.budget.tokens': { label: 'Token budget', hint: 'for the whole run' },
  'design.tool': { label: 'Offer as a tool', hint: 'agents (MCP, Hermes) may call this design' },
  'design.inputs': { label: 'Inputs', hint: 'JSON Schema of the input: {"type": "object", "properties": {…}, "required": […]}' },
  'design.concurrency.limit': { label: 'Runs at once', hint: '1–1000; empty: no limit' },
  'design.concurrency.key': { label: 'Per key', hint: 'template over the input, e.g. {{trigger.chat}}: each value has its own limit' },
  'design.concurrency.on_limit': { label: 'When full', names: { queue: 'queue the new run', skip: 'skip the new run', cancel_oldest: 'cancel the oldest run' } },
  'design.concurrency.release_while_waiting': { label: 'Free the slot while waiting', hint: 'a run parked at an approval, a wait or an event lets the next one start' },
  // `*.` applies to every type or mode that has the field (the arrival modes' debounce, throttle).
  '*.debounce.period': { label: 'Quiet for', hint: 'start once no arrival came for this long, e.g. 30s' },
  '*.debounce.key': { label: 'Per key', hint: 'template, e.g. {{trigger.payload.pr}}: each value waits apart' },
  '*.throttle.limit': { label: 'Starts', hint: 'at most this many runs a period, 1–10000' },
  '*.throttle.period': { label: 'Per', hint: 'the period, e.g. 1m' },
  '*.throttle.key': { label: 'Per key', hint: 'template, e.g. {{trigger.payload.repo}}: each value counts apart' },
  '*.throttle.on_limit': { label: 'Over the limit', names: { drop: 'drop the arrival', queue: 'queue it for the next period' } },
};
/** Fields read as one block of the panel: `<group>.…` fields, in a box open once the group is set. */
const GROUPS = {
  retry: { title: 'Retry on failure' },
  debounce: { title: 'Debounce', about: 'Waits for arrivals to pause, then starts one run with the last of them. A trigger has a debounce or a throttle, not both.' },
  throttle: { title: 'Throttle', about: 'Starts at most so many runs a period; the arrivals over the limit are dropped or wait for the next period.' },
  concurrency: { title: 'Runs at once', about: 'How many runs of this design may be active together, however they start. Saved with the design, not this node.' },
};
/** The panel widget of each kind of value the model names. */
const WIDGET = { integer: 'number', number: 'number', enum: 'select', boolean: 'select', string_list: 'list', enum_list: 'list', string_map: 'object', json: 'json', status_set: 'json', command: 'area' };

const F = (key, kind, label, extra = {}) => ({ key, kind, label, ...extra });
const COMMON_FIELDS = [F('label', 'text', 'Label', { hint: 'shown on the canvas' })];

/** 90 → `90s`, 300 → `5m`, 86400 → `24h`. */
const durationOf = (s) => (s % 3600 === 0 ? `${s / 3600}h` : s % 60 === 0 ? `${s / 60}m` : `${s}s`);
/** `timeout_seconds` → `Timeout seconds`. */
const labelOf = (name) => name.charAt(0).toUpperCase() + name.slice(1).replace(/_/g, ' ');
/** A value as a placeholder: lists of strings one item per line, objects as spaced JSON. */
function placeholderOf(v) {
  if (v === undefined || typeof v === 'string') return v;
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v.join('\n');
  if (isObj(v)) return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${JSON.stringify(x)}`).join(', ')}}`;
  return JSON.stringify(v);
}

/** The panel fields of model fields `list`, under `key` paths from `prefix`, shown as `SHOWN[at.…]` says. */
function panelFields(list, at, prefix = '') {
  const out = [];
  for (const m of list || []) {
    if (m.kind === 'object' && Array.isArray(m.fields)) {
      out.push(...panelFields(m.fields, `${at}.${m.name}`, `${prefix}${m.name}.`));
      continue;
    }
    const anyOwner = at.includes('.') ? SHOWN[`*${at.slice(at.indexOf('.'))}.${m.name}`] : undefined;
    const shown = SHOWN[`${at}.${m.name}`] || anyOwner || {};
    const widget = shown.widget || (m.kind === 'integer' && m.labels ? 'select' : WIDGET[m.kind] || 'text');
    // A range the model gives is the hint, unless it is too wide to help.
    const ranged = m.min !== undefined && m.max !== undefined && m.max <= 100000;
    const range = m.kind === 'enum_list' ? `one per line: ${m.values.join(', ')}`
      : !ranged ? undefined : m.kind === 'integer' && !m.labels ? `${m.min}–${m.max}` : m.kind === 'duration' ? `${durationOf(m.min)} to ${durationOf(m.max)}` : undefined;
    // A retry policy's fields read as one group: `Retry max attempts`, `Retry on`…
    const label = shown.label || (prefix === 'retry.' ? `Retry ${labelOf(m.name).toLowerCase()}` : labelOf(m.name));
    const def = F(prefix + m.name, widget, label, {
      hint: shown.hint ?? range,
      placeholder: shown.placeholder ?? placeholderOf(m.default ?? m.example),
      rows: shown.rows, list: shown.list, when: shown.when, rerender: shown.rerender,
      tpl: !!m.template, expr: m.kind === 'expression', required: !!m.required,
    });
    if (widget === 'select') {
      const named = m.labels && m.default !== undefined ? m.labels[m.default - m.min] : m.default;
      const unset = shown.empty || (named !== undefined ? `(default: ${(shown.names && shown.names[named]) || named})` : '(choose)');
      def.options = shown.options || [['', unset], ...(m.labels
        ? m.labels.map((l, i) => [String(m.min + i), l])
        : (m.values || []).map((v) => [v, (shown.names && shown.names[v]) || v]))];
      def.number = m.kind === 'integer';
      if (m.kind === 'boolean') {
        def.options = [['', `(default: ${m.default ? 'yes' : 'no'})`], ['true', 'yes'], ['false', 'no']];
        def.boolean = true;
      }
    }
    out.push(def);
  }
  return out;
}

/** The model in use (`vwf schema`), and what the panel makes of it. */
const EMBEDDED_SCHEMA = JSON.parse(document.getElementById('vwf-schema').textContent);
let SCHEMA = null;
let TYPES = [], MODES = [], FIELDS = {}, TRIGGER_FIELDS = {}, DESIGN_FIELDS = [];

/** Takes a model: the types the palette offers and the fields each panel shows. Answers whether it changed. */
function useSchema(schema, from) {
  const changed = JSON.stringify(schema) !== JSON.stringify(SCHEMA);
  SCHEMA = schema;
  document.body.dataset.schema = from;
  TYPES = schema.node_types.map((t) => t.type);
  FIELDS = Object.fromEntries(schema.node_types.map((t) => [t.type, panelFields(t.fields, t.type)]));
  MODES = schema.trigger_modes.map((m) => m.mode);
  TRIGGER_FIELDS = Object.fromEntries(schema.trigger_modes.map((m) => [m.mode, panelFields(m.fields, m.mode)]));
  // A schedule's fields show for the presets that read them (or once they hold a value).
  const reads = Object.fromEntries(schema.schedule_presets.map((p) => [p.preset, p.fields]));
  for (const def of TRIGGER_FIELDS.schedule || []) {
    const sub = def.key.split('.')[1];
    if (def.key === 'schedule.preset') def.rerender = true;
    else if (schema.schedule_presets.some((p) => p.fields.includes(sub))) def.when = (n) => (reads[get(n, 'schedule.preset')] || []).includes(sub) || get(n, def.key) !== undefined;
  }
  DESIGN_FIELDS = panelFields(schema.design_fields, 'design');
  return changed;
}
useSchema(EMBEDDED_SCHEMA, 'embedded');

function fieldsOf(node) {
  if (node.type === 'trigger') {
    const mode = MODES.includes(node.mode) ? node.mode : null;
    return [...FIELDS.trigger, ...(mode ? TRIGGER_FIELDS[mode] : [])];
  }
  return FIELDS[node.type] || [];
}

/** Which labels an edge leaving `node` may carry: chosen from a list, never typed. */
function labelChoices(node) {
  if (!node) return [];
  if (node.type === 'condition') return ['true', 'false'];
  if (node.type === 'loop') return ['each', 'done'];
  if (node.type === 'approval') {
    const opts = Array.isArray(node.options) ? node.options.filter((o) => typeof o === 'string') : [];
    return opts.length ? opts : ['approve', 'reject'];
  }
  return [];
}

