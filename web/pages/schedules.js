// Schedules (#/schedules, #/schedules?design=<name>): the schedule jobs, and a form that creates
// or updates a design's job. The human line is previewed as you type by asking the server
// (POST /schedules/preview, which saves nothing): presets, cron checks and zones are its rules.
// Fire times are shown on the job's own wall clock, and on the viewer's when that differs.
// The presets, which inputs each takes and the day names are the model's (GET /schema).
import { api, h, enc, badge, ago, say, inZone, sameClock, viewerZone } from '../app.js';

export async function render(root, page) {
  const msg = h('div', { class: 'notice', hidden: true });
  const list = h('tbody');
  const [listed, model] = await Promise.all([api('GET', '/designs'), api('GET', '/schema')]);
  if (!page.alive) return;
  const designs = listed.body.designs || [];
  if (model.status !== 200) say(msg, 'error', `Cannot read the presets: ${model.body.error || `HTTP ${model.status}`}`);
  const presets = model.body.schedule_presets || [];
  const PRESETS = presets.map((p) => p.preset);
  // Which inputs each preset takes (layout only; the server judges the values).
  const FIELDS = Object.fromEntries(presets.map((p) => [p.preset, p.fields]));
  const object = (model.body.trigger_modes || []).find((m) => m.mode === 'schedule')?.fields.find((f) => f.name === 'schedule');
  const dow = object?.fields.find((f) => f.name === 'dow') || { labels: [], min: 0, default: 0 };

  const f = {
    design: h('select', { name: 'design', 'aria-label': 'Design' }, designs.map((d) => h('option', { value: d }, d))),
    preset: h('select', { name: 'preset', 'aria-label': 'Preset' }, PRESETS.map((p) => h('option', { value: p }, p))),
    time: h('input', { name: 'time', placeholder: '09:00', size: 6, 'aria-label': 'Time (HH:MM)' }),
    minute: h('input', { name: 'minute', placeholder: '0', size: 3, inputmode: 'numeric', 'aria-label': 'Minute' }),
    dow: h('select', { name: 'dow', 'aria-label': 'Day of the week' }, dow.labels.map((d, i) => h('option', { value: dow.min + i }, d))),
    cron: h('input', { name: 'cron', placeholder: '*/15 * * * *', size: 16, 'aria-label': 'Cron expression' }),
    tz: h('input', { name: 'tz', placeholder: 'UTC', size: 16, list: 'zones', 'aria-label': 'Time zone' }),
    paused: h('input', { name: 'paused', type: 'checkbox' }),
    input: h('textarea', { name: 'input', rows: 2, cols: 40, placeholder: '{"city": "Oslo"}', 'aria-label': 'Run input (JSON)' }),
  };
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const preview = h('output', { id: 'preview', 'aria-live': 'polite' });
  const labels = {};
  const field = (key, text) => (labels[key] = h('label', { 'data-field': key }, text, ' ', f[key]));
  const form = h('form', { id: 'schedule-form', class: 'card wide', onsubmit: (e) => { e.preventDefault(); save(); } },
    h('h2', {}, 'Schedule a design'),
    designs.length === 0 ? h('p', { class: 'muted' }, 'Save a design first: ', h('a', { href: '#/designs' }, 'Designs'), '.') : null,
    h('div', { class: 'fields' }, field('design', 'Design'), field('preset', 'Preset'), field('time', 'Time'), field('minute', 'Minute'),
      field('dow', 'Day'), field('cron', 'Cron'), field('tz', 'Time zone'),
      h('datalist', { id: 'zones' }, ['UTC', zone].filter((z, i, all) => z && all.indexOf(z) === i).map((z) => h('option', { value: z })))),
    h('p', {}, h('label', { 'data-field': 'input' }, 'Run input (JSON, optional) ', f.input)),
    h('p', {}, h('label', {}, f.paused, ' start paused')),
    h('p', { class: 'preview' }, 'Runs: ', preview),
    h('button', { type: 'submit', class: 'primary', disabled: designs.length === 0 }, 'Save schedule'));

  /** The run input of the form: null when empty (no input); throws when it is not JSON. */
  function runInput() {
    const text = f.input.value.trim();
    if (text === '') return null;
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new Error(`The run input is not JSON: ${e.message}`);
    }
  }

  /** The schedule object of the form: the preset and the inputs it shows, as typed. */
  function schedule() {
    const body = { preset: f.preset.value };
    for (const key of FIELDS[f.preset.value] || []) {
      const v = f[key].value.trim();
      if (v !== '') body[key] = key === 'minute' || key === 'dow' ? (/^\d+$/.test(v) ? Number(v) : v) : v;
    }
    if (f.tz.value.trim()) body.tz = f.tz.value.trim();
    return body;
  }

  let asked = 0;
  async function updatePreview() {
    for (const key of ['time', 'minute', 'dow', 'cron']) labels[key].hidden = !(FIELDS[f.preset.value] || []).includes(key);
    const mine = ++asked;
    const r = await api('POST', '/schedules/preview', schedule());
    if (mine !== asked || !page.alive) return; // a newer keystroke asked since
    if (r.body.ok) {
      preview.className = 'ok';
      preview.replaceChildren(h('b', {}, r.body.human), h('span', { class: 'muted small' },
        ` · cron ${r.body.cron} · ${r.body.tz}${r.body.next_run_at ? ` · next ${fireTime(r.body.next_run_at, r.body.tz)}` : ''}`));
    } else {
      preview.className = 'error';
      preview.replaceChildren(r.body.error || `HTTP ${r.status}`);
    }
  }
  form.addEventListener('input', updatePreview);
  form.addEventListener('change', updatePreview);

  async function save() {
    const body = schedule();
    if (f.paused.checked) body.paused = true;
    try {
      body.input = runInput();
    } catch (e) {
      return say(msg, 'error', e.message);
    }
    const r = await api('POST', `/designs/${enc(f.design.value)}/schedule`, body);
    if (r.body.ok) {
      say(msg, 'ok', `Scheduled ${r.body.job.design}: ${r.body.job.human} (${r.body.job.tz})${r.body.job.paused ? ', paused' : ''}.`);
      await load();
    } else {
      say(msg, 'error', `Not saved: ${r.body.error}`);
    }
  }

  function edit(job) {
    const s = job.schedule || {};
    f.design.value = job.design;
    f.preset.value = s.preset || 'custom';
    f.time.value = s.time || '';
    f.minute.value = s.minute ?? '';
    f.dow.value = String(s.dow ?? dow.default);
    f.cron.value = s.cron || (s.preset ? '' : job.cron);
    f.tz.value = s.tz || '';
    f.paused.checked = job.paused;
    f.input.value = job.input === undefined ? '' : JSON.stringify(job.input, null, 2);
    updatePreview();
    form.scrollIntoView({ block: 'nearest' });
  }

  async function action(job, what, button) {
    button.disabled = true;
    const r = await api('POST', `/schedules/${enc(job.job_id)}/${what}`);
    if (!page.alive) return;
    if (what === 'run' && r.body.run_id) {
      say(msg, r.body.status === 'failed' ? 'error' : 'ok', `Started run `, h('a', { href: `#/runs/${enc(r.body.run_id)}` }, r.body.run_id),
        ` of ${job.design}: ${r.body.status.replace(/_/g, ' ')}.`);
    } else if (r.body.ok) {
      say(msg, 'ok', what === 'remove' ? `Removed the schedule of ${job.design}.` : `${what === 'pause' ? 'Paused' : 'Resumed'} ${job.design}.`);
    } else {
      say(msg, 'error', r.body.error || `HTTP ${r.status}`);
    }
    await load();
  }

  function row(job) {
    if (!job.design) return h('tr', { 'data-job': job.job_id }, h('td', {}, job.job_id), h('td', { colspan: 6, class: 'error' }, job.error));
    const toggle = job.paused ? 'resume' : 'pause';
    const remove = h('button', { class: 'danger', onclick: (e) => {
      if (remove.dataset.armed) return action(job, 'remove', e.target);
      remove.dataset.armed = '1';
      remove.textContent = 'Confirm remove';
    } }, 'Remove');
    return h('tr', { 'data-job': job.job_id, 'data-state': job.paused ? 'paused' : 'active' },
      h('td', {}, h('a', { href: `#/designer/${enc(job.design)}` }, job.design)),
      h('td', {}, h('span', { class: 'human' }, job.human), h('div', { class: 'muted small' }, h('code', {}, job.cron))),
      h('td', {}, job.tz),
      h('td', { class: 'next', title: job.next_run_at || '' }, job.next_run_at ? [fireTime(job.next_run_at, job.tz), ` (${ago(job.next_run_at)})`] : '—'),
      h('td', { class: 'last', title: job.last_run_at || '' }, job.last_run_at ? [fireTime(job.last_run_at, job.tz), ` (${ago(job.last_run_at)})`] : '—'),
      h('td', {}, badge(job.paused ? 'paused' : 'active'), job.paused_reason ? h('div', { class: 'muted small reason' }, job.paused_reason) : null),
      h('td', { class: 'actions' },
        h('button', { 'data-action': toggle, onclick: (e) => action(job, toggle, e.target) }, toggle === 'pause' ? 'Pause' : 'Resume'), ' ',
        h('button', { 'data-action': 'run', onclick: (e) => action(job, 'run', e.target) }, 'Run now'), ' ',
        h('button', { 'data-action': 'edit', onclick: () => edit(job) }, 'Edit'), ' ', remove));
  }

  async function load() {
    const r = await api('GET', '/schedules');
    if (!page.alive) return;
    if (!r.body.ok) return list.replaceChildren(h('tr', {}, h('td', { colspan: 7, class: 'error' }, r.body.error)));
    list.replaceChildren(...r.body.schedules.map(row));
    if (!r.body.schedules.length) list.append(h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'No schedules yet.')));
    const jobs = r.body.schedules;
    return jobs;
  }

  // The form's defaults are set before anything is awaited, and the design's job fills it in only
  // while nobody has touched it: what a person typed meanwhile is never overwritten.
  const wanted = page.query.get('design');
  if (wanted && designs.includes(wanted)) f.design.value = wanted;
  f.preset.value = 'daily';
  f.time.value = '09:00';
  let touched = false;
  for (const event of ['input', 'change']) form.addEventListener(event, () => { touched = true; });
  root.append(h('div', { class: 'title' }, h('h1', {}, 'Schedules')), msg,
    h('table', { id: 'schedules', class: 'list' },
      h('thead', {}, h('tr', {}, ['Design', 'Schedule', 'Time zone', 'Next run', 'Last run', 'State', ''].map((c) => h('th', {}, c)))),
      list),
    form);
  updatePreview();

  const jobs = (await load()) || [];
  const existing = jobs.find((j) => j.design === wanted);
  if (existing && !touched && page.alive) edit(existing);
}

/** A fire time on the job's wall clock, then the viewer's when it reads differently. */
function fireTime(ts, tz) {
  if (sameClock(ts, tz)) return h('span', { class: 'zoned' }, inZone(ts, tz));
  return h('span', { class: 'zoned' }, inZone(ts, tz), h('span', { class: 'muted small viewer' }, ` · yours: ${inZone(ts, viewerZone)}`));
}
