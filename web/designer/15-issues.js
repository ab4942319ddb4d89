// ---------------------------------------------------------------------------------------------
// The issue list
// ---------------------------------------------------------------------------------------------
function describeIssue(i) {
  if (i.edge !== undefined) {
    const e = edges()[i.edge];
    return isObj(e) ? `edge ${e.from} → ${e.to}` : `edge ${i.edge}`;
  }
  if (i.node !== undefined) return i.field ? `${i.node} · ${i.field}` : i.node;
  return i.field ? `design · ${i.field}` : 'design';
}

function setIssuesStatus(status) {
  $('issues').dataset.status = status;
  if (status === 'checking' || status === 'pending') $('issues-summary').textContent = 'Checking…';
}

function renderIssues(statusText) {
  const box = $('issues'), list = $('issues-list'), summaryEl = $('issues-summary');
  list.replaceChildren();
  if (READ_ONLY) { box.hidden = true; return; }
  if (!SERVED) {
    box.dataset.status = 'offline';
    summaryEl.className = 'summary muted';
    summaryEl.textContent = 'Opened from a file: validation, saving and running need the server (vwf serve). Import and export work here.';
    return;
  }
  const cur = currentIssues();
  box.dataset.errors = String(cur.errors.length);
  box.dataset.warnings = String(cur.warnings.length);
  if (statusText) { summaryEl.className = 'summary bad'; summaryEl.textContent = statusText; }
  else if (issuesVersion !== version) { summaryEl.className = 'summary muted'; summaryEl.textContent = box.dataset.status === 'idle' ? 'Not checked yet.' : 'Checking…'; }
  else if (!cur.errors.length && !cur.warnings.length) { summaryEl.className = 'summary ok'; summaryEl.textContent = 'No problems found.'; }
  else {
    const plural = (n, w) => `${n} ${w}${n === 1 ? '' : 's'}`;
    summaryEl.className = 'summary ' + (cur.errors.length ? 'bad' : 'muted');
    summaryEl.textContent = `${plural(cur.errors.length, 'error')}, ${plural(cur.warnings.length, 'warning')}`;
  }
  for (const [kind, items] of [['error', cur.errors], ['warning', cur.warnings]]) {
    for (const i of items) {
      const li = h('li', { class: 'issue ' + kind, 'data-testid': 'issue-item', 'data-kind': kind, tabindex: 0, title: 'Show on the canvas' },
        h('span', { class: 'where', text: describeIssue(i) }), document.createTextNode(': ' + i.message));
      const go = () => {
        if (i.edge !== undefined && isObj(edges()[i.edge])) select({ edge: i.edge });
        else if (i.node !== undefined && nodeIndexById(i.node) >= 0) select({ node: nodeIndexById(i.node) }, { reveal: true });
        else select(null);
        if (i.field) focusField(i.field);
      };
      li.addEventListener('click', go);
      li.addEventListener('keydown', (e) => { if (e.key === 'Enter') go(); });
      list.append(li);
    }
  }
}

