// A line diff of two texts, for the version diff on the design page (versions.js): the longest
// common subsequence of their lines, after taking off the lines both share at the start and at
// the end (so an edit to a long prompt costs little). Past MAX_LINES changed lines on a side, the
// two are given whole, old then new: a huge text never freezes the page.

/** The most lines on either side (after the shared start and end) compared line by line. */
const MAX_LINES = 2000;

/** Old `a` to new `b` (arrays of lines): `{lines: [{op: 'same' | 'removed' | 'added', text}],
 * whole}`, `whole` when the changed middle was too long to compare and is given as two blocks. */
export function lineDiff(a, b) {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let end = 0;
  while (end < a.length - start && end < b.length - start && a[a.length - 1 - end] === b[b.length - 1 - end]) end++;
  const same = (lines) => lines.map((text) => ({ op: 'same', text }));
  const oldMiddle = a.slice(start, a.length - end);
  const newMiddle = b.slice(start, b.length - end);
  const whole = oldMiddle.length > MAX_LINES || newMiddle.length > MAX_LINES;
  const middle = whole ? blocks(oldMiddle, newMiddle) : lcs(oldMiddle, newMiddle);
  return { lines: [...same(a.slice(0, start)), ...middle, ...same(a.slice(a.length - end))], whole };
}

/** All of `a` removed, then all of `b` added. */
function blocks(a, b) {
  return [...a.map((text) => ({ op: 'removed', text })), ...b.map((text) => ({ op: 'added', text }))];
}

/** The line diff by the longest common subsequence: `len[i][j]` is the length of the one of
 * `a[i..]` and `b[j..]` (at most MAX_LINES² cells of 16 bits), then one walk from the start. */
function lcs(a, b) {
  const n = a.length, m = b.length, w = m + 1;
  const len = new Uint16Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      len[i * w + j] = a[i] === b[j] ? len[(i + 1) * w + j + 1] + 1 : Math.max(len[(i + 1) * w + j], len[i * w + j + 1]);
    }
  }
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) { out.push({ op: 'same', text: a[i] }); i++; j++; }
    else if (len[(i + 1) * w + j] >= len[i * w + j + 1]) out.push({ op: 'removed', text: a[i++] });
    else out.push({ op: 'added', text: b[j++] });
  }
  while (i < n) out.push({ op: 'removed', text: a[i++] });
  while (j < m) out.push({ op: 'added', text: b[j++] });
  return out;
}
