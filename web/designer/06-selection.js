// ---------------------------------------------------------------------------------------------
// Selection
// ---------------------------------------------------------------------------------------------
function select(next, { reveal = false } = {}) {
  sel = next;
  lastKey = null;
  render();
  renderPanel();
  if (reveal && sel && sel.node !== undefined) revealNode(nodes()[sel.node]);
}

/** Everything Tab and the arrow keys step through: nodes, then edges. */
function cycle(step) {
  const items = [...nodes().map((n, i) => (isObj(n) ? { node: i } : null)), ...edges().map((e, i) => (isObj(e) ? { edge: i } : null))].filter(Boolean);
  if (!items.length) return;
  const at = sel ? items.findIndex((it) => it.node === sel.node && it.edge === sel.edge) : -1;
  const next = at < 0 ? (step > 0 ? 0 : items.length - 1) : (at + step + items.length) % items.length;
  select(items[next], { reveal: true });
}

function revealNode(node) {
  if (!node) return;
  const r = canvasEl.getBoundingClientRect();
  const p = pos(node), s = sizeOf(node);
  const sx = p.x * view.k + view.x, sy = p.y * view.k + view.y;
  if (sx < 0 || sy < 0 || sx + s.w * view.k > r.width || sy + s.h * view.k > r.height) {
    view.x = r.width / 2 - (p.x + s.w / 2) * view.k;
    view.y = r.height / 2 - (p.y + s.h / 2) * view.k;
    applyView();
  }
}

