// SPDX-License-Identifier: MIT
// Each framework adapter driven end to end by the framework itself, offline: a scripted model
// (the AI SDK's MockLanguageModelV3; a Model of our own for the Agents SDK) calls bash in a
// read-only session, reads the denial, escalates, the harness's callback approves, and the
// command runs. The model is checked to see DSH's own tool descriptions and texts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { Agent, Runner, Usage, setTracingDisabled } from '@openai/agents';
import { Sandbox } from '../dist/index.js';
import { aiTools } from '../dist/ai.js';
import { agentsTools } from '../dist/openai-agents.js';
import { scratch } from './helpers.mjs';

const MARKER = '[sandbox: file access denied under read-only mode]';
const JUSTIFICATION = 'the user asked for the file';

// The model's two calls: the command, then the same once more, escalated.
function script(file) {
  const command = `touch ${file} && echo made`;
  return [
    { command, description: 'Make the file' },
    { command, description: 'Make the file', sandbox_permissions: 'workspace-write', justification: JUSTIFICATION },
  ];
}

describe('adapters', () => {
  let s, sb;
  before(async () => {
    s = scratch();
    sb = await Sandbox.open({ mode: 'read-only', workspace: s.ws });
  });
  after(async () => {
    await sb?.close();
    s.remove();
  });

  test('the AI SDK (MockLanguageModelV3): denial, escalation approved, success', async () => {
    const calls = script('by-ai-sdk');
    const prompts = [];
    let seenTools;
    const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: 1, text: 1, reasoning: 0 } };
    const model = new MockLanguageModelV3({
      doGenerate: async (options) => {
        prompts.push(JSON.stringify(options.prompt));
        seenTools ??= options.tools;
        const step = prompts.length - 1;
        if (step < calls.length)
          return {
            content: [{ type: 'tool-call', toolCallId: `call-${step}`, toolName: 'bash', input: JSON.stringify(calls[step]) }],
            finishReason: { unified: 'tool-calls', raw: undefined }, usage, warnings: [],
          };
        return { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] };
      },
    });
    const asked = [];
    const result = await generateText({
      model,
      tools: aiTools(sb, { approve: async (req) => { asked.push(req); return true; } }),
      stopWhen: stepCountIs(5),
      prompt: 'make the file',
    });
    assert.equal(result.text, 'done');
    const server = sb.tools.find((t) => t.name === 'bash');
    const bash = seenTools.find((t) => t.name === 'bash');
    assert.equal(bash.description, server.description);
    assert.deepEqual(bash.inputSchema, server.inputSchema);
    assert.deepEqual(seenTools.map((t) => t.name).sort(), ['bash', 'edit', 'read', 'write']);
    assert.ok(prompts[1].includes(JSON.stringify(MARKER).slice(1, -1)), 'the model never read the denial');
    assert.equal(asked.length, 1);
    assert.equal(asked[0].justification, JUSTIFICATION);
    assert.ok(prompts[2].includes('made'));
    assert.ok(existsSync(join(s.ws, 'by-ai-sdk')));
  });

  test('the OpenAI Agents SDK (a scripted Model): denial, escalation approved, success', async () => {
    setTracingDisabled(true);
    const calls = script('by-agents-sdk');
    const requests = [];
    const model = {
      async getResponse(request) {
        requests.push(request);
        const step = requests.length - 1;
        const output = step < calls.length
          ? [{ type: 'function_call', callId: `call-${step}`, name: 'bash', status: 'completed',
            arguments: JSON.stringify(calls[step]) }]
          : [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'done' }] }];
        return { usage: new Usage(), output };
      },
      // eslint-disable-next-line require-yield
      async *getStreamedResponse() {
        throw new Error('not streamed in this test');
      },
    };
    const asked = [];
    const agent = new Agent({
      name: 'test', instructions: sb.instructions, model,
      tools: agentsTools(sb, { approve: (req) => { asked.push(req); return 'allow'; } }),
    });
    const result = await new Runner({ tracingDisabled: true }).run(agent, 'make the file');
    assert.equal(result.finalOutput, 'done');
    const server = sb.tools.find((t) => t.name === 'bash');
    const bash = requests[0].tools.find((t) => t.name === 'bash');
    assert.equal(bash.description, server.description);
    assert.deepEqual(bash.parameters, server.inputSchema);
    const input = (i) => JSON.stringify(requests[i].input);
    assert.ok(input(1).includes(JSON.stringify(MARKER).slice(1, -1)), 'the model never read the denial');
    assert.equal(asked.length, 1);
    assert.equal(asked[0].mode, 'workspace-write');
    assert.ok(input(2).includes('made'));
    assert.ok(existsSync(join(s.ws, 'by-agents-sdk')));
  });

  test('an adapter without an approver: the escalation fails closed, the model reads why', async () => {
    const [, escalated] = script('refused');
    const text = await aiTools(sb).bash.execute(escalated, { toolCallId: 'x', messages: [] });
    assert.match(text, /^Error: sandbox escalation to "workspace-write" requires approval/);
    assert.ok(!existsSync(join(s.ws, 'refused')));
  });
});
