// SPDX-License-Identifier: MIT
// A node --test reporter of one line per test (suites left out): `ok - NAME` or `not ok - NAME`
// followed by its failure as `# ` lines. tests/e2e/t-node.sh numbers them into its own TAP, as
// meson's TAP parser does not read node's nested subtests.
export default async function* flat(source) {
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { name, details } = event.data;
    if (details?.type === 'suite') continue;
    if (event.type === 'test:pass') {
      yield `ok - ${name}\n`;
    } else {
      const err = details?.error;
      const why = String(err?.cause?.stack ?? err?.cause ?? err?.stack ?? err);
      yield `not ok - ${name}\n${why.split('\n').map((l) => `# ${l}`).join('\n')}\n`;
    }
  }
}
