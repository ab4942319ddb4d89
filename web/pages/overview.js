// Overview (#/overview, #/overview?period=48h): what the runs that ended lately did, as
// `GET /stats` counts it: the last 14 days by day (or the last 48 hours by hour), runs per bucket
// stacked by status, cost per bucket, p95 duration per bucket, the totals, and the slowest and
// costliest steps. A design page shows the same charts for its design alone (`statsSection`).
// Every figure is the server's; the page only draws and formats them (charts.js).
import { api, h, enc, navigate, when } from '../app.js';
import { barChart, lineChart, fitted, durationText, costText } from './charts.js';

/** The periods the switch offers: how far back, and the width of a bucket. */
const PERIODS = {
  '14d': { label: 'Last 14 days, by day', bucket: 'day', from: () => dayAgo(13) },
  '48h': { label: 'Last 48 hours, by hour', bucket: 'hour', from: () => hourAgo(47) },
};

/** The UTC day `n` days before today, `YYYY-MM-DD` (the server starts the period there). */
function dayAgo(n) {
  return new Date(Date.now() - n * 86400000).toISOString().slice(0, 10);
}

/** The start of the UTC hour `n` hours before this one. */
function hourAgo(n) {
  return `${new Date(Date.now() - n * 3600000).toISOString().slice(0, 13)}:00:00Z`;
}

/** The `GET /stats` query of a period, for one design or all. */
export function statsQuery(period, design) {
  const p = PERIODS[period] || PERIODS['14d'];
  const q = new URLSearchParams({ bucket: p.bucket, from: p.from() });
  if (design) q.set('design', design);
  return `/stats?${q}`;
}

export async function render(root, page) {
  const period = PERIODS[page.query.get('period')] ? page.query.get('period') : '14d';
  const view = statsView(page, { period, onPeriod: (p) => navigate(p === '14d' ? '#/overview' : `#/overview?period=${p}`) });
  root.append(h('div', { class: 'title' }, h('h1', {}, 'Overview'), view.switcher), view.section);
  await view.load();
}

/** The design page's section: the same charts, smaller, for design `name`. */
export function statsSection(name, page) {
  const view = statsView(page, { design: name, small: true });
  const section = h('section', { id: 'design-stats' },
    h('div', { class: 'title' }, h('h2', {}, 'How its runs went'), view.switcher,
      h('a', { class: 'small', href: '#/overview' }, 'All designs »')),
    view.section);
  view.load();
  return section;
}

/** A period switch and the figures of that period: `load()` asks the server and draws. With
 * `onPeriod` the switch hands the choice on (the overview keeps it in its address); without it
 * the view loads the other period in place. */
function statsView(page, { design = null, period = '14d', small = false, onPeriod = null }) {
  const section = h('div', { class: `stats${small ? ' small' : ''}`, 'data-period': period, 'aria-busy': 'true' });
  const buttons = Object.entries(PERIODS).map(([key, p]) => h('button', {
    'data-period': key, 'aria-pressed': String(key === period),
    onclick: () => (onPeriod ? onPeriod(key) : choose(key)),
  }, p.label));
  const switcher = h('div', { class: 'toolbar period', role: 'group', 'aria-label': 'Period' }, buttons);
  let stop = null;
  let asked = 0; // the newest load: an older answer arriving late is not drawn
  page.onLeave(() => stop && stop());

  function choose(key) {
    period = key;
    buttons.forEach((b) => b.setAttribute('aria-pressed', String(b.dataset.period === key)));
    load();
  }

  async function load() {
    const mine = ++asked;
    section.setAttribute('aria-busy', 'true');
    const r = await api('GET', statsQuery(period, design));
    if (!page.alive || mine !== asked) return;
    if (stop) stop();
    stop = null;
    section.dataset.period = period;
    if (!r.body.ok) {
      section.replaceChildren(h('p', { class: 'notice error' }, `Cannot read the figures: ${r.body.error || `HTTP ${r.status}`}`));
    } else {
      stop = show(section, r.body, { small });
    }
    // Said last: the figures on screen are the server's answer for this period.
    section.dataset.to = r.body.to || '';
    section.setAttribute('aria-busy', 'false');
  }

  return { section, switcher, load };
}

/** Draws a report into `el`; answers the function that stops redrawing it on resize. */
function show(el, report, { small }) {
  const totals = report.totals;
  const period = h('p', { class: 'muted small period-note' },
    `${when(report.from)} to ${when(report.to)}; buckets of a UTC ${report.bucket}. Runs count once they end, test runs not at all.`);
  if (!totals.runs) {
    el.replaceChildren(h('p', { class: 'notice info empty', id: small ? null : 'no-runs' }, 'No runs ended in this period.'), period);
    return null;
  }
  const charts = h('div', { class: 'charts' });
  const stops = chartCards(report, small).map(([card, draw]) => {
    charts.append(card);
    return fitted(card.querySelector('.plot'), draw);
  });
  el.replaceChildren(totalsLine(totals, report.currency), charts, period);
  if (!small) {
    el.append(stepTable('Slowest steps', 'slowest-steps', report.slowest_steps, report.currency, 'No step ran in this period.'),
      stepTable('Costliest steps', 'costliest-steps', report.costliest_steps, report.currency, 'No step cost anything in this period.'));
  }
  return () => stops.forEach((s) => s());
}

/** The three charts, each a card and the function that draws it at a width. */
function chartCards(report, small) {
  const { buckets, bucket, currency } = report;
  const height = small ? 150 : 220;
  const card = (id, title, draw) => {
    const plot = h('div', { class: 'plot' });
    return [h('figure', { class: 'card chart-card', id }, h('figcaption', {}, title), plot),
      (width) => plot.replaceChildren(draw(width))];
  };
  const money = currency ? ` (${currency})` : '';
  return [
    card('chart-runs', 'Runs by status', (width) => barChart(buckets, {
      width, height, bucket, whole: true, label: 'Runs per bucket, stacked by status',
      series: [{ key: 'done', label: 'done', cls: 's-done' }, { key: 'failed', label: 'failed', cls: 's-failed' }],
      value: (b, key) => b.by_status[key] || 0,
    })),
    card('chart-cost', `Cost${money}`, (width) => barChart(buckets, {
      width, height, bucket, label: `Cost per bucket${money}`, yText: costText,
      series: [{ key: 'cost', label: `cost${money}`, cls: 's-cost' }],
      value: (b) => b.cost,
      empty: totalsUnpriced(report) ? 'No priced model call: see unpriced runs' : 'No cost recorded',
      note: (b) => (b.unpriced_runs ? `${b.unpriced_runs} run${b.unpriced_runs === 1 ? '' : 's'} used a model with no price (not in this cost)` : ''),
    })),
    card('chart-p95', 'p95 duration', (width) => lineChart(buckets, {
      width, height, bucket, label: 'p95 run duration per bucket', yText: durationText, cls: 's-running',
      value: (b) => b.p95_ms,
    })),
  ];
}

/** Whether some run of the report used a model with no price. */
function totalsUnpriced(report) {
  return report.totals.unpriced_runs > 0;
}

/** The period's totals, one figure each: `data-figure` names it, `data-value` is the server's. */
export function totalsLine(t, currency) {
  const figure = (name, label, value, text, title) => h('span', { class: 'figure', 'data-figure': name, 'data-value': JSON.stringify(value), title },
    h('span', { class: 'muted' }, `${label} `), h('b', {}, text));
  const u = t.usage || {};
  return h('p', { class: 'totals', id: 'totals' },
    figure('runs', 'Runs', t.runs, String(t.runs)),
    figure('done', 'done', t.by_status.done || 0, String(t.by_status.done || 0)),
    figure('failed', 'failed', t.by_status.failed || 0, String(t.by_status.failed || 0)),
    figure('failure_rate', 'failure rate', t.failure_rate, percent(t.failure_rate)),
    figure('p50_ms', 'p50', t.p50_ms, durationText(t.p50_ms)),
    figure('p95_ms', 'p95', t.p95_ms, durationText(t.p95_ms)),
    figure('tokens', 'tokens', u, `${count(u.input_tokens)} in · ${count(u.output_tokens)} out · ${count(u.cached_tokens)} cached`),
    figure('cost', 'cost', t.cost, `${costText(t.cost)}${currency ? ` ${currency}` : ''}`),
    figure('unpriced_runs', 'unpriced runs', t.unpriced_runs, String(t.unpriced_runs),
      'Runs that used a model with no price in [prices]: their cost is not in the cost'));
}

/** A rate as a percentage with one decimal ("12.5%"), or "—". */
export function percent(rate) {
  return rate === null || rate === undefined ? '—' : `${(rate * 100).toFixed(1)}%`;
}

/** A whole number with thousands separated by commas. */
function count(n) {
  return (n || 0).toLocaleString('en');
}

/** The slowest or costliest steps: design (linked), node, runs, times, durations, tokens, cost. */
function stepTable(title, id, steps, currency, empty) {
  const rows = steps.map((s) => h('tr', { 'data-design': s.design, 'data-node': s.node },
    h('td', {}, h('a', { href: `#/designer/${enc(s.design)}` }, s.design)),
    h('td', {}, h('code', {}, s.node)),
    h('td', { class: 'num' }, String(s.runs)),
    h('td', { class: 'num' }, String(s.count)),
    h('td', { class: 'num', 'data-ms': s.mean_ms }, durationText(s.mean_ms)),
    h('td', { class: 'num', 'data-ms': s.max_ms }, durationText(s.max_ms)),
    h('td', { class: 'num', 'data-ms': s.total_ms }, durationText(s.total_ms)),
    h('td', { class: 'num' }, count(s.usage.input_tokens + s.usage.output_tokens)),
    h('td', { class: 'num', 'data-cost': s.cost }, costText(s.cost))));
  if (!rows.length) rows.push(h('tr', {}, h('td', { colspan: 9, class: 'muted' }, empty)));
  return h('section', { id },
    h('h2', {}, title),
    h('table', { class: 'list' },
      h('thead', {}, h('tr', {}, ['Design', 'Step', 'Runs', 'Times', 'Mean', 'Longest', 'Total', 'Tokens', `Cost${currency ? ` (${currency})` : ''}`]
        .map((c, i) => h('th', { class: i > 1 ? 'num' : null }, c)))),
      h('tbody', {}, rows)));
}
