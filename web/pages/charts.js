// Charts of `GET /stats`, drawn as SVG by hand: bars stacked by status (runs per bucket), plain
// bars (cost per bucket) and a line (p95 duration per bucket), plus the helpers the run
// timeline (timeline.js) draws with. By hand because three simple chart kinds and one timeline
// need no library: nothing to vendor, pin or check, no build step, and every bar, point and label
// is an element in the page's DOM, so tests read the figures a chart was drawn from (each mark
// carries them in data attributes) and screen readers and keyboards reach them.
// Invariants: a chart is drawn at its container's width in CSS pixels (never scaled, so its text
// stays at the 11 px and more style.css gives it) and again when that width changes; colours are
// style.css's status colours; a chart with nothing to show says so instead of drawing axes.

const NS = 'http://www.w3.org/2000/svg';

/** `svg('rect', {x: 1}, child…)`: an SVG element, as `h()` makes HTML ones. */
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** Calls `draw(width)` with `el`'s content width once it is laid out and whenever it changes;
 * returns the function that stops watching. */
export function fitted(el, draw) {
  let width = 0;
  const observer = new ResizeObserver(() => {
    const w = Math.floor(el.clientWidth);
    if (w > 0 && w !== width) {
      width = w;
      draw(w);
    }
  });
  observer.observe(el);
  return () => observer.disconnect();
}

/** Round grid values from 0 to at least `max`, about `count` of them: {top, ticks}. */
export function niceTicks(max, count = 4, { whole = false } = {}) {
  if (!(max > 0)) return { top: 1, ticks: [0, 1] };
  const rough = max / count;
  const power = 10 ** Math.floor(Math.log10(rough));
  let step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= rough);
  if (whole) step = Math.max(1, Math.ceil(step));
  const top = Math.ceil(max / step - 1e-9) * step;
  const ticks = [];
  for (let v = 0; v <= top + step / 2; v += step) ticks.push(Number(v.toPrecision(12)));
  return { top, ticks };
}

/** A duration in milliseconds as people say it: "850 ms", "4.2 s", "12.5 s", "2 min 5 s",
 * "3 h 10 min". */
export function durationText(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 59950) return `${Number((ms / 1000).toFixed(1))} s`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min${seconds % 60 ? ` ${seconds % 60} s` : ''}`;
  const minutes = Math.round(ms / 60000);
  return `${Math.floor(minutes / 60)} h${minutes % 60 ? ` ${minutes % 60} min` : ''}`;
}

/** An amount of money as the stats page shows it: two decimals, or two significant digits for
 * amounts under a cent ("0.0012"). */
export function costText(cost) {
  if (cost === null || cost === undefined) return '—';
  if (cost === 0) return '0';
  if (Math.abs(cost) < 0.01) return String(Number(cost.toPrecision(2)));
  return cost.toFixed(2);
}

/** A bucket's start as its axis label (in UTC, as the server cuts buckets): "3 Dec", or "14:00"
 * for an hour ("3 Dec" at midnight). */
export function bucketLabel(start, bucket) {
  const d = new Date(start);
  if (bucket === 'hour' && d.getUTCHours() !== 0) return `${String(d.getUTCHours()).padStart(2, '0')}:00`;
  return `${d.getUTCDate()} ${d.toLocaleString('en', { month: 'short', timeZone: 'UTC' })}`;
}

/** Whether bucket `i` gets an axis label: labels at least 56 px apart, on round hours of the day
 * (every 3, 6, 12 hours…) or on every n-th day counted back from the last one. */
function labelled(buckets, i, bucket, band) {
  if (bucket === 'hour') {
    const step = [1, 2, 3, 4, 6, 12, 24].find((n) => n * band >= 56) || 24;
    return new Date(buckets[i].start).getUTCHours() % step === 0;
  }
  const step = [1, 2, 3, 7, 14, 28].find((n) => n * band >= 56) || Math.ceil(56 / band);
  return (buckets.length - 1 - i) % step === 0;
}

/** The whole bucket in words, for a mark's title: "3 Dec 2026" or "3 Dec 2026, 14:00–15:00 UTC". */
function bucketTitle(start, bucket) {
  const d = new Date(start);
  const day = `${d.getUTCDate()} ${d.toLocaleString('en', { month: 'short', timeZone: 'UTC' })} ${d.getUTCFullYear()}`;
  if (bucket !== 'hour') return `${day} (UTC)`;
  const hour = d.getUTCHours();
  return `${day}, ${String(hour).padStart(2, '0')}:00–${String((hour + 1) % 24).padStart(2, '0')}:00 UTC`;
}

const PAD = { top: 10, right: 10, bottom: 24, left: 52 };

/** The frame every bucket chart shares: y grid with labels, x labels thinned to fit. Answers
 * the SVG and the geometry ({x(i), band, y(v), plot}). */
function frame(buckets, { width, height, bucket, top, ticks, yText, label }) {
  const plot = { x: PAD.left, y: PAD.top, w: Math.max(40, width - PAD.left - PAD.right), h: Math.max(30, height - PAD.top - PAD.bottom) };
  const band = plot.w / buckets.length;
  const x = (i) => plot.x + i * band;
  const y = (v) => plot.y + plot.h - (v / top) * plot.h;
  const root = svg('svg', { class: 'chart', width, height, role: 'group', 'aria-label': label });
  const grid = svg('g', { class: 'grid', 'aria-hidden': 'true' }, ticks.map((t) => [
    svg('line', { x1: plot.x, x2: plot.x + plot.w, y1: y(t), y2: y(t) }),
    svg('text', { x: plot.x - 6, y: y(t), 'text-anchor': 'end', 'dominant-baseline': 'middle' }, t === 0 ? '0' : yText(t)),
  ]));
  const xLabels = svg('g', { class: 'x-labels', 'aria-hidden': 'true' }, buckets.map((b, i) => (labelled(buckets, i, bucket, band)
    ? svg('text', { x: x(i) + band / 2, y: plot.y + plot.h + 16, 'text-anchor': 'middle' }, bucketLabel(b.start, bucket))
    : null)));
  root.append(grid, xLabels, svg('line', { class: 'baseline', x1: plot.x, x2: plot.x + plot.w, y1: plot.y + plot.h, y2: plot.y + plot.h }));
  return { root, x, y, band, plot };
}

/** Bars per bucket, stacked by `series` ([{key, label, cls}]; one series makes plain bars).
 * `value(bucket, key)` reads a figure. Each bucket is a `g.bucket` with `data-start`, `data-total`
 * and a `rect.seg` per series with `data-series` and `data-value`. */
export function barChart(buckets, { series, value, width, height, bucket, label, yText = String, whole = false, note, empty }) {
  const totals = buckets.map((b) => series.reduce((sum, s) => sum + (value(b, s.key) || 0), 0));
  const blank = empty && !totals.some((t) => t > 0);
  const nice = niceTicks(Math.max(0, ...totals), 4, { whole });
  const { top } = nice;
  const ticks = blank ? [0] : nice.ticks; // no scale for nothing
  const f = frame(buckets, { width, height, bucket, top, ticks, yText, label });
  const barWidth = Math.max(1, Math.min(f.band * 0.72, 48));
  buckets.forEach((b, i) => {
    let base = 0;
    const segs = series.map((s) => {
      const v = value(b, s.key) || 0;
      const rect = svg('rect', { class: `seg ${s.cls}`, 'data-series': s.key, 'data-value': v,
        x: f.x(i) + (f.band - barWidth) / 2, width: barWidth, y: f.y(base + v), height: f.y(base) - f.y(base + v) });
      base += v;
      return rect;
    });
    const words = series.map((s) => `${s.label} ${yText(value(b, s.key) || 0)}`).join(', ');
    const extra = note ? note(b) : '';
    f.root.append(svg('g', { class: 'bucket', 'data-start': b.start, 'data-total': totals[i], tabindex: 0,
      role: 'img', 'aria-label': `${bucketTitle(b.start, bucket)}: ${words}${extra ? `; ${extra}` : ''}` },
    svg('title', {}, `${bucketTitle(b.start, bucket)}\n${words}${extra ? `\n${extra}` : ''}`),
    // The whole band answers hover, not only the bar (which may be 0 px high).
    svg('rect', { class: 'hit', x: f.x(i), width: f.band, y: f.plot.y, height: f.plot.h }),
    segs));
  });
  if (blank) {
    f.root.append(svg('text', { class: 'empty', x: f.plot.x + f.plot.w / 2, y: f.plot.y + f.plot.h / 2, 'text-anchor': 'middle' }, empty));
  }
  return f.root;
}

/** A line through one figure per bucket (`value(bucket)`, null where a bucket has none: the line
 * breaks there). Each bucket with a value is a `circle.point` with `data-start` and `data-value`. */
export function lineChart(buckets, { value, width, height, bucket, label, yText = String, cls = '' }) {
  const values = buckets.map((b) => value(b));
  const { top, ticks } = niceTicks(Math.max(0, ...values.filter((v) => v !== null && v !== undefined)), 4);
  const f = frame(buckets, { width, height, bucket, top, ticks, yText, label });
  const at = (i) => f.x(i) + f.band / 2;
  let d = '';
  values.forEach((v, i) => {
    if (v === null || v === undefined) return;
    const joined = i > 0 && values[i - 1] !== null && values[i - 1] !== undefined;
    d += `${joined ? 'L' : 'M'}${at(i).toFixed(1)},${f.y(v).toFixed(1)}`;
  });
  f.root.append(svg('path', { class: `line ${cls}`, d }));
  values.forEach((v, i) => {
    if (v === null || v === undefined) return;
    const words = `${bucketTitle(buckets[i].start, bucket)}: ${yText(v)}`;
    f.root.append(svg('g', { class: 'bucket', 'data-start': buckets[i].start, tabindex: 0, role: 'img', 'aria-label': words },
      svg('title', {}, words),
      svg('rect', { class: 'hit', x: f.x(i), width: f.band, y: f.plot.y, height: f.plot.h }),
      svg('circle', { class: `point ${cls}`, 'data-start': buckets[i].start, 'data-value': v, cx: at(i), cy: f.y(v), r: 3.5 })));
  });
  return f.root;
}
