// SPDX-License-Identifier: MIT
// The official MCP TypeScript SDK, v2, as a 2026-07-28 client of `dsh-sandbox serve`: no
// initialize, every request carrying its own _meta, approvals as input_required results that
// the SDK answers through its elicitation handler and retries. It lists the tools, runs a
// command, gets a denial, has an escalation approved, and reads a background job.
// Usage: node client-2026.mjs [--server PATH] WORKSPACE
import { existsSync, realpathSync, unlinkSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const args = process.argv.slice(2);
let server = 'dsh-sandbox';
if (args[0] === '--server') {
  server = args[1];
  args.splice(0, 2);
}
if (args.length !== 1) {
  console.error('usage: client-2026.mjs [--server PATH] WORKSPACE');
  process.exit(2);
}
const workspace = realpathSync(args[0]);

const client = new Client(
  { name: 'dsh-sandbox-node-2026-example', version: '1.0.0' },
  {
    // 2026-07-28 or nothing: a server that only speaks 2025 fails the connect.
    versionNegotiation: { mode: { pin: '2026-07-28' } },
    capabilities: { elicitation: { form: {} } },
  },
);
// The human's part: this example allows the escalation once, after showing it.
let asked = 0;
client.setRequestHandler('elicitation/create', async (request) => {
  asked++;
  console.log('  approval asked:', request.params.message.split('\n')[0]);
  const field = Object.keys(request.params.requestedSchema.properties)[0];
  return { action: 'accept', content: { [field]: 'allow' } };
});

// The SDK passes the server only HOME, PATH and a few more unless told: hand it this process's
// environment, so DSH_SANDBOX_STORE, DSH_PERMISSION_MODE and DSH_SANDBOX_CONFIG reach it.
const transport = new StdioClientTransport({
  command: server,
  args: ['serve', '--cwd', workspace],
  cwd: workspace,
  env: process.env,
});
await client.connect(transport);

let steps = 0;
let failed = 0;
function step(name, ok, detail = '') {
  steps++;
  if (!ok) failed++;
  console.log(`${ok ? 'ok' : 'FAILED'} - ${name} ${detail}`);
}
const text = (result) => result.content[0].text;

step('the era is 2026-07-28', client.getNegotiatedProtocolVersion() === '2026-07-28',
  `${client.getProtocolEra()} ${client.getNegotiatedProtocolVersion()}`);

const { tools } = await client.listTools();
const names = tools.map((t) => t.name);
step('tools/list', ['bash', 'write', 'edit', 'read', 'job_output'].every((n) => names.includes(n)),
  names.join(' '));

let result = await client.callTool({
  name: 'bash',
  arguments: { command: 'echo hello from the sandbox', description: 'Say hello' },
});
step('a command runs', !result.isError && text(result).includes('hello from the sandbox'));

const outside = `/var/tmp/dsh-sandbox-example-2026-denied-${process.pid}`;
const command = `echo escaped > ${outside}`;
result = await client.callTool({
  name: 'bash',
  arguments: { command, description: 'Write outside' },
});
step('a write outside the workspace is denied',
  !existsSync(outside) && text(result).toLowerCase().includes('sandbox'), JSON.stringify(text(result).slice(0, 80)));

result = await client.callTool({
  name: 'bash',
  arguments: {
    command,
    description: 'Write outside',
    sandbox_permissions: 'danger-full-access',
    justification: 'The example shows an approved escalation.',
  },
});
step('an escalation, asked through input_required and approved, runs it',
  asked === 1 && existsSync(outside), JSON.stringify(text(result).slice(0, 80)));
if (existsSync(outside)) unlinkSync(outside);

result = await client.callTool({
  name: 'bash',
  arguments: {
    command: 'sleep 1; echo done in the background',
    description: 'Work in the background',
    run_in_background: true,
  },
});
const job = (text(result).match(/bash-\d+/) || [])[0];
step('a background job starts', job !== undefined, JSON.stringify(text(result).slice(0, 80)));
let output = '';
if (job) {
  result = await client.callTool({ name: 'job_output', arguments: { job_id: job, wait: true } });
  output = text(result);
}
step('its output is read once it finished',
  output.includes('done in the background') && output.includes('[status: completed, exit code: 0]'),
  JSON.stringify(output.slice(-80)));

await client.close();
console.log(`${steps - failed} of ${steps} steps ok`);
process.exit(failed ? 1 : 0);
