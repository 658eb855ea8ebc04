// SPDX-License-Identifier: MIT
// The npm package's call against a plain spawn, paired in one run: sb.run(["true"]) over a
// warm server against child_process.spawnSync("true"), alternating which goes first, each
// after BENCH_PAUSE_MS of quiet (as an agent's calls come between model turns; bench/server.sh
// does the same). Prints the medians and their ratio. Usage: node bindings-node.mjs PKG WS ROUNDS
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';

const [pkg, workspace, rounds = '201'] = process.argv.slice(2);
const { Sandbox } = await import(`${pkg}/dist/index.js`);
const pause = Number(process.env.BENCH_PAUSE_MS ?? 20);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const sb = await Sandbox.open({ mode: process.env.BENCH_MODE ?? 'workspace-write', workspace });
const client = async () => {
  const t = performance.now();
  const r = await sb.run(['true']);
  if (r.exitCode !== 0) throw new Error(`true exited ${r.exitCode}: ${r.text}`);
  return performance.now() - t;
};
const spawn = async () => {
  const t = performance.now();
  const r = spawnSync('true');
  if (r.status !== 0) throw new Error(`true exited ${r.status}`);
  return performance.now() - t;
};
for (let i = 0; i < 5; i++) await client(); // the server's warm monitors, the JIT
const a = [], b = [], ratios = [];
for (let i = 0; i < Number(rounds); i++) {
  let x, y;
  await sleep(pause);
  if (i % 2) x = await client();
  else y = await spawn();
  await sleep(pause);
  if (i % 2) y = await spawn();
  else x = await client();
  a.push(x);
  b.push(y);
  ratios.push(x / y);
}
await sb.close();
const f = (ms) => `${ms.toFixed(2)} ms`;
console.log(`sb.run(["true"]) over a warm server: median ${f(median(a))}`);
console.log(`spawnSync("true"):                   median ${f(median(b))}`);
console.log(`ratio of the medians: ${(median(a) / median(b)).toFixed(2)}x; median of the paired ratios: ${median(ratios).toFixed(2)}x (${rounds} pairs)`);
