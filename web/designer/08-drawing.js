// ---------------------------------------------------------------------------------------------
// Drawing
// ---------------------------------------------------------------------------------------------
function el(tag, attrs = {}, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null && v !== false) e.setAttribute(k, String(v));
  for (const c of children) if (c) e.append(c);
  return e;
}
function h(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'value') e.value = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) e.append(c);
  return e;
}
/** The start of `text` with its white space made single spaces, trimmed: at most `limit`
 * characters, and whether any of the text was left off (`cut`). It reads `text` only as far as
 * it answers (a word at a time, each word at most 256 characters at once), so a field of a
 * million characters costs what its start does. */
function headOf(text, limit) {
  const raw = String(text ?? ''), piece = /\S{1,256}/g;
  let out = '', end = -1, m;
  while (out.length <= limit && (m = piece.exec(raw))) {
    out += (out && m.index !== end ? ' ' : '') + m[0];
    end = piece.lastIndex;
  }
  return out.length > limit ? { text: out.slice(0, limit), cut: true } : { text: out, cut: false };
}
/** `s` on one line of at most `n` characters, shortened with an ellipsis. */
function clip(s, n) {
  const head = headOf(s, n);
  return head.cut ? head.text.slice(0, n - 1) + '…' : head.text;
}
/** `text` in at most `maxLines` lines of at most `width` characters (by words), the last one
 * ending with an ellipsis when text is left over. Reads the words only as far as they fill. */
function wrap(text, width, maxLines) {
  const word = /\S+/g, raw = String(text ?? '');
  const lines = [];
  let line = '', more = false, m;
  while ((m = word.exec(raw))) {
    const w = m[0];
    if ((line + ' ' + w).trim().length > width && line) { lines.push(line); line = w; } else line = (line + ' ' + w).trim();
    if (lines.length >= maxLines) { more = true; break; }
  }
  if (line && lines.length < maxLines) lines.push(line);
  if (more) lines[maxLines - 1] = clip(lines[maxLines - 1] + ' …', width);
  return lines.map((l) => clip(l, width));
}
function noteHeight(node) {
  const lines = wrap(node.text, 28, 5).length + (node.label ? 1 : 0);
  return Math.max(56, 22 + lines * 16);
}

/** One line saying what a node does. */
function summary(n) {
  const s = (v) => (typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v));
  switch (n.type) {
    case 'trigger': {
      if (n.mode === 'schedule') { const sc = isObj(n.schedule) ? n.schedule : {}; return `schedule · ${sc.preset === 'custom' ? s(sc.cron) : [sc.preset, sc.time ?? (sc.minute !== undefined ? ':' + sc.minute : '')].filter(Boolean).join(' ')}`; }
      if (n.mode === 'heartbeat') return `every ${s(n.every)}${n.window ? ' · ' + s(n.window) : ''}`;
      if (n.mode === 'event') return `on ${Array.isArray(n.sources) ? n.sources.join(', ') : s(n.sources)}`;
      if (n.mode === 'folder') return `folder ${s(n.path)}`;
      if (n.mode === 'watch') return `watch ${s(n.command)}`;
      return s(n.mode);
    }
    case 'agent': return s(n.prompt);
    case 'condition': return s(n.expr);
    case 'approval': return s(n.question);
    case 'output': return n.deliver ? `${s(n.deliver)} → ${s(n.target)}` : n.template !== undefined ? s(n.template) : 'collect';
    case 'command': return n.run !== undefined ? '$ ' + s(n.run) : Array.isArray(n.argv) ? n.argv.join(' ') : '';
    case 'http': return `${s(n.method || 'GET')} ${s(n.url)}`;
    case 'loop': return `over ${s(n.over)}`;
    case 'wait': return n.seconds !== undefined ? `${s(n.seconds)} s` : s(n.duration);
    case 'emit': return s(n.event);
    case 'design': return `${s(n.design)}${n.wait === false ? ' (no wait)' : ''}`;
    case 'wait_event': return n.match ? `${s(n.event)} where ${s(n.match)}` : `${s(n.event)}`;
    default: return '';
  }
}

/** The last verdict, kept on screen until the next one arrives. Edge issues name edges by
 *  index, so they are shown only while the edges are the ones that were validated. */
function currentIssues() {
  if (issuesVersion === version || JSON.stringify(edges()) === issuesEdges) return issues;
  return { errors: issues.errors.filter((i) => i.edge === undefined), warnings: issues.warnings.filter((i) => i.edge === undefined) };
}
function nodeIssues(id) {
  const cur = currentIssues();
  return { errors: cur.errors.filter((i) => i.node === id), warnings: cur.warnings.filter((i) => i.node === id) };
}
function drawStripe(g, n, size) {
  const stripe = TYPE_INFO[n.type] ? TYPE_INFO[n.type].colour : 'var(--vwf-error, #c9252d)';
  // The box's left edge, its rounded corners (rx 8) included, whatever the box's height.
  const d = `M 6 0 V ${size.h} H 8 A 8 8 0 0 1 0 ${size.h - 8} V 8 A 8 8 0 0 1 8 0 Z`;
  g.append(el('path', { class: 'stripe', d, style: `fill: ${stripe}` }));
}

/** The width of `text` in `px`-high letters of the canvas's font (bold for a title), measured
 * once per text and size (the texts measured are short: see fitChars). */
const measureCtx = document.createElement('canvas').getContext('2d');
const measured = new Map();
function textWidth(text, px, bold) {
  const key = `${bold ? 'b' : ''}${px.toFixed(2)}|${text}`;
  if (!measured.has(key)) {
    if (measured.size > 20000) measured.clear();
    measureCtx.font = `${bold ? 600 : 400} ${px}px ${getComputedStyle(document.body).fontFamily}`;
    measured.set(key, measureCtx.measureText(text).width);
  }
  return measured.get(key);
}

/** The narrowest letter of the canvas's font, as a share of its height (an `i` is about 0.28). */
const NARROWEST = 0.2;
/** The most characters `lines` lines `width` wide can show in `px`-high letters: what of a
 * field is measured and wrapped at most, however long the field is. */
function fitChars(width, lines, px) { return Math.ceil((lines * Math.max(0, width)) / (px * NARROWEST)) + lines; }

/** The longest start of `s` (at least one character) for which `ok` holds, by halving: widths
 * grow with the characters, so this measures a few starts instead of every one. */
function longestStart(s, ok) {
  let lo = 1, hi = s.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (ok(s.slice(0, mid))) lo = mid; else hi = mid - 1;
  }
  return lo;
}

/** `text` in lines no wider than `width` at `px` (a word wider than that is split), as far as a
 * box of `most` lines needs: {lines, whole}, whole when they hold all of it and are no more than
 * `most`. Else the lines go on past the `most`-th for a line's worth of text (what the last line
 * shown, cut with an ellipsis, needs), or end with a line '…' where the text goes on unmeasured:
 * only its start that could fit is wrapped (fitChars). */
function wrapWhole(text, width, px, bold, most) {
  const head = headOf(text, fitChars(width, most + 1, px)), after = fitChars(width, 1, px);
  const fits = (s) => textWidth(s, px, bold) <= width;
  const lines = [];
  const enough = () => lines.length > most && lines.slice(most - 1).join(' ').length > after;
  let line = '', stopped = false;
  for (let word of head.text.split(' ').filter(Boolean)) {
    if (enough()) { stopped = true; break; }
    if (line && fits(line + ' ' + word)) { line += ' ' + word; continue; }
    if (line) lines.push(line);
    while (word.length > 1 && !enough() && !fits(word)) {
      const i = longestStart(word.slice(0, -1), fits);
      lines.push(word.slice(0, i));
      word = word.slice(i);
    }
    line = word;
  }
  if (line) lines.push(line);
  if (head.cut && !stopped) lines.push('…');
  return { lines, whole: !head.cut && lines.length <= most };
}

/** `text` on one line no wider than `width` at `px`, shortened with an ellipsis (measuring only
 * its start that could fit, a few times: see longestStart). */
function clipTo(text, width, px, bold) {
  const head = headOf(text, fitChars(width, 1, px)), s = head.text;
  if (!head.cut && textWidth(s, px, bold) <= width) return s;
  return s.slice(0, longestStart(s, (t) => textWidth(t + '…', px, bold) <= width)).trimEnd() + '…';
}

/** The title a node shows: its label, else its id (a note: its label only). */
function titleOf(n) { return n.type === 'note' ? (n.label ? String(n.label) : '') : String(n.label || n.id); }

/** The lines of text a node shows when drawn for zoom `kd` (see drawZoom): its whole title, in
 * letters at least TITLE_PX high on screen, then, while the box has room, its type line and what
 * it does (a note: its text), at least DETAIL_PX high. Each line: {cls, text, x, y, px}. A title
 * the box cannot hold whole at that size is drawn smaller, and cut only below SMALLEST_PX. */
function nodeLines(n, size, kd) {
  const note = n.type === 'note', x = note ? 10 : 16, width = size.w - x - 8;
  const bottom = size.h - 3, out = [];
  let y = 0;
  const title = titleOf(n);
  if (title) {
    // How many title lines of `p`-high letters the box holds (at least one, to be cut).
    const room = (p) => Math.max(1, Math.floor((bottom - 0.95 * p - 8.6 - 0.22 * p) / (1.2 * p)) + 1);
    const fits = (p, w) => w.whole && 0.95 * p + 8.6 + (w.lines.length - 1) * 1.2 * p + 0.22 * p <= bottom;
    let px = Math.max(13, TITLE_PX / kd), wrapped = wrapWhole(title, width, px, true, room(px));
    for (let screen = TITLE_PX - 1; !fits(px, wrapped) && screen >= SMALLEST_PX; screen--) { px = Math.max(9, screen / kd); wrapped = wrapWhole(title, width, px, true, room(px)); }
    let lines = wrapped.lines;
    if (!fits(px, wrapped)) {
      const keep = room(px);
      lines = [...lines.slice(0, keep - 1), clipTo(lines.slice(keep - 1).join(' '), width, px, true)];
    }
    lines.forEach((text, i) => { y = 0.95 * px + 8.6 + i * 1.2 * px; out.push({ cls: 'title' + (kd < FULL_K ? ' overview' : ''), text, x, y, px }); });
  }
  const px = Math.max(11, DETAIL_PX / kd);
  // A note's text: the lines its box can hold, and more when text is left over.
  const body = note ? wrapWhole(n.text, width, px, false, Math.ceil(size.h / (1.45 * px)) + 1).lines : [];
  if (note && !body.length && !title) body.push('(empty note)');
  const more = note ? body.map((t) => ['detail', t]) : [['sub', n.label ? `${n.type} · ${n.id}` : String(n.type)], ['detail', summary(n)]];
  for (const [cls, text] of more) {
    const next = y ? y + (note ? 1.45 : 1.5) * px : 0.95 * px + 8.6;
    if (!text || next + 0.25 * px > bottom) {
      // A note's text that goes on past its box ends with an ellipsis.
      const last = out[out.length - 1];
      if (text && note && last && last.cls === 'detail') last.text = clipTo(last.text + ' …', width, px, false);
      break;
    }
    y = next;
    out.push({ cls, text: clipTo(text, width, px, false), x, y, px });
  }
  return out;
}

/** The node's text (see nodeLines), for the zoom the canvas is drawn for. */
function drawText(g, n, size) {
  const kd = drawZoom();
  const lines = nodeLines(n, size, kd).map((l) => el('text', { class: l.cls, x: l.x, y: l.y.toFixed(1), style: kd < FULL_K ? `font-size: ${l.px.toFixed(1)}px` : undefined }, document.createTextNode(l.text)));
  g.append(el('g', { 'clip-path': n.type === 'note' ? undefined : 'url(#clip-text)' }, ...lines));
}

function edgeIssues(index) {
  const cur = currentIssues();
  return { errors: cur.errors.filter((i) => i.edge === index), warnings: cur.warnings.filter((i) => i.edge === index) };
}

function render() {
  const nodesG = $('nodes'), edgesG = $('edges');
  nodesG.replaceChildren();
  edgesG.replaceChildren();
  const all = nodes();
  all.forEach((n, i) => { if (isObj(n)) nodesG.append(drawNode(n, i)); });
  const paths = routes();
  edges().forEach((e, i) => { if (isObj(e) && paths[i]) edgesG.append(drawEdge(e, i, paths[i])); });
  const hint = $('hint');
  hint.textContent = all.length ? '' : READ_ONLY ? '' : 'Add a node from the palette on the left: click a type, or drag it here.';
  viewportEl.setAttribute('transform', `translate(${view.x},${view.y}) scale(${view.k})`);
  drawMinimap();
}

function drawNode(n, index) {
  const p = pos(n), size = sizeOf(n);
  const ni = nodeIssues(n.id);
  const state = runState ? nodeState(n) : null;
  const cls = ['node', 'type-' + String(n.type).replace(/[^a-z]/g, '')];
  if (n.type === 'note') cls.push('note', 'note-' + (NOTE_COLOURS.includes(n.color) ? n.color : 'yellow'));
  if (selectedNodes().includes(index)) cls.push('selected');
  if (ni.errors.length) cls.push('has-error'); else if (ni.warnings.length) cls.push('has-warning');
  if (state && state.state) cls.push('state-' + state.state);
  if (runState && n.type !== 'note' && (!state || !state.state)) cls.push('unreached');
  const pinned = pinOf(n.id) !== undefined;
  if (pinned) cls.push('pinned');
  const g = el('g', {
    class: cls.join(' '), transform: `translate(${p.x},${p.y})`,
    'data-testid': 'node-' + n.id, 'data-node-id': n.id, 'data-node-index': index, 'data-type': n.type,
    'data-state': state && state.state ? state.state : undefined,
    role: 'button', 'aria-label': `${n.type} ${n.id}${n.label ? ' (' + n.label + ')' : ''}`,
  });
  g.append(el('title', {}, document.createTextNode(`${n.label ? n.label + ' — ' : ''}${n.type} ${n.id}${summary(n) ? '\n' + summary(n) : ''}`)));
  g.append(el('rect', { class: 'box', width: size.w, height: size.h, rx: 8 }));
  if (n.type !== 'note') drawStripe(g, n, size);
  drawText(g, n, size);
  if (n.type !== 'note') {
    if (state && state.state) {
      // A pill above the box's right corner: the step's state in words, besides its colour.
      const w = state.text.length * 6.4 + 14;
      g.append(el('g', { class: 'state-pill', transform: `translate(${size.w - w - 6},-10)` },
        el('rect', { width: w, height: 18, rx: 9 }),
        el('text', { class: 'state-label', x: w / 2, y: 13, 'text-anchor': 'middle', 'data-testid': 'state-' + n.id }, document.createTextNode(state.text))));
    }
    if (pinned) {
      g.append(el('g', { class: 'pin-tag', 'data-testid': 'pin-' + n.id, transform: 'translate(6,-10)' },
        el('title', {}, document.createTextNode('Pinned: test runs use its pinned output instead of running it')),
        el('rect', { width: 44, height: 16, rx: 8 }),
        el('text', { x: 22, y: 12, 'text-anchor': 'middle' }, document.createTextNode('pinned'))));
    }
    // The step's output in the run shown, right under the node (a step run alone shows here).
    const out = runState && isObj(runState.outputs) ? runState.outputs[n.id] : undefined;
    if (out !== undefined) {
      const px = Math.max(10.5, DETAIL_PX / drawZoom());
      g.append(el('text', { class: 'out-preview', x: 4, y: (size.h + 2.5 + px).toFixed(1), style: `font-size: ${px.toFixed(1)}px`, 'data-testid': 'out-' + n.id }, document.createTextNode('→ ' + clip(outputText(out).replace(/\s+/g, ' '), Math.max(8, Math.floor((30 * 10.5) / px))))));
    }
    if (hasInput(n)) {
      g.append(el('g', { class: 'port port-in', 'data-testid': 'port-in-' + n.id, transform: `translate(0,${size.h / 2})` },
        el('circle', { class: 'hit', r: 10 }), el('circle', { class: 'dot', r: 5 })));
    }
    drawOutPorts(g, n, size);
  }
  if (ni.errors.length || ni.warnings.length) {
    const kind = ni.errors.length ? 'error' : 'warning';
    const text = [...ni.errors, ...ni.warnings].map((i) => (i.field ? i.field + ': ' : '') + i.message).join('\n');
    g.append(el('g', { class: 'marker ' + kind, 'data-testid': 'issue-' + n.id, transform: `translate(${size.w - 4},4)` },
      el('title', {}, document.createTextNode(text)),
      el('circle', { r: 9 }),
      el('text', { 'text-anchor': 'middle', y: 4.5 }, document.createTextNode('!'))));
  }
  return g;
}

/** What dragging from a port makes, in words (its tooltip). */
function portTitle(n, label) {
  if (label === null) return 'Drag to the step that comes next';
  if (label === 'error' && canFail(n)) return 'On error: drag to the step that handles this one failing';
  if (n.type === 'condition') return `${label}: drag to the step taken when the condition is ${label}`;
  if (n.type === 'loop') return label === 'each' ? 'each: drag to the first step of the loop body, run once per item' : 'done: drag to the step that runs after the last pass';
  return `${label}: drag to the step taken when the answer is ${label}`;
}

/** A node's output ports down its right side (see portLabels): a plain one, one per branch, each
 * named beside it, and the error port of a step that can fail. Dragging from a port makes an edge
 * with its label. */
function drawOutPorts(g, n, size) {
  const labels = portLabels(n), hit = labels.length > 2 ? 8 : 10;
  const used = new Set(edges().filter((e) => isObj(e) && e.from === n.id).map((e) => portIndex(n, e.label)));
  labels.forEach((label, i) => {
    const y = portY(n, label), error = label === 'error' && canFail(n);
    const cls = ['port', 'port-out', error ? 'port-error' : label !== null ? 'port-branch' : ''].filter(Boolean).join(' ');
    const testid = label === null ? 'port-out-' + n.id : error ? 'port-error-' + n.id : `port-out-${n.id}:${label}`;
    g.append(el('g', { class: cls, 'data-testid': testid, 'data-label': label ?? undefined, transform: `translate(${size.w},${y})`, 'aria-label': label === null ? 'drag to connect' : `drag to connect the ${label} path` },
      el('title', {}, document.createTextNode(portTitle(n, label))),
      el('circle', { class: 'hit', r: hit }), el('circle', { class: 'dot', r: error ? 4.5 : 5 })));
    // A free branch's name beside its port (an edge that leaves it carries the name itself).
    if (label !== null && !error && !used.has(i) && zoomStep === null) {
      g.append(el('text', { class: 'port-label', x: size.w + 8, y: y + 3.5, 'data-testid': `port-label-${n.id}:${label}` }, document.createTextNode(clip(label, 14))));
    }
  });
}

function curve(x1, y1, x2, y2) {
  const d = Math.max(40, Math.abs(x2 - x1) / 2);
  return `M ${x1} ${y1} C ${x1 + d} ${y1}, ${x2 - d} ${y2}, ${x2} ${y2}`;
}

function drawEdge(e, index, route) {
  const ei = edgeIssues(index);
  const cls = ['edge'];
  if (isErrorEdge(e)) cls.push('edge-error');
  if (sel && sel.edge === index) cls.push('selected');
  if (ei.errors.length) cls.push('has-error'); else if (ei.warnings.length) cls.push('has-warning');
  const g = el('g', { class: cls.join(' '), 'data-testid': `edge-${e.from}-${e.to}`, 'data-edge-index': index, 'data-from': e.from, 'data-to': e.to, 'data-label': e.label ?? '' });
  const tip = [`${e.from} → ${e.to}${e.label !== undefined ? ' (' + e.label + ')' : ''}`, ...[...ei.errors, ...ei.warnings].map((i) => i.message)].join('\n');
  g.append(el('title', {}, document.createTextNode(tip)));
  g.append(el('path', { class: 'hit', d: route.d }));
  g.append(el('path', { class: 'line', d: route.d, 'marker-end': 'url(#arrow)' }));
  // A handle on the path (at its label, else its middle): something to click on a straight edge.
  const m = route.label || pointAlong(route.pts, 0.5);
  g.append(el('circle', { class: 'handle', cx: m.x, cy: m.y, r: 9 }));
  const text = edgeLabelText(e);
  if (text) {
    const w = labelWidth(text);
    g.append(el('g', { class: 'tag', transform: `translate(${m.x},${m.y})` },
      el('rect', { x: -w / 2, y: -LABEL_H / 2, width: w, height: LABEL_H, rx: 9 }),
      el('text', { 'text-anchor': 'middle', y: 4 }, document.createTextNode(text))));
  }
  return g;
}

