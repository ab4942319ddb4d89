// ---------------------------------------------------------------------------------------------
// Changes and history: every change goes through `change`, so undo/redo covers all of them.
// Consecutive edits with the same key (typing in one field) are one undo step.
// ---------------------------------------------------------------------------------------------
function snapshot() { return { graph: JSON.stringify(graph), sel: sel ? JSON.parse(JSON.stringify(sel)) : null }; }

function change(mutate, { key = null, panel = false } = {}) {
  if (READ_ONLY) return;
  if (!(key && key === lastKey)) {
    undoStack.push(snapshot());
    if (undoStack.length > 300) undoStack.shift();
    redoStack = [];
  }
  lastKey = key;
  mutate();
  changed({ panel });
}

/** After the graph changed: redraw, revalidate, tell the host. */
function changed({ panel = false } = {}) {
  version++;
  runState = null;
  layout();
  render();
  if (panel) renderPanel(); else markPanel();
  updateDirty();
  scheduleValidate();
  notify('changed');
}

function restore(snap) {
  graph = JSON.parse(snap.graph);
  sel = snap.sel;
  lastKey = null;
  changed({ panel: true });
}
function undo() {
  if (READ_ONLY || !undoStack.length) return;
  redoStack.push(snapshot());
  restore(undoStack.pop());
  say('Undone');
}
function redo() {
  if (READ_ONLY || !redoStack.length) return;
  undoStack.push(snapshot());
  restore(redoStack.pop());
  say('Redone');
}

/** Replaces the whole graph (import, open, template, setGraph); undoable like any change. */
function replaceGraph(next, name) {
  const copy = JSON.parse(JSON.stringify(next));
  if (name !== undefined) setName(name);
  change(() => { graph = copy; sel = null; }, { panel: true });
  lastKey = null;
  fit();
}

function setName(name) {
  designName = name || '';
  $('design-name').value = designName;
  document.title = (designName ? designName + ' · ' : '') + 'visual-workflow designer';
}

/** Whether the canvas holds edits that were not saved (a new design with nodes counts). */
function unsaved() {
  return !READ_ONLY && (savedText === null ? nodes().length > 0 : JSON.stringify(graph) !== savedText);
}

function updateDirty() {
  $('dirty').hidden = !SERVED || !unsaved();
  $('btn-undo').disabled = !undoStack.length;
  $('btn-redo').disabled = !redoStack.length;
}

/** The origin of the page that frames the canvas, the only one its messages go to. A served
 * canvas is framed only where the server's frame-ancestors policy allows (its own dashboard, the
 * origins of [server] frame_ancestors), and the browser checked that before showing it; so the
 * parent's origin, as the browser reports it, is one the server allows. Unknown or opaque (a
 * browser that says neither, a file: page): null, and nothing is posted. */
function embedderOrigin() {
  if (window.parent === window) return null;
  let origin = location.ancestorOrigins && location.ancestorOrigins.length ? location.ancestorOrigins[0] : null;
  if (!origin && document.referrer) {
    try { origin = new URL(document.referrer).origin; } catch (e) { origin = null; }
  }
  return origin && /^https?:\/\//.test(origin) ? origin : null;
}

function notify(event, extra = {}) {
  const origin = embedderOrigin();
  if (!origin) return;
  try {
    // A parent that is not of that origin (it navigated away) receives nothing.
    window.parent.postMessage({ type: 'vwf-designer', event, name: designName, ...extra }, origin);
  } catch (e) { /* a host that went away */ }
}

