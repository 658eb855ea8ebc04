// SPDX-License-Identifier: MIT
// The official MCP TypeScript SDK as a client of `dsh-sandbox serve`. It lists the tools, runs
// a command, gets a denial, escalates with an elicitation handler that approves, and reads a
// background job. Usage: node client.mjs [--server PATH] WORKSPACE
import { existsSync, realpathSync, unlinkSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const args = process.argv.slice(2);
let server = 'dsh-sandbox';
if (args[0] === '--server') {
  server = args[1];
  args.splice(0, 2);
}
if (args.length !== 1) {
  console.error('usage: client.mjs [--server PATH] WORKSPACE');
  process.exit(2);
}
const workspace = realpathSync(args[0]);

const client = new Client(
  { name: 'dsh-sandbox-node-example', version: '1.0.0' },
  { capabilities: { elicitation: { form: {} } } },
);
// The human's part: this example allows the escalation once, after showing it.
client.setRequestHandler(ElicitRequestSchema, async (request) => {
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

const { tools } = await client.listTools();
const names = tools.map((t) => t.name);
step('tools/list', ['bash', 'write', 'edit', 'read', 'job_output'].every((n) => names.includes(n)),
  names.join(' '));

let result = await client.callTool({
  name: 'bash',
  arguments: { command: 'echo hello from the sandbox', description: 'Say hello' },
});
step('a command runs', !result.isError && text(result).includes('hello from the sandbox'));

const outside = '/var/tmp/dsh-sandbox-example-denied';
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
step('an escalation, approved through elicitation, runs it', existsSync(outside),
  JSON.stringify(text(result).slice(0, 80)));
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
