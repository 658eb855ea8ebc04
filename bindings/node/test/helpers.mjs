// SPDX-License-Identifier: MIT
// What the tests share: a fresh directory with its own session store, and a look at /proc.
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';

if (!process.env.DSH_SANDBOX) throw new Error('DSH_SANDBOX must name the dsh-sandbox binary');

// Nothing of the caller's may decide a policy under test.
for (const name of ['DSH_PERMISSION_MODE', 'DSH_SANDBOX_CONFIG', 'XDG_STATE_HOME'])
  delete process.env[name];

/**
 * A directory with a workspace `ws` and a store of its own; removed by the returned function.
 * In /var/tmp: a session's /tmp is a private one of its own, and `fs read` in a read-only session
 * does not see a workspace under the real /tmp (reported; t-serve.sh works in /var/tmp too).
 */
export function scratch() {
  const dir = realpathSync(mkdtempSync('/var/tmp/dsb-node.'));
  const ws = join(dir, 'ws');
  mkdirSync(ws);
  process.env.DSH_SANDBOX_STORE = join(dir, 'store');
  process.env.XDG_CONFIG_HOME = join(dir, 'no-xdg-config');
  return { dir, ws, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The pids whose command line contains @marker. */
export function processesWith(marker) {
  const found = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker)) found.push(Number(pid));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Polls @check every 50 ms until it holds or @ms pass; its last value. */
export async function waitFor(check, ms) {
  const end = Date.now() + ms;
  for (;;) {
    const v = check();
    if (v || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}
