// SPDX-License-Identifier: MIT
/**
 * DSH's bash, read, write and edit as tools of the Vercel AI SDK (`ai`): the server's own
 * descriptions and input schemas, the result the text DSH's model reads, escalations answered by
 * the harness's approve callback, the AI SDK's abort signal cancelling the call.
 */
import { jsonSchema, tool, type Tool } from 'ai';
import { MODEL_TOOLS, modelText, modelTool, type Approver, type ModelToolName, type Sandbox } from './index.js';

export interface AiToolsOptions {
  /** Answers the model's escalations (sandbox_permissions); without one they fail closed. */
  approve?: Approver;
  /** Which tools; default all four. */
  tools?: readonly ModelToolName[];
}

/** `{bash, read, write, edit}` for generateText/streamText's `tools`. */
export function aiTools(sb: Sandbox, options: AiToolsOptions = {}): Record<string, Tool> {
  const tools: Record<string, Tool> = {};
  for (const name of options.tools ?? MODEL_TOOLS) {
    const def = modelTool(sb, name);
    tools[name] = tool({
      description: def.description,
      inputSchema: jsonSchema<Record<string, unknown>>(def.inputSchema as Parameters<typeof jsonSchema>[0]),
      execute: async (input: Record<string, unknown>, { abortSignal }) =>
        modelText(await sb.call(name, input, { approve: options.approve, signal: abortSignal })),
    });
  }
  return tools;
}
