// SPDX-License-Identifier: MIT
/**
 * DSH's bash, read, write and edit as function tools of the OpenAI Agents SDK
 * (`@openai/agents`): the server's own descriptions and input schemas (non-strict: DSH's
 * schemas have optional members, which strict mode forbids), the result the text DSH's model
 * reads, escalations answered by the harness's approve callback, the run's signal cancelling the
 * call.
 */
import { tool, type FunctionTool } from '@openai/agents';

// The SDK's JSON-schema parameter type (JsonObjectSchemaNonStrict), which it does not export.
type NonStrictParameters = Extract<Parameters<typeof tool>[0], { strict: false }>['parameters'];
import { MODEL_TOOLS, modelText, modelTool, type Approver, type ModelToolName, type Sandbox } from './index.js';

export interface AgentsToolsOptions {
  /** Answers the model's escalations (sandbox_permissions); without one they fail closed. */
  approve?: Approver;
  /** Which tools; default all four. */
  tools?: readonly ModelToolName[];
}

/** The four tools, for an Agent's `tools`. */
export function agentsTools(sb: Sandbox, options: AgentsToolsOptions = {}): FunctionTool[] {
  return (options.tools ?? MODEL_TOOLS).map((name) => {
    const def = modelTool(sb, name);
    return tool({
      name,
      description: def.description,
      // The schema as the server lists it; the SDK's type wants additionalProperties spelled
      // out, which JSON Schema defaults to true anyway.
      parameters: def.inputSchema as unknown as NonStrictParameters,
      strict: false,
      execute: async (input, _context, details) =>
        modelText(await sb.call(name, input as Record<string, unknown>,
          { approve: options.approve, signal: details?.signal })),
    }) as unknown as FunctionTool;
  });
}
