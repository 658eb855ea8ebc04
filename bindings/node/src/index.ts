// SPDX-License-Identifier: MIT
/**
 * dsh-sandbox for Node.js: DSH's sandbox policy through `dsh-sandbox serve`, driven with the
 * official MCP TypeScript SDK. One server process per Sandbox (one session): a call is one
 * JSON-RPC round trip instead of a process start, the SDK is the one the project already pins
 * and tests, and an escalation's question arrives as an MCP elicitation that this client hands
 * to the callback the harness gave.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, realpathSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, McpError, ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { CODES, type CodeName } from './codes.js';

export { CODES, type CodeName } from './codes.js';

export type Mode = 'read-only' | 'workspace-write' | 'danger-full-access';
export type Network = 'full' | 'none' | 'allowlist';

/** What a person is asked when the model escalates (the server's elicitation, parsed). */
export interface ApprovalRequest {
  tool: string;
  mode: Mode;
  /** The command (bash) or path (write, edit), as the question shows it: escaped to one line. */
  subject: string;
  justification: string;
  /** The whole question, as the server wrote it. */
  message: string;
  /** Whether the deployment offers `allow-session` (approval.sessionGrants). */
  sessionGrantOffered: boolean;
}

/**
 * The answer: true or 'allow' runs the call wider once; 'allow-session' also for the rest of
 * this Sandbox's life (when offered); false or 'deny' refuses; 'cancel' withdraws the question.
 */
export type Decision = boolean | 'allow' | 'allow-session' | 'deny' | 'cancel';
export type Approver = (request: ApprovalRequest) => Decision | Promise<Decision>;

export interface OpenOptions {
  /** The session's sandbox mode; unset: the configured default preset. */
  mode?: Mode;
  /** The workspace root (the session's directory); default the current directory. */
  workspace?: string;
  /** The network access, over the configuration's network.access. */
  network?: Network;
  /** The dsh-sandbox program; else $DSH_SANDBOX, else `dsh-sandbox` on PATH. */
  binary?: string;
  /** --config FILE and --store DIR of every command. */
  config?: string;
  store?: string;
  /** The server's environment; default this process's (DSH_SANDBOX_STORE etc. reach it). */
  env?: Record<string, string | undefined>;
  /** Answers escalations of calls that give no `approve` of their own. */
  approve?: Approver;
  /** Receives the server's stderr lines (diagnostics); default: dropped. */
  onStderr?: (line: string) => void;
}

export interface CallOptions {
  signal?: AbortSignal;
  /** A wider mode for this one call; needs a justification and an approval. */
  sandboxPermissions?: Mode;
  justification?: string;
  approve?: Approver;
}

export interface BashOptions extends CallOptions {
  /** Milliseconds; the server applies its default and cap, and kills the command on expiry. */
  timeout?: number;
  workdir?: string;
  description?: string;
}

export interface RunResult {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  /**
   * The denial marker was set: where the sandbox watched the command's file operations, it
   * refused one (see refusals); elsewhere DSH's guess, that the command failed and its stderr
   * reads like a refusal.
   */
  denied: boolean;
  timedOut: boolean;
  mode: Mode;
  /** What the sandbox refused, from its evidence (the first 16 paths); undefined where it could not watch. */
  refusals?: Refusal[];
  /** What the model would read for this call. */
  text: string;
}

/** One file operation the sandbox refused. */
export interface Refusal {
  /** "write", "create", "mkdir", "remove", "rename", "read", "chmod", ... */
  op: string;
  /** Resolved, as the command's view has it. */
  path: string;
  /** As the command named it. */
  named: string;
  /** What the command got: "EACCES", "EROFS", "EPERM". */
  errno: string;
  /** "outside" the writable roots, a "protected" path, a "hidden" one (denyRead). */
  reason: string;
}

/** A tool result as the model reads it. */
export interface ToolResult {
  /** The result's text (content[0]): DSH's bytes. */
  text: string;
  /** Every text block: the result, then any completion notice and policy snapshot. */
  texts: string[];
  isError: boolean;
  /** For an error, its stable code, as the server's result names it. */
  code?: CodeName;
  structured?: Record<string, unknown>;
}

/** A failure, with the stable code name of include/dsb/codes.def. */
export class DshSandboxError extends Error {
  readonly code: CodeName;
  /** The text the model would read, for a failed tool call. */
  readonly text?: string;
  constructor(code: CodeName, message: string, options?: { text?: string; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DshSandboxError';
    this.code = code;
    this.text = options?.text;
  }
}

/** The dsh-sandbox program was not found where it was looked for. */
export class BinaryNotFoundError extends DshSandboxError {
  constructor(message: string) {
    super('IO', message);
    this.name = 'BinaryNotFoundError';
  }
}

/** The key of a tool error's stable code in the server's result _meta. */
const CODE_KEY = 'dsh-sandbox/code';

/** The stable code a tool error result names in its _meta (IO for a name this package lacks). */
function codeOf(result: CallToolResult): CodeName {
  const name = result._meta?.[CODE_KEY];
  return typeof name === 'string' && Object.hasOwn(CODES, name) ? (name as CodeName) : 'IO';
}

/** The program: the option, else $DSH_SANDBOX, else `dsh-sandbox` on PATH. */
export function findBinary(binary?: string, env: Record<string, string | undefined> = process.env): string {
  const executable = (p: string) => {
    try {
      accessSync(p, constants.X_OK);
      return statSync(p).isFile();
    } catch {
      return false;
    }
  };
  const given = binary ?? env.DSH_SANDBOX;
  if (given) {
    if (executable(given)) return given;
    const from = binary ? 'the binary option' : '$DSH_SANDBOX';
    throw new BinaryNotFoundError(`dsh-sandbox: ${given} (from ${from}) is not an executable file`);
  }
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, 'dsh-sandbox');
    if (executable(p)) return p;
  }
  throw new BinaryNotFoundError(
    'dsh-sandbox: the program was not found: give the binary option, set $DSH_SANDBOX, or put dsh-sandbox on PATH');
}

/** One argv word for `bash -c`: single-quoted unless it needs no quoting. */
export function shellQuote(word: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

interface Pending {
  tool: string;
  mode: string;
  approve?: Approver;
}

function parseQuestion(message: string, requested: unknown): ApprovalRequest {
  const field = (name: string) => {
    const line = message.split('\n').find((l) => l.startsWith(`${name}: `));
    return line === undefined ? '' : line.slice(name.length + 2);
  };
  const tool = field('tool');
  const schema = requested as { properties?: Record<string, { enum?: string[] }> };
  const values = Object.values(schema?.properties ?? {})[0]?.enum ?? [];
  return {
    tool,
    mode: field('mode') as Mode,
    subject: tool === 'bash' ? field('command') : field('path'),
    justification: field('justification'),
    message,
    sessionGrantOffered: values.includes('allow-session'),
  };
}

/** A session of dsh-sandbox, served by one `dsh-sandbox serve` process. */
export class Sandbox {
  /** The session's id in the store. */
  readonly sessionId: string;
  /** The server's tools (tools/list): DSH's names, descriptions and input schemas. */
  readonly tools: readonly Tool[];
  /** DSH's tool prompt sections and the policy snapshot, for the system prompt. */
  readonly instructions: string;
  private readonly client: Client;
  private readonly transport: StdioClientTransport;
  private readonly options: OpenOptions;
  private readonly pending = new Set<Pending>();
  private closed = false;

  private constructor(options: OpenOptions, sessionId: string, client: Client,
    transport: StdioClientTransport, tools: Tool[]) {
    this.options = options;
    this.sessionId = sessionId;
    this.client = client;
    this.transport = transport;
    this.tools = tools;
    this.instructions = client.getInstructions() ?? '';
  }

  /** A new session in the workspace, in the given mode, and its server. */
  static async open(options: OpenOptions = {}): Promise<Sandbox> {
    const binary = findBinary(options.binary, options.env ?? process.env);
    const workspace = realpathSync(options.workspace ?? process.cwd());
    const id = cli(binary, options, ['session', 'new', '--cwd', workspace]).trim();
    if (options.mode) cli(binary, options, ['session', 'mode', id, options.mode]);
    return Sandbox.serve(binary, { ...options, workspace }, id);
  }

  /** A server on an existing session (an id or a DSH log's path). */
  static async openSession(session: string, options: Omit<OpenOptions, 'mode'> = {}): Promise<Sandbox> {
    const binary = findBinary(options.binary, options.env ?? process.env);
    return Sandbox.serve(binary, options, session);
  }

  private static async serve(binary: string, options: OpenOptions, session: string): Promise<Sandbox> {
    const args = [...globalArgs(options), 'serve', '--session', session];
    if (options.network) args.push('--network', options.network);
    const transport = new StdioClientTransport({
      command: binary,
      args,
      cwd: options.workspace,
      // The SDK hands a server only HOME, PATH and a few more unless told: the caller's
      // environment carries DSH_SANDBOX_STORE, DSH_PERMISSION_MODE and DSH_SANDBOX_CONFIG.
      env: definedEnv(options.env ?? process.env),
      stderr: 'pipe',
    });
    let tail = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      tail = (tail + chunk.toString()).slice(-4096);
      if (options.onStderr)
        for (const line of chunk.toString().split('\n')) if (line) options.onStderr(line);
    });
    const client = new Client({ name: 'dsh-sandbox-node', version: '0.1.0' },
      { capabilities: { elicitation: { form: {} } } });
    let sandbox: Sandbox | undefined;
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      if (!sandbox) throw new McpError(ErrorCode.InvalidRequest, 'no call is waiting');
      const params = request.params;
      // The server asks in form mode only (server.md); a URL-mode question is not ours.
      if (!('requestedSchema' in params)) throw new McpError(ErrorCode.InvalidParams, 'form mode only');
      return sandbox.answer(params.message, params.requestedSchema);
    });
    try {
      await client.connect(transport);
      const { tools } = await client.listTools();
      sandbox = new Sandbox(options, session, client, transport, tools);
      return sandbox;
    } catch (e) {
      await client.close().catch(() => {});
      throw new DshSandboxError('IO', `dsh-sandbox serve did not start: ${(e as Error).message}` +
        (tail ? `: ${tail.trim()}` : ''), { cause: e });
    }
  }

  /**
   * An elicitation, routed to the waiting call it is for. The question names the tool and the
   * mode; calls that asked for that tool and mode are its candidates, the oldest first (MCP's
   * elicitation carries no id of the call that asks).
   */
  private async answer(message: string, requestedSchema: unknown) {
    const req = parseQuestion(message, requestedSchema);
    let approve = this.options.approve;
    for (const p of this.pending)
      if (p.tool === req.tool && p.mode === req.mode) {
        approve = p.approve ?? approve;
        break;
      }
    // Nobody to ask: an error answer, which the server counts as no approval channel.
    if (!approve) throw new McpError(ErrorCode.InvalidRequest, 'no approver was given');
    const decision = await approve(req);
    if (decision === 'cancel') return { action: 'cancel' as const };
    if (decision === false || decision === 'deny') return { action: 'decline' as const };
    const value = decision === 'allow-session' ? 'allow-session' : 'allow';
    return { action: 'accept' as const, content: { decision: value } };
  }

  /** A tool call as the model makes it: the result the model reads, errors included. */
  async call(tool: string, args: Record<string, unknown>, options: CallOptions = {}): Promise<ToolResult> {
    if (this.closed) throw new DshSandboxError('INVALID_ARGS', 'the sandbox is closed');
    const wider = args.sandbox_permissions;
    const pending: Pending | undefined = typeof wider === 'string'
      ? { tool, mode: wider, approve: options.approve }
      : undefined;
    if (pending) this.pending.add(pending);
    let result: CallToolResult;
    try {
      result = await this.client.callTool({ name: tool, arguments: args }, undefined, {
        signal: options.signal,
        // The server enforces the command's timeout and the approval's; a person may take
        // longer than the SDK's 60 s default to answer.
        timeout: 0x7fffffff,
      }) as CallToolResult;
    } catch (e) {
      if (options.signal?.aborted)
        throw new DshSandboxError('ABORTED', `${tool}: cancelled; its command was stopped`, { cause: e });
      if (e instanceof McpError && e.code === ErrorCode.InvalidParams)
        throw new DshSandboxError('INVALID_ARGS', e.message, { cause: e });
      throw new DshSandboxError('IO', `${tool}: ${(e as Error).message}`, { cause: e });
    } finally {
      if (pending) this.pending.delete(pending);
    }
    const texts = (result.content ?? []).flatMap((c) => (c.type === 'text' ? [c.text] : []));
    const text = texts[0] ?? '';
    const isError = result.isError === true;
    return {
      text,
      texts,
      isError,
      code: isError ? codeOf(result) : undefined,
      structured: result.structuredContent as Record<string, unknown> | undefined,
    };
  }

  private escalation(options: CallOptions): Record<string, unknown> {
    if (!options.sandboxPermissions) return {};
    return { sandbox_permissions: options.sandboxPermissions, justification: options.justification ?? '' };
  }

  /** DSH's bash tool: `bash -c COMMAND`; the result is what the model reads, never thrown. */
  async bash(command: string, options: BashOptions = {}): Promise<ToolResult> {
    const args: Record<string, unknown> = {
      command,
      description: options.description ?? command.slice(0, 60),
      ...this.escalation(options),
    };
    if (options.timeout !== undefined) args.timeoutMs = options.timeout;
    if (options.workdir !== undefined) args.workdir = options.workdir;
    return this.call('bash', args, options);
  }

  /** An argv, run confined; a call that made no result (a refused escalation) throws. */
  async run(argv: readonly string[], options: BashOptions = {}): Promise<RunResult> {
    if (argv.length === 0) throw new DshSandboxError('INVALID_ARGS', 'run: an empty argv');
    const command = argv.map(shellQuote).join(' ');
    const r = await this.bash(command, { description: `Run ${argv[0]}`, ...options });
    const s = r.structured as undefined | {
      exitCode: number | null; signal: string | null; timedOut: boolean;
      stdout: { text: string }; stderr: { text: string };
      sandbox: { mode: Mode; denied: boolean; refusals?: Refusal[] };
    };
    if (r.isError || !s) throw new DshSandboxError(r.code ?? 'IO', r.text.replace(/^Error: /, ''), { text: r.text });
    return {
      exitCode: s.exitCode,
      signal: s.signal,
      stdout: s.stdout.text,
      stderr: s.stderr.text,
      denied: s.sandbox.denied,
      timedOut: s.timedOut,
      mode: s.sandbox.mode,
      refusals: s.sandbox.refusals,
      text: r.text,
    };
  }

  private async fsCall(tool: string, args: Record<string, unknown>, options: CallOptions): Promise<ToolResult> {
    const r = await this.call(tool, { ...args, ...this.escalation(options) }, options);
    if (r.isError) throw new DshSandboxError(r.code ?? 'IO', r.text.replace(/^Error: /, ''), { text: r.text });
    return r;
  }

  /** DSH's read tool: the line-numbered window; a failure throws. */
  read(path: string, options: { offset?: number; limit?: number; signal?: AbortSignal } = {}): Promise<ToolResult> {
    const args: Record<string, unknown> = { file_path: path };
    if (options.offset !== undefined) args.offset = options.offset;
    if (options.limit !== undefined) args.limit = options.limit;
    return this.fsCall('read', args, { signal: options.signal });
  }

  /** DSH's write tool (a file that exists must have been read first); a failure throws. */
  write(path: string, content: string, options: CallOptions = {}): Promise<ToolResult> {
    return this.fsCall('write', { file_path: path, content }, options);
  }

  /** DSH's edit tool (the file must have been read first); a failure throws. */
  edit(path: string, oldString: string, newString: string,
    options: CallOptions & { replaceAll?: boolean } = {}): Promise<ToolResult> {
    const args: Record<string, unknown> = { file_path: path, old_string: oldString, new_string: newString };
    if (options.replaceAll !== undefined) args.replace_all = options.replaceAll;
    return this.fsCall('edit', args, options);
  }

  /** Another session in the same workspace, mode and network, with a server of its own. */
  session(options: Partial<OpenOptions> = {}): Promise<Sandbox> {
    return Sandbox.open({ ...this.options, ...options });
  }

  /** The server's pid (for diagnostics). */
  get pid(): number | null {
    return this.transport.pid;
  }

  /** Ends the server: its running calls are cancelled and their commands stopped. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.client.close();
  }
}

/** The tools a model is given to work with files and commands (the job tools are left out). */
export const MODEL_TOOLS = ['bash', 'read', 'write', 'edit'] as const;
export type ModelToolName = (typeof MODEL_TOOLS)[number];

/** What the adapters need of a tool: its name, and the server's description and schema. */
export function modelTool(sb: Sandbox, name: ModelToolName): { description: string; inputSchema: Record<string, unknown> } {
  const def = sb.tools.find((t) => t.name === name);
  if (!def) throw new DshSandboxError('INVALID_ARGS', `the server has no tool ${name}`);
  return { description: def.description ?? '', inputSchema: def.inputSchema as Record<string, unknown> };
}

/**
 * What the model reads of a result: its text blocks, one after the other, a blank line between
 * (a completion notice or a policy snapshot follows the result's own text, as the server sends).
 */
export function modelText(r: ToolResult): string {
  return r.texts.join('\n\n');
}

/** Sandbox.openSession's and sb.session()'s value: the same class. */
export type Session = Sandbox;

function globalArgs(options: OpenOptions): string[] {
  const args: string[] = [];
  if (options.config) args.push('--config', options.config);
  if (options.store) args.push('--store', options.store);
  return args;
}

function definedEnv(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}

/** One CLI command for the session's setup: its stdout, or its stderr as the error. */
function cli(binary: string, options: OpenOptions, args: string[]): string {
  const r = spawnSync(binary, [...globalArgs(options), ...args], {
    encoding: 'utf8',
    env: definedEnv(options.env ?? process.env),
  });
  if (r.error) throw new DshSandboxError('IO', `${binary}: ${r.error.message}`, { cause: r.error });
  if (r.status !== 0) {
    // An exit status names its code where only one code has it (docs/error-codes.md).
    const codes = (Object.keys(CODES) as CodeName[]).filter((c) => CODES[c].exitStatus === r.status);
    throw new DshSandboxError(codes.length === 1 ? codes[0] : 'IO', `dsh-sandbox ${args.join(' ')}: ${r.stderr.trim()}`);
  }
  return r.stdout;
}
