// The layout library inlined in web/designer.html is exactly the npm package's minified build at
// the pinned version (see vendor.mjs), so the file can be checked against its source.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dagreBlock, currentBlock, pinned } from './vendor.mjs';

test('the inlined @dagrejs/dagre is the npm package\'s dist/dagre.min.js at the pinned version', () => {
  const held = currentBlock();
  assert.ok(held, 'designer.html marks the inlined block');
  assert.match(held, new RegExp(`data-version="${pinned().replace(/\./g, '\\.')}"`));
  assert.ok(held === dagreBlock(), 'the inlined copy differs from the package: run scripts/vendor-dagre');
});
