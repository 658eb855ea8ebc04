// SPDX-License-Identifier: MIT
// The client against a real `dsh-sandbox serve` ($DSH_SANDBOX): every method, denials,
// escalations approved and refused, a timeout, cancellation, a missing program, concurrency.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BinaryNotFoundError, DshSandboxError, Sandbox, findBinary, shellQuote } from '../dist/index.js';
import { processesWith, scratch, waitFor } from './helpers.mjs';

const MARKER = '[sandbox: file access denied under read-only mode]';

describe('a read-only sandbox', () => {
  let s, sb;
  before(async () => {
    s = scratch();
    sb = await Sandbox.open({ mode: 'read-only', workspace: s.ws, network: 'none' });
  });
  after(async () => {
    await sb?.close();
    s.remove();
  });

  test('open: a session, DSH\'s tools and instructions', () => {
    assert.match(sb.sessionId, /^[0-9a-f-]{36}$/);
    assert.deepEqual(sb.tools.map((t) => t.name),
      ['bash', 'edit', 'job_kill', 'job_list', 'job_output', 'read', 'write']);
    const bash = sb.tools.find((t) => t.name === 'bash');
    assert.match(bash.description, /^Execute a bash command/);
    assert.match(sb.instructions, /read-only/);
  });

  test('run: an argv, quoted for bash -c, with its parts', async () => {
    const r = await sb.run(['printf', '%s|', 'a b', "it's", '$HOME']);
    assert.equal(r.exitCode, 0);
    assert.equal(r.stdout, "a b|it's|$HOME|");
    assert.equal(r.stderr, '');
    assert.equal(r.denied, false);
    assert.equal(r.timedOut, false);
    assert.equal(r.mode, 'read-only');
  });

  test('run: a write is denied, with DSH\'s marker', async () => {
    const r = await sb.run(['touch', join(s.ws, 'x')]);
    assert.equal(r.denied, true);
    assert.notEqual(r.exitCode, 0);
    assert.ok(r.text.includes(MARKER), r.text);
    assert.ok(!existsSync(join(s.ws, 'x')));
  });

  test('bash: the text the model reads', async () => {
    const t = await sb.bash('echo out; echo err >&2; exit 3');
    assert.equal(t.isError, false);
    assert.equal(t.text, 'out\n[stderr]\nerr\n[exit code: 3]');
  });

  test('read: the line-numbered window; a missing file throws FS_NOT_FOUND', async () => {
    writeFileSync(join(s.ws, 'a.c'), 'int x;\nint y;\n');
    const r = await sb.read('a.c');
    assert.match(r.text, /1: int x;\n2: int y;/);
    assert.equal(r.structured.totalLines, 2);
    await assert.rejects(sb.read('nope.c'), (e) => e instanceof DshSandboxError && e.code === 'FS_NOT_FOUND' &&
      e.text === `Error: ${e.message}` && e.message.startsWith('cannot read'));
  });

  test('write: denied in read-only mode, FS_SANDBOX_DENIED', async () => {
    await assert.rejects(sb.write('new.txt', 'x'),
      (e) => e.code === 'FS_SANDBOX_DENIED' && e.text.includes('escalation available'));
    assert.ok(!existsSync(join(s.ws, 'new.txt')));
  });

  test('an escalation approved through the call\'s callback runs wider', async () => {
    const asked = [];
    const t = await sb.bash('touch approved && echo made', {
      sandboxPermissions: 'workspace-write',
      justification: 'the test asks',
      approve: async (req) => {
        asked.push(req);
        return true;
      },
    });
    assert.equal(asked.length, 1);
    assert.equal(asked[0].tool, 'bash');
    assert.equal(asked[0].mode, 'workspace-write');
    assert.equal(asked[0].subject, 'touch approved && echo made');
    assert.equal(asked[0].justification, 'the test asks');
    assert.equal(t.isError, false, t.text);
    assert.equal(t.text.split('\n')[0], 'made');
    assert.ok(existsSync(join(s.ws, 'approved')));
  });

  test('a refused escalation runs nothing: ESCALATION_REFUSED', async () => {
    const t = await sb.bash('touch refused', {
      sandboxPermissions: 'workspace-write', justification: 'the test asks', approve: () => false,
    });
    assert.equal(t.isError, true);
    assert.equal(t.code, 'ESCALATION_REFUSED');
    assert.equal(t.text, 'Error: the user rejected escalating this command to "workspace-write"');
    await assert.rejects(sb.run(['touch', 'refused'], {
      sandboxPermissions: 'workspace-write', justification: 'again', approve: () => 'deny',
    }), (e) => e instanceof DshSandboxError && e.code === 'ESCALATION_REFUSED');
    assert.ok(!existsSync(join(s.ws, 'refused')));
  });

  test('an escalation without any approver fails closed', async () => {
    const t = await sb.bash('touch nobody', { sandboxPermissions: 'workspace-write', justification: 'j' });
    assert.equal(t.code, 'ESCALATION_REFUSED');
    assert.match(t.text, /no approval channel is available/);
    assert.ok(!existsSync(join(s.ws, 'nobody')));
  });

  test('write and edit, escalated and approved', async () => {
    const yes = { sandboxPermissions: 'workspace-write', justification: 'j', approve: () => 'allow' };
    await sb.write('w.txt', 'hello\n', yes);
    assert.equal(readFileSync(join(s.ws, 'w.txt'), 'utf8'), 'hello\n');
    await sb.read('w.txt');
    const e = await sb.edit('w.txt', 'hello', 'bye', yes);
    assert.match(e.text, /has been updated successfully/);
    assert.equal(e.structured.replacements, 1);
    assert.equal(readFileSync(join(s.ws, 'w.txt'), 'utf8'), 'bye\n');
    await assert.rejects(sb.edit('w.txt', 'absent', 'x', yes), (err) => err.code === 'FS_EDIT_NOT_FOUND');
  });

  test('concurrent escalations each reach their own call\'s approver', async () => {
    const wider = { sandboxPermissions: 'workspace-write', justification: 'j' };
    const [t, w] = await Promise.all([
      sb.bash('touch routed-bash', { ...wider, approve: () => true }),
      sb.write('routed-write', 'x', { ...wider, approve: () => false }).catch((e) => e),
    ]);
    assert.equal(t.isError, false, t.text);
    assert.equal(w.code, 'ESCALATION_REFUSED');
    assert.ok(existsSync(join(s.ws, 'routed-bash')));
    assert.ok(!existsSync(join(s.ws, 'routed-write')));
  });

  test('a timeout kills the command', async () => {
    const started = Date.now();
    const r = await sb.run(['sleep', '20'], { timeout: 300 });
    assert.equal(r.timedOut, true);
    assert.ok(Date.now() - started < 15000);
  });

  test('an AbortSignal cancels the call and leaves no process behind', async () => {
    const marker = `${300 + Math.floor(Math.random() * 1e6) / 1e6}`;
    const ac = new AbortController();
    const call = sb.run(['sh', '-c', `sleep ${marker}; sleep ${marker}`], { signal: ac.signal });
    // The command really ran (so that "gone" below can fail).
    assert.ok((await waitFor(() => processesWith(`sleep\0${marker}`).length > 0, 10000)), 'never started');
    ac.abort();
    await assert.rejects(call, (e) => e instanceof DshSandboxError && e.code === 'ABORTED');
    const gone = await waitFor(() => processesWith(marker).length === 0, 10000);
    assert.ok(gone, `still running: ${processesWith(marker)}`);
  });

  test('16 calls at once, each its own result', async () => {
    const rs = await Promise.all(Array.from({ length: 16 }, (_, i) =>
      sb.run(['sh', '-c', 'sleep 0.2; echo "$0"', `call-${i}`])));
    rs.forEach((r, i) => assert.equal(r.stdout, `call-${i}\n`));
  });

  test('session() and openSession(): sessions of their own, each its own server', async () => {
    const other = await sb.session({ mode: 'workspace-write' });
    try {
      assert.notEqual(other.sessionId, sb.sessionId);
      assert.notEqual(other.pid, sb.pid);
      const r = await other.run(['touch', 'by-session']);
      assert.equal(r.exitCode, 0);
      assert.ok(existsSync(join(s.ws, 'by-session')));
    } finally {
      await other.close();
    }
    const again = await Sandbox.openSession(other.sessionId, { workspace: s.ws });
    try {
      assert.equal(again.sessionId, other.sessionId);
      assert.equal((await again.run(['true'])).mode, 'workspace-write');
    } finally {
      await again.close();
    }
  });
});

describe('the program', () => {
  test('closing ends the server', async () => {
    const s = scratch();
    const sb = await Sandbox.open({ workspace: s.ws });
    const pid = sb.pid;
    assert.ok(existsSync(`/proc/${pid}`));
    await sb.close();
    assert.ok(await waitFor(() => !existsSync(`/proc/${pid}`) ||
      readFileSync(`/proc/${pid}/stat`, 'utf8').split(' ')[2] === 'Z', 5000));
    await assert.rejects(sb.run(['true']), (e) => e.code === 'INVALID_ARGS');
    s.remove();
  });

  test('the Sandbox\'s approver answers calls that give none', async () => {
    const s = scratch();
    const asked = [];
    const sb = await Sandbox.open({ mode: 'read-only', workspace: s.ws, approve: (req) => { asked.push(req); return 'allow'; } });
    try {
      const r = await sb.run(['touch', 'by-default'], { sandboxPermissions: 'workspace-write', justification: 'j' });
      assert.equal(r.exitCode, 0);
      assert.equal(asked.length, 1);
      assert.ok(existsSync(join(s.ws, 'by-default')));
    } finally {
      await sb.close();
      s.remove();
    }
  });

  test('a missing program is a clear error', async () => {
    await assert.rejects(Sandbox.open({ binary: '/nonexistent/dsh-sandbox' }), (e) =>
      e instanceof BinaryNotFoundError && e.code === 'IO' &&
      e.message.includes('/nonexistent/dsh-sandbox (from the binary option) is not an executable file'));
    assert.throws(() => findBinary(undefined, { PATH: '/nonexistent' }), (e) =>
      e instanceof BinaryNotFoundError &&
      /give the binary option, set \$DSH_SANDBOX, or put dsh-sandbox on PATH/.test(e.message));
    assert.throws(() => findBinary(undefined, { DSH_SANDBOX: '/nonexistent/x' }), /from \$DSH_SANDBOX/);
  });

  test('the program is found: option, then $DSH_SANDBOX, then PATH', () => {
    const bin = process.env.DSH_SANDBOX;
    assert.equal(findBinary(bin, { DSH_SANDBOX: '/nonexistent' }), bin);
    assert.equal(findBinary(undefined, { DSH_SANDBOX: bin, PATH: '' }), bin);
    const dir = bin.slice(0, bin.lastIndexOf('/'));
    assert.equal(findBinary(undefined, { PATH: `/nonexistent:${dir}` }), `${dir}/dsh-sandbox`);
  });

  test('shellQuote keeps words whole', () => {
    assert.equal(shellQuote('plain-word_1.c'), 'plain-word_1.c');
    assert.equal(shellQuote("a'b"), `'a'\\''b'`);
    assert.equal(shellQuote(''), "''");
  });
});
