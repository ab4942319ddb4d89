// Designs made for the browser tests: large branching ones from a seed, the same on every run.

/** A small deterministic random generator (mulberry32). */
export function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const LABELS = { condition: ['true', 'false'], approval: ['approve', 'reject'], loop: ['each', 'done'] };

/** A branching design of `count` nodes from `seed`: a trigger, then nodes that each hang from one
 * of the last few (conditions, approvals and loops branch with labelled edges), some merging two
 * branches, and two notes. Without positions unless `scatter` (then piled up at random). Without
 * `loops` it is a valid design (the server saves it). */
export function branching(seed, count = 50, { scatter = false, loops = true } = {}) {
  const rnd = random(seed);
  const types = ['command', 'agent', 'condition', 'approval', loops ? 'loop' : 'command', 'output', 'http', 'command', 'agent'];
  const nodes = [{ id: 'start', type: 'trigger', mode: 'manual' }];
  const edges = [];
  const children = new Map([['start', 0]]);
  for (let i = 1; i < count - 2; i++) {
    const type = types[Math.floor(rnd() * types.length)];
    const id = `${type}${i}`;
    const candidates = nodes.filter((n) => n.type !== 'note' && n.type !== 'output' && children.get(n.id) < (LABELS[n.type] ? 2 : 1));
    const pool = candidates.length ? candidates.slice(-5) : nodes.filter((n) => n.type !== 'output' && n.type !== 'note').slice(-3);
    const parent = pool[Math.floor(rnd() * pool.length)];
    const label = LABELS[parent.type] ? LABELS[parent.type][children.get(parent.id) % 2] : undefined;
    children.set(parent.id, children.get(parent.id) + 1);
    edges.push(label ? { from: parent.id, to: id, label } : { from: parent.id, to: id });
    if (rnd() < 0.12 && i > 4) {
      const other = nodes[1 + Math.floor(rnd() * (nodes.length - 1))];
      if (other.id !== parent.id && other.type !== 'note' && !LABELS[other.type]) edges.push({ from: other.id, to: id });
    }
    nodes.push({ id, type, label: rnd() < 0.3 ? `Step ${i} of the flow` : undefined });
    children.set(id, 0);
  }
  nodes.push({ id: 'note-a', type: 'note', text: 'A generated design: every branch is laid out in the second dimension.' });
  nodes.push({ id: 'note-b', type: 'note', text: 'Short' });
  for (const n of nodes) if (n.label === undefined) delete n.label;
  // Fields that make each node valid, naming its first parent.
  const parentOf = (id) => edges.find((e) => e.to === id)?.from;
  const FIELDS = {
    command: (p) => ({ run: `echo ${p}` }),
    agent: (p) => ({ prompt: `Summarise {{nodes.${p}}}` }),
    condition: (p) => ({ expr: `out.${p}.text != ""` }),
    approval: (p) => ({ question: `Go on after ${p}?`, options: ['approve', 'reject'] }),
    loop: (p) => ({ over: `{{nodes.${p}}}` }),
    output: (p) => ({ template: `{{nodes.${p}}}` }),
    http: () => ({ url: 'https://example.org/' }),
  };
  for (const n of nodes) if (FIELDS[n.type]) Object.assign(n, FIELDS[n.type](parentOf(n.id)));
  if (scatter) for (const n of nodes) { n.x = Math.round(rnd() * 600); n.y = Math.round(rnd() * 400); }
  return { nodes, edges };
}

/** Titles for the shaped designs' nodes: a person's words, short and long (up to 26 letters). */
const TITLES = ['Fetch the tickets', 'Summarise', 'Ask the lead', 'Post to the channel', 'Check the budget', 'Archive the report',
  'Translate to French', 'Notify on-call', 'Score each reply', 'Wait for the build', 'Merge the results', 'Draft the newsletter'];

/** Fields that make a node of `type` valid, reading node `p`. */
const FIELDS_OF = {
  command: (p) => ({ run: `echo ${p}` }),
  agent: (p) => ({ prompt: `Summarise {{nodes.${p}}}` }),
  condition: (p) => ({ expr: `out.${p}.text != ""` }),
  approval: (p) => ({ question: `Go on after ${p}?`, options: ['approve', 'reject'] }),
  loop: (p) => ({ over: `{{nodes.${p}}}` }),
  output: (p) => ({ template: `{{nodes.${p}}}` }),
  http: () => ({ url: 'https://example.org/' }),
};

/** A design of `count` nodes (without positions) of one of the shapes large real designs take:
 * `chain` (one step after another), `fan` (a step splits into parallel branches of about four
 * steps that merge again), `nested` (conditions and approvals inside each other's branches) or
 * `loops` (loops inside loop bodies). Every third node has a title of its own; valid. */
export function shaped(kind, count) {
  const nodes = [{ id: 'start', type: 'trigger', mode: 'manual' }];
  const edges = [];
  const rotate = ['command', 'agent', 'http'];
  const add = (type, from, label) => {
    const id = `${type}${nodes.length}`;
    const n = { id, type, ...(nodes.length % 3 === 0 ? { label: TITLES[nodes.length % TITLES.length] } : {}) };
    nodes.push(n);
    if (from) edges.push(label ? { from, to: id, label } : { from, to: id });
    return id;
  };
  const left = () => count - nodes.length;
  if (kind === 'chain') {
    let last = 'start';
    while (left() > 0) last = add(rotate[nodes.length % 3], last);
  } else if (kind === 'fan') {
    const split = add('command', 'start');
    const width = Math.max(2, Math.ceil((count - 3) / 4));
    const ends = [];
    for (let b = 0; b < width; b++) ends.push(add(rotate[b % 3], split));
    for (let b = 0; left() > 1; b = (b + 1) % width) ends[b] = add(rotate[(b + 1) % 3], ends[b]);
    const merge = add('output', null);
    for (const e of ends) edges.push({ from: e, to: merge });
  } else if (kind === 'nested' || kind === 'loops') {
    // A spine of branching nodes: each one's first branch holds the next, its second a short
    // chain to an output (a loop: `each` holds the next, `done` goes on to an output).
    const branchers = kind === 'nested' ? ['condition', 'approval'] : ['loop'];
    let at = 'start', label;
    while (left() > 0) {
      const type = branchers[nodes.length % branchers.length];
      if (left() < 4) { at = add(rotate[nodes.length % 3], at, label); label = undefined; continue; }
      const b = add(type, at, label);
      const [first, second] = LABELS[type];
      let side = add(rotate[nodes.length % 3], b, second);
      if (left() > 3) side = add(rotate[nodes.length % 3], side);
      add('output', side);
      at = add(rotate[nodes.length % 3], b, first);
      label = undefined;
    }
  } else throw new Error(`no shape ${kind}`);
  const parentOf = (id) => edges.find((e) => e.to === id)?.from ?? 'start';
  for (const n of nodes) if (FIELDS_OF[n.type]) Object.assign(n, FIELDS_OF[n.type](parentOf(n.id)));
  return { nodes, edges };
}
