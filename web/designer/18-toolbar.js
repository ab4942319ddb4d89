// ---------------------------------------------------------------------------------------------
// Toolbar, dialogs, theme
// ---------------------------------------------------------------------------------------------
function say(text, kind = '') {
  const s = $('status');
  s.textContent = text;
  s.title = text;
  s.className = 'status ' + kind;
}

$('design-name').addEventListener('change', () => { setName($('design-name').value.trim()); renderPanel(); });
$('btn-new').addEventListener('click', () => { replaceGraph({ nodes: [], edges: [] }, ''); savedText = null; savedAs = ''; updateDirty(); say('New design'); });
$('btn-save').addEventListener('click', save);
$('btn-run').addEventListener('click', () => run());
$('btn-test-run').addEventListener('click', () => run(undefined, { test: true }));
$('btn-validate').addEventListener('click', validate);
$('btn-undo').addEventListener('click', undo);
$('btn-redo').addEventListener('click', redo);
for (const b of document.querySelectorAll('dialog [data-close]')) b.addEventListener('click', () => b.closest('dialog').close());

$('btn-open').addEventListener('click', async () => {
  const dlg = $('dlg-open'), body = $('open-body');
  body.textContent = 'Loading…';
  dlg.showModal();
  const [d, t] = await Promise.all([api('GET', '/designs'), api('GET', '/templates')]);
  body.replaceChildren();
  const pick = (fn) => async () => { dlg.close(); await fn(); };
  body.append(h('h3', { text: 'Saved designs' }));
  const saved = d.body.ok && Array.isArray(d.body.designs) ? d.body.designs : [];
  body.append(saved.length ? h('ul', {}, ...saved.map((n) => h('li', {}, h('button', { 'data-testid': 'open-design-' + n, onclick: pick(() => loadDesign(n)), text: n })))) : h('p', { class: 'muted', text: d.body.ok ? 'None yet.' : d.body.error }));
  body.append(h('h3', { text: 'Templates' }));
  const templates = t.body.ok && Array.isArray(t.body.templates) ? t.body.templates : [];
  body.append(h('ul', {}, ...templates.map((tpl) => h('li', {}, h('button', {
    'data-testid': 'open-template-' + tpl.name,
    onclick: pick(async () => { replaceGraph(tpl.graph, tpl.name); savedText = null; savedAs = ''; updateDirty(); say(`Template ${tpl.name}: save it under a name to keep it`); }),
  }, tpl.name, h('br'), h('small', { text: tpl.description || '' }))))));
});

$('btn-import').addEventListener('click', () => {
  $('import-msg').textContent = '';
  $('import-text').value = '';
  $('dlg-import').showModal();
  $('import-text').focus();
});
$('import-file').addEventListener('change', async () => {
  const file = $('import-file').files[0];
  if (file) { $('import-text').value = await file.text(); importText(); }
});
$('import-load').addEventListener('click', importText);
function importText() {
  let data;
  try { data = JSON.parse($('import-text').value); } catch (e) { $('import-msg').textContent = 'Not JSON: ' + e.message; return; }
  // A design, or an answer that wraps one ({ok, graph} from the API, {name, graph}).
  let name;
  if (isObj(data) && isObj(data.graph) && data.nodes === undefined) { name = typeof data.name === 'string' ? data.name : undefined; data = data.graph; }
  if (!isObj(data)) { $('import-msg').textContent = 'A design is a JSON object with nodes and edges.'; return; }
  $('dlg-import').close();
  replaceGraph(data, name);
  say(`Imported ${nodes().length} nodes`);
}

function exportText() { return JSON.stringify(graph, null, 2); }
$('btn-export').addEventListener('click', () => {
  $('export-text').value = exportText();
  $('export-msg').textContent = '';
  $('dlg-export').showModal();
  $('export-text').select();
});
$('btn-copy').addEventListener('click', async () => {
  const area = $('export-text');
  area.select();
  try { await navigator.clipboard.writeText(area.value); $('export-msg').textContent = 'Copied.'; }
  catch (e) { $('export-msg').textContent = document.execCommand('copy') ? 'Copied.' : 'Select the text and copy it.'; }
});
$('btn-download').addEventListener('click', () => {
  const blob = new Blob([exportText() + '\n'], { type: 'application/json' });
  const a = h('a', { href: URL.createObjectURL(blob), download: (designName || 'design') + '.json' });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
});

const THEMES = ['auto', 'light', 'dark'];
function applyTheme(theme) {
  if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
  $('btn-theme').textContent = 'Theme: ' + theme;
}
let theme = params.get('theme') || (() => { try { return localStorage.getItem('vwf-designer-theme'); } catch (e) { return null; } })() || 'auto';
if (!THEMES.includes(theme)) theme = 'auto';
applyTheme(theme);
$('btn-theme').addEventListener('click', () => {
  theme = THEMES[(THEMES.indexOf(theme) + 1) % THEMES.length];
  applyTheme(theme);
  try { localStorage.setItem('vwf-designer-theme', theme); } catch (e) { /* private mode */ }
});

window.addEventListener('resize', () => applyView());
// Closing or leaving the standalone canvas with unsaved edits: the browser asks first. Embedded,
// the host page saves and guards (it knows what it saved).
window.addEventListener('beforeunload', (e) => {
  if (!EMBED && unsaved()) { e.preventDefault(); e.returnValue = ''; }
});

