// ---------------------------------------------------------------------------------------------
// Editing operations
// ---------------------------------------------------------------------------------------------
function freshId(type) {
  const used = new Set(nodes().filter(isObj).map((n) => n.id));
  for (let i = 1; ; i++) if (!used.has(type + i)) return type + i;
}

function addNode(type, at) {
  const p = placeNew(type, at);
  const node = { id: freshId(type), type, ...(NEW_NODE[type] ? JSON.parse(JSON.stringify(NEW_NODE[type])) : {}), x: Math.round(p.x), y: Math.round(p.y) };
  change(() => {
    if (!Array.isArray(graph.nodes)) graph.nodes = [];
    settleAuto();
    graph.nodes.push(node);
    sel = { node: graph.nodes.length - 1 };
  }, { panel: true });
  say(`Added ${node.id}`);
  revealNode(node); // when the visible area had no free spot left
  return node;
}

/** Connects two nodes; `label` (the port's: a branch, `error`) is set on the new edge. */
function connect(fromIndex, toIndex, label) {
  const from = nodes()[fromIndex], to = nodes()[toIndex];
  if (!from || !to) return;
  if (fromIndex === toIndex) { say(`Not connected: ${from.id} cannot lead to itself`, 'bad'); return; }
  if (!hasInput(to)) {
    say(`Not connected: ${to.type === 'note' ? 'a note takes no edges' : 'nothing may lead into a trigger'} (${to.id})`, 'bad');
    return;
  }
  const existing = edges().findIndex((e) => isObj(e) && e.from === from.id && e.to === to.id);
  if (existing >= 0) {
    const had = edges()[existing].label;
    select({ edge: existing });
    say(`${from.id} → ${to.id} is connected already${had !== undefined && had !== null && had !== '' ? ` (${had}): its label is in the panel` : ''}`);
    return;
  }
  change(() => {
    if (!Array.isArray(graph.edges)) graph.edges = [];
    settleAuto();
    graph.edges.push(label ? { from: from.id, to: to.id, label } : { from: from.id, to: to.id });
    sel = { edge: graph.edges.length - 1 };
  }, { panel: true });
  say(`Connected ${from.id} → ${to.id}${label ? branchWords(from, label) : ''}`);
}

/** When an edge with `label` out of `from` is taken, in words. */
function branchWords(from, label) {
  if (label === 'error' && canFail(from)) return ` as its error path: taken when ${from.id} fails for good`;
  if (from.type === 'condition') return ` (${label}): taken when the condition is ${label}`;
  if (from.type === 'loop') return label === 'each' ? ' (each): the loop body, once per item' : ' (done): after the last pass';
  if (from.type === 'approval') return ` (${label}): taken when the answer is ${label}`;
  return ` (${label})`;
}

function deleteSelection() {
  if (READ_ONLY || !sel) return;
  if (sel.nodes) deleteNodes(sel.nodes);
  else if (sel.node !== undefined) {
    const node = nodes()[sel.node];
    if (!node) return;
    const id = node.id;
    const shared = nodes().filter((n) => isObj(n) && n.id === id).length > 1;
    change(() => {
      settleAuto();
      graph.nodes.splice(sel.node, 1);
      if (!shared && Array.isArray(graph.edges)) graph.edges = graph.edges.filter((e) => !(isObj(e) && (e.from === id || e.to === id)));
      sel = null;
    }, { panel: true });
    say(`Deleted ${id}`);
  } else if (sel.edge !== undefined) {
    const e = edges()[sel.edge];
    change(() => { settleAuto(); graph.edges.splice(sel.edge, 1); sel = null; }, { panel: true });
    if (isObj(e)) say(`Cut ${e.from} → ${e.to}`);
  }
}

/** Renames a node, and (unless another node shares its old id) every edge and every
 * `{{nodes.<id>…}}` / `out.<id>…` reference naming it; one undo step. Says what changed. */
function renameNode(index, newId) {
  const node = nodes()[index];
  if (!node || node.id === newId) return;
  const old = node.id;
  if (!newId) { say('A node needs an id', 'bad'); renderPanel(); return; }
  if (nodeIndexById(newId) >= 0) { say(`Not renamed: another node is called ${newId}`, 'bad'); renderPanel(); return; }
  const shared = nodes().filter((n) => isObj(n) && n.id === old).length > 1;
  let refs = 0, ends = 0;
  change(() => {
    const ids = [...nodes().filter(isObj).map((n) => n.id), newId];
    node.id = newId;
    if (shared) return;
    if (pinOf(old) !== undefined) { graph.pins[newId] = graph.pins[old]; delete graph.pins[old]; }
    for (const n of nodes()) if (isObj(n)) refs += renameInNode(n, old, newId, ids);
    for (const e of edges()) {
      if (!isObj(e)) continue;
      if (e.from === old) { e.from = newId; ends++; }
      if (e.to === old) { e.to = newId; ends++; }
    }
  }, { panel: true });
  const plural = (n, w) => `${n} ${w}${n === 1 ? '' : 's'}`;
  say(`Renamed ${old} to ${newId}: ${plural(refs + ends, 'place')} changed (${plural(refs, 'reference')}, ${plural(ends, 'edge end')})`, 'good');
}

