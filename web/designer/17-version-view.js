// ---------------------------------------------------------------------------------------------
// Read-only version view (?design=<name>&version=<n>): one recorded version of a design, as it
// was saved. It is READ_ONLY, so nothing edits it and it is never saved; the host (the
// dashboard's design page) offers restoring it and comparing it with the newest.
// ---------------------------------------------------------------------------------------------
let versionError = null;

/** Shows version VERSION of the design `?design=` names. */
async function loadVersion() {
  const name = params.get('design') || '';
  setName(name);
  const r = await api('GET', `/designs/${enc(name)}/versions/${VERSION}`);
  if (!r.body || !r.body.ok || !isObj(r.body.graph)) {
    versionError = (r.body && r.body.error) || `HTTP ${r.status}`;
    say(`Cannot open version ${VERSION} of ${name}: ${versionError}`, 'bad');
    renderPanel();
    return;
  }
  graph = JSON.parse(JSON.stringify(r.body.graph));
  version++;
  layout();
  render();
  renderPanel();
  fit();
  say(`Version ${VERSION} of ${name} (read-only)`);
}

/** The side panel of a version: what it is, or the selected node's or edge's fields as saved. */
function renderVersionPanel(box) {
  if (versionError) { box.append(h('p', { class: 'muted', text: 'Error: ' + versionError })); return; }
  const node = sel && sel.node !== undefined ? nodes()[sel.node] : null;
  const edge = sel && sel.edge !== undefined ? edges()[sel.edge] : null;
  if (isObj(node)) {
    box.append(h('div', { class: 'heading' }, h('h3', { text: node.label || node.id }), h('span', { class: 'badge', text: String(node.type) })));
    box.append(h('p', { class: 'muted', text: `${node.type} · ${node.id}` }));
    appendSavedFields(box, node, ['id', 'type', 'label', 'x', 'y']);
  } else if (isObj(edge)) {
    box.append(h('div', { class: 'heading' }, h('h3', { text: `${edge.from} → ${edge.to}` }), h('span', { class: 'badge', text: 'edge' })));
    appendSavedFields(box, edge, ['from', 'to']);
  } else {
    box.append(h('div', { class: 'heading' }, h('h3', { text: `Version ${VERSION}` }), h('span', { class: 'badge', 'data-testid': 'version-badge', text: 'read-only' })));
    box.append(kv('Design', designName));
    if (typeof graph.description === 'string') box.append(kv('Description', graph.description));
    box.append(h('p', { class: 'muted', text: 'A recorded version, as it was saved: nothing here can be changed. Select a node to see its fields.' }));
  }
}

/** Each field of `item` but those in `skip`: text as it is, anything else as JSON. */
function appendSavedFields(box, item, skip) {
  for (const [key, value] of Object.entries(item)) {
    if (skip.includes(key)) continue;
    const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
    box.append(kv(key, h('pre', { 'data-testid': 'version-field-' + key, text })));
  }
}
