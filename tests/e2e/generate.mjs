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
