// ---------------------------------------------------------------------------------------------
// The page's API for hosts (the dashboard) and tests
// ---------------------------------------------------------------------------------------------
window.vwfDesigner = {
  /** A copy of the graph on the canvas: exactly the JSON Export gives. */
  getGraph: () => JSON.parse(JSON.stringify(graph)),
  /** Replaces the graph (undoable); validates it when served. */
  setGraph: (g) => { if (!isObj(g)) throw new TypeError('a design is a JSON object'); if (READ_ONLY) { graph = JSON.parse(JSON.stringify(g)); layout(); render(); fit(); return; } replaceGraph(g); },
  /** The server's verdict on the graph: {ok, errors, warnings} (offline: ok null). */
  validate,
  /** Selects a node by id (null clears the selection); returns whether it was found. */
  select: (id) => {
    if (id === null || id === undefined) { select(null); return true; }
    const i = nodeIndexById(id);
    if (i < 0) return false;
    select({ node: i }, { reveal: true });
    return true;
  },
  getName: () => designName,
  /** Whether nothing on the canvas can be edited or saved (a run, or a recorded version). */
  isReadOnly: () => READ_ONLY,
  /** The recorded version on show (`?version=`), or null. */
  getVersion: () => VERSION,
  /** The run input box: {input} (undefined when empty), or {error} when it is not JSON. */
  getRunInput: readRunInput,
  setName: (n) => { setName(String(n ?? '')); renderPanel(); },
  load: loadDesign,
  save,
  run,
  undo,
  redo,
  fit,
};

