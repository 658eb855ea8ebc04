// SPDX-License-Identifier: MIT
// The package's code names are include/dsb/codes.def's: src/codes.ts regenerated must match.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generate } from '../scripts/gen-codes.mjs';
import { CODES, classify } from '../dist/index.js';

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

test('classify reads a code back from DSH\'s texts', () => {
  const cases = [
    ['Error: invalid arguments: command must be a string', 'INVALID_ARGS'],
    ['Error: the user rejected escalating this command to "workspace-write"', 'ESCALATION_REFUSED'],
    ['[sandbox: file access denied under read-only mode]', 'FS_SANDBOX_DENIED'],
    ['cannot read "/x": not found', 'FS_NOT_FOUND'],
    ['edit requires reading "/x" first — read the file, then retry', 'FS_NOT_OBSERVED'],
    ['old_string was not found in "/x"', 'FS_EDIT_NOT_FOUND'],
    ['something else entirely', 'IO'],
  ];
  for (const [text, code] of cases) assert.equal(classify(text), code, text);
});
