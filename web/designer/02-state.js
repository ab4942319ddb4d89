// ---------------------------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------------------------
let graph = { nodes: [], edges: [] };
let designName = '';
/** The name the design was opened or last saved as ('' for a new one): a save under any other
 * name only creates (`create: true`), so it never replaces a design it did not come from. */
let savedAs = '';
/** {node: index} | {edge: index} | null */
let sel = null;
let undoStack = [], redoStack = [], lastKey = null;
let version = 0;
let savedText = null;
let issues = { errors: [], warnings: [] };
let issuesVersion = -1;
let issuesEdges = null;
/** A run result drawn over the graph (the read-only run view, or the last Run). */
let runState = null;
let view = { x: 0, y: 0, k: 1 };
let autoPos = new Map();
/** While a node is dragged: edges take their quick route until it is dropped. */
let dragging = false;
const lists = { profiles: [], models: [], targets: [], designs: [] };

const $ = (id) => document.getElementById(id);
const svg = $('svg'), canvasEl = $('canvas'), viewportEl = $('viewport');

function nodes() { return Array.isArray(graph.nodes) ? graph.nodes : []; }
function edges() { return Array.isArray(graph.edges) ? graph.edges : []; }
function isObj(v) { return v !== null && typeof v === 'object' && !Array.isArray(v); }
function isNum(v) { return typeof v === 'number' && Number.isFinite(v); }
function nodeIndexById(id) { return nodes().findIndex((n) => isObj(n) && n.id === id); }
function nodeById(id) { return nodes().find((n) => isObj(n) && n.id === id); }
function hasPorts(node) { return node.type !== 'note'; }
/** Whether a node can fail for reasons outside the design (it acts on the world), so it has an
 * error port whose edges (labelled `error`) are taken when it fails for good. */
function canFail(node) { return ['agent', 'command', 'http', 'emit', 'design'].includes(node.type) || (node.type === 'output' && Boolean(node.deliver)); }
/** Whether edge `e` is an error path: labelled `error`, out of a node that can fail. */
function isErrorEdge(e) {
  if (!isObj(e) || typeof e.label !== 'string' || e.label.toLowerCase() !== 'error') return false;
  const from = nodes().find((n) => isObj(n) && n.id === e.from);
  return Boolean(from) && canFail(from);
}
function hasInput(node) { return node.type !== 'note' && node.type !== 'trigger'; }
/** The labels of a node's output ports, top to bottom on its right side: one port per branch (a
 * condition's `true` and `false`, a loop's `each` and `done`, an approval's answers), else one
 * plain port (null); then `error` on a step that can fail. A note has none. An edge leaves from
 * the port of its label (see portY). */
function portLabels(node) {
  if (!hasPorts(node)) return [];
  const branches = labelChoices(node);
  return [...(branches.length ? branches : [null]), ...(canFail(node) ? ['error'] : [])];
}
/** The height an output port needs on a node's side: an approval with many answers grows. */
const PORT_GAP = 16;
function sizeOf(node) {
  if (node.type === 'note') return { w: NOTE_W, h: noteHeight(node) };
  return { w: NODE_W, h: Math.max(NODE_H, PORT_GAP * (portLabels(node).length + 1)) };
}
/** Which of `node`'s ports (an index into portLabels) an edge labelled `label` leaves: the port
 * of that label (a condition's `TRUE` finds `true`), or -1 for a label no port has (or none,
 * where every port has one). */
function portIndex(node, label) {
  const labels = portLabels(node);
  const given = label === undefined || label === '' ? null : label;
  const i = labels.indexOf(given);
  if (i >= 0 || typeof given !== 'string') return i;
  return labels.findIndex((l) => typeof l === 'string' && l.toLowerCase() === given.toLowerCase());
}
/** Where (from the node's top) an edge labelled `label` leaves `node`: at its port, or, without
 * one, in the middle of the right side. */
function portY(node, label) {
  const i = portIndex(node, label), h = sizeOf(node).h;
  return i < 0 ? h / 2 : (h * (i + 1)) / (portLabels(node).length + 1);
}
function pos(node) {
  if (isNum(node.x) && isNum(node.y)) return { x: node.x, y: node.y };
  return autoPos.get(node) || { x: 0, y: 0 };
}

/** A value at a dotted path of an object. */
function get(obj, path) {
  let cur = obj;
  for (const part of path.split('.')) {
    if (!isObj(cur)) return undefined;
    cur = cur[part];
  }
  return cur;
}
/** Sets (or, for `undefined`, removes) a value at a dotted path; empty parents are removed. */
function set(obj, path, value) {
  const parts = path.split('.');
  const last = parts.pop();
  let cur = obj;
  const chain = [];
  for (const part of parts) {
    if (!isObj(cur[part])) {
      if (value === undefined) return;
      cur[part] = {};
    }
    chain.push([cur, part]);
    cur = cur[part];
  }
  if (value === undefined) delete cur[last]; else cur[last] = value;
  for (let i = chain.length - 1; i >= 0; i--) {
    const [parent, key] = chain[i];
    if (isObj(parent[key]) && Object.keys(parent[key]).length === 0) delete parent[key]; else break;
  }
}

