// SPDX-License-Identifier: MIT
// The package's code names are include/dsb/codes.def's: src/codes.ts regenerated must match.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generate } from '../scripts/gen-codes.mjs';
import { CODES } from '../dist/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = process.env.DSB_SOURCE_ROOT ?? join(here, '../../..');

test('src/codes.ts is what codes.def generates', () => {
  const def = readFileSync(join(root, 'include/dsb/codes.def'), 'utf8');
  const names = [...def.matchAll(/^DSB_CODE\(\w+, "(\w+)"/gm)].map((m) => m[1]);
  assert.ok(names.length > 20);
  assert.deepEqual(Object.keys(CODES), names);
  assert.equal(readFileSync(join(here, '../src/codes.ts'), 'utf8'), generate(def),
    'run: node scripts/gen-codes.mjs');
});
