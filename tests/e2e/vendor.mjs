// The copy of @dagrejs/dagre inlined into web/designer.html, so the canvas stays one file that
// works opened from disk with no network. The block is made from the npm package's minified
// build at the version pinned in package.json (its licence first, its source-map comments left
// out) and sits between two marker comments; `scripts/vendor-dagre` writes it and
// vendor.test.mjs checks that the file holds exactly this block.
import { readFileSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
export const DESIGNER = join(HERE, '..', '..', 'web', 'designer.html');
const DIST = join(HERE, 'node_modules', '@dagrejs', 'dagre');
export const BEGIN = '<!-- vendored: @dagrejs/dagre (begin) -->';
export const END = '<!-- vendored: @dagrejs/dagre (end) -->';

/** The version package.json pins (an exact version, so the copy is reproducible). */
export function pinned() {
  const pkg = JSON.parse(readFileSync(join(HERE, 'package.json'), 'utf8'));
  return pkg.devDependencies['@dagrejs/dagre'];
}

/** The block the designer must hold, made from the installed package. */
export function dagreBlock() {
  const pkg = JSON.parse(readFileSync(join(DIST, 'package.json'), 'utf8'));
  if (pkg.version !== pinned()) throw new Error(`installed @dagrejs/dagre ${pkg.version}, pinned ${pinned()}: run npm ci in tests/e2e`);
  const min = readFileSync(join(DIST, 'dist', 'dagre.min.js'), 'utf8');
  const legal = readFileSync(join(DIST, 'dist', 'dagre.min.js.LEGAL.txt'), 'utf8').trim();
  const code = min.split('\n').filter((l) => !l.startsWith('//# sourceMappingURL=') && !l.startsWith('/*! For license information')).join('\n').trim();
  if (/<\/script|<!--/i.test(code)) throw new Error('the minified build holds text that would end the script element');
  return [
    BEGIN,
    `<!-- @dagrejs/dagre ${pkg.version} (${pkg.license}), the layered layout behind Tidy and the layout of`,
    '     designs without positions: its dist/dagre.min.js, written by scripts/vendor-dagre. Do not edit. -->',
    `<script id="vendor-dagre" data-package="@dagrejs/dagre" data-version="${pkg.version}">`,
    `/*! @dagrejs/dagre ${pkg.version} | ${pkg.license} licence:`,
    legal.replace(/^\/\*\s*/, '').replace(/\s*\*\/$/, ''),
    '*/',
    code,
    '</script>',
    END,
  ].join('\n');
}

/** The block the designer holds now (null when the markers are missing). */
export function currentBlock(html = readFileSync(DESIGNER, 'utf8')) {
  const a = html.indexOf(BEGIN), b = html.indexOf(END);
  return a < 0 || b < a ? null : html.slice(a, b + END.length);
}

/** Rewrites the block in web/designer.html from the installed package. */
export function writeBlock() {
  const html = readFileSync(DESIGNER, 'utf8');
  const cur = currentBlock(html);
  if (cur === null) throw new Error(`${DESIGNER} has no ${BEGIN} … ${END} markers`);
  writeFileSync(DESIGNER, html.replace(cur, () => dagreBlock()));
}

if (import.meta.url === pathToFileURL(process.argv[1] || '').href) {
  writeBlock();
  console.log(`web/designer.html: @dagrejs/dagre ${pinned()} inlined`);
}
