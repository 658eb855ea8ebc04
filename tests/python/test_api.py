# SPDX-License-Identifier: MIT
"""Every method of dsh_sandbox through the library: run, the four tools, sessions, approvals,
errors, timeouts, asyncio and its cancellation, threads, a missing library."""
import asyncio
import glob
import json
import os
import random
import subprocess
import sys
import threading
import time
import unittest

from helpers import CLI, Scratch, descendants, processes_with
import dsh_sandbox
from dsh_sandbox import (ApprovalRequest, EscalationRefused, FsNotFound, FsSandboxDenied,
                         InvalidArgs, Sandbox, Session, SessionNotFound)


class Run(Scratch):
    def test_exit_status_and_output(self) -> None:
        r = self.sb.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
        self.assertEqual((r.exit_code, r.stdout, r.stderr), (3, b"out\n", b"err\n"))
        self.assertFalse(r.ok or r.denied or r.timed_out)
        self.assertEqual(r.mode, "workspace-write")

    def test_argv_is_quoted_not_interpreted(self) -> None:
        r = self.sb.run(["printf", "%s|", "a b", "c'd", "$HOME", "*"])
        self.assertEqual(r.stdout, b"a b|c'd|$HOME|*|")

    def test_output_is_whole_not_the_tools_tail(self) -> None:
        r = self.sb.run(["head", "-c", "3000000", "/dev/zero"])
        self.assertEqual((r.exit_code, len(r.stdout)), (0, 3000000))

    def test_cwd_and_workspace(self) -> None:
        os.mkdir(os.path.join(self.ws, "sub"))
        self.assertEqual(self.sb.run(["pwd"]).stdout.decode().strip(), self.ws)
        self.assertEqual(self.sb.run(["pwd"], cwd="sub").stdout.decode().strip(),
                         os.path.join(self.ws, "sub"))

    def test_write_outside_is_denied_and_nothing_written(self) -> None:
        victim = os.path.join(self.outside, "x")
        r = self.sb.run(["touch", victim])
        self.assertTrue(r.denied)
        self.assertNotEqual(r.exit_code, 0)
        self.assertFalse(os.path.exists(victim))
        inside = self.sb.run(["touch", os.path.join(self.ws, "x")])
        self.assertEqual((inside.exit_code, inside.denied), (0, False))
        self.assertTrue(os.path.exists(os.path.join(self.ws, "x")))

    def test_timeout_kills(self) -> None:
        start = time.monotonic()
        r = self.sb.run(["sleep", "30"], timeout=0.5)
        self.assertTrue(r.timed_out)
        self.assertIsNone(r.exit_code)
        self.assertLess(time.monotonic() - start, 15)

    def test_bad_arguments(self) -> None:
        with self.assertRaises(InvalidArgs):
            Sandbox(mode="wide-open")
        with self.assertRaises(ValueError):  # InvalidArgs is one
            Sandbox(network="some")
        with self.assertRaises(InvalidArgs):
            self.sb.run("make")  # a string, not an argv
        with self.assertRaises(InvalidArgs):
            self.sb.run(["true"], timeout=0)


class ProbeCache(Scratch):
    def test_the_verdict_is_kept_in_the_store_and_read_back(self) -> None:
        # setUp's call probed the backend once and kept the verdict where the CLI keeps it.
        cache = os.path.join(self.store, "cache")
        self.assertEqual(self.sb.cache_dir, cache)
        verdicts = glob.glob(os.path.join(cache, f"probe-{os.geteuid()}-*.json"))
        self.assertEqual(len(verdicts), 1, os.listdir(self.store))
        before = os.stat(verdicts[0])
        # Another Sandbox on the store, and a session's calls, read it and probe nothing: a
        # probe writes the verdict again (a new file renamed over it).
        other = Sandbox(mode="workspace-write", workspace=self.ws, store=self.store)
        self.assertEqual(other.run(["true"]).exit_code, 0)
        s = self.sb.session()
        self.assertEqual(s.cache_dir, cache)
        self.assertEqual(s.bash("true").exit_code, 0)
        after = os.stat(verdicts[0])
        self.assertEqual((after.st_ino, after.st_mtime_ns), (before.st_ino, before.st_mtime_ns))
        if CLI:  # the CLI reads the same verdict
            probe = subprocess.run([CLI, "--store", self.store, "probe", "--json"],
                                   capture_output=True, check=True)
            self.assertIs(json.loads(probe.stdout)["cached"], True)

    def test_an_explicit_cache_dir_and_none_without_a_store(self) -> None:
        mine = os.path.join(self.top, "mine")
        sb = Sandbox(mode="workspace-write", workspace=self.ws, store=self.store, cache_dir=mine)
        self.assertEqual(sb.run(["true"]).exit_code, 0)
        self.assertEqual(len(glob.glob(os.path.join(mine, "probe-*.json"))), 1)
        self.assertIsNone(Sandbox(store="").cache_dir)  # a store that cannot be opened


class Tools(Scratch):
    def test_bash_text_is_the_clis(self) -> None:
        victim = os.path.join(self.outside, "y")
        command = f"echo hello; touch {victim}"
        t = self.sb.bash(command)
        self.assertTrue(t.denied)
        self.assertIn("hello", t.text)
        self.assertFalse(os.path.exists(victim))
        if CLI:  # the model reads the same bytes through the library as through the CLI
            cli = subprocess.run([CLI, "--store", self.store, "bash", "--mode", "workspace-write",
                                  "--workspace", self.ws, command], capture_output=True)
            self.assertEqual(t.data, cli.stdout)

    def test_write_edit_read(self) -> None:
        w = self.sb.write("a.c", "int a;\n")
        self.assertEqual(w.path, os.path.join(self.ws, "a.c"))
        self.assertEqual(w.result["operation"], "create")
        e = self.sb.edit("a.c", "a;", "b;")
        self.assertEqual(e.result["replacements"], 1)
        with open(os.path.join(self.ws, "a.c"), encoding="utf-8") as f:
            self.assertEqual(f.read(), "int b;\n")
        self.assertEqual(self.sb.read("a.c").text, "int b;\n")
        self.assertEqual(self.sb.write("a.c", b"x").result["operation"], "update")

    def test_fence_denial_is_an_exception_with_dsh_text(self) -> None:
        victim = os.path.join(self.outside, "z")
        with self.assertRaises(FsSandboxDenied) as cm:
            self.sb.write(victim, "no")
        e = cm.exception
        self.assertEqual(e.code, "FS_SANDBOX_DENIED")
        self.assertTrue(e.text.startswith("Error: [sandbox: "), e.text)
        self.assertEqual(e.result["error"]["code"], "FS_SANDBOX_DENIED")
        self.assertFalse(os.path.exists(victim))
        with self.assertRaises(FsNotFound):
            self.sb.read("missing.txt")


class Sessions(Scratch):
    def test_session_and_open_session(self) -> None:
        s = self.sb.session()
        self.assertEqual(s.bash("pwd").text.strip(), self.ws)
        again = self.sb.open_session(s.id)
        self.assertEqual(again.id, s.id)
        self.assertEqual(again.run(["true"]).exit_code, 0)
        with self.assertRaises(SessionNotFound):
            self.sb.open_session("00000000-0000-4000-8000-000000000000")

    def test_open_session_on_the_class(self) -> None:
        def approve(req: ApprovalRequest) -> bool:
            return False

        s = self.sb.session()
        again = Sandbox.open_session(s.id, store=self.store, workspace=self.ws,
                                     network="none", approve=approve)
        self.assertIsInstance(again, Session)
        self.assertEqual((again.id, again.store, again.workspace, again.network, again.approve),
                         (s.id, self.store, self.ws, "none", approve))
        self.assertEqual(again.bash("pwd").text.strip(), self.ws)
        self.assertEqual(Session.open_session(s.id, store=self.store).id, s.id)
        with self.assertRaises(SessionNotFound):
            Sandbox.open_session("00000000-0000-4000-8000-000000000000", store=self.store)
        with self.assertRaises(SessionNotFound):  # the store given is the one looked in
            Sandbox.open_session(s.id, store=os.path.join(self.top, "other"))
        with self.assertRaises(InvalidArgs):  # the options are Sandbox()'s, checked as there
            Sandbox.open_session(s.id, store=self.store, backend="none-such")
        with self.assertRaises(TypeError):  # and keywords only
            Sandbox.open_session(s.id, "workspace-write")  # type: ignore[call-arg]

    def test_approved_escalation_runs_wider(self) -> None:
        s = self.sb.session()
        asked: list[ApprovalRequest] = []
        victim = os.path.join(self.outside, "granted")

        def approve(req: ApprovalRequest) -> bool:
            asked.append(req)
            return True

        t = s.bash(f"touch {victim}", sandbox_permissions="danger-full-access",
                   justification="write outside for the test", approve=approve)
        self.assertEqual(t.exit_code, 0, t.text)
        self.assertTrue(os.path.exists(victim))
        self.assertEqual(len(asked), 1)
        req = asked[0]
        self.assertEqual((req.tool, req.subject, req.mode, req.justification, req.session_id),
                         ("bash", f"touch {victim}", "danger-full-access",
                          "write outside for the test", s.id))
        self.assertTrue(req.id)
        # The grant was for that call only.
        self.assertTrue(s.run(["touch", victim + "2"]).denied)

    def test_refused_escalation_raises_and_runs_nothing(self) -> None:
        s = self.sb.session()
        victim = os.path.join(self.outside, "refused")
        for answer in (False, "rejected"):
            with self.assertRaises(EscalationRefused) as cm:
                s.bash(f"touch {victim}", sandbox_permissions="danger-full-access",
                       justification="no", approve=lambda req: answer)
            self.assertTrue(cm.exception.text.startswith("Error: "))
        self.assertFalse(os.path.exists(victim))
        with self.assertRaises(EscalationRefused):  # nobody to ask: unavailable
            s.write(victim, "x", sandbox_permissions="danger-full-access", justification="no")
        self.assertFalse(os.path.exists(victim))

    def test_a_throwing_approver_refuses(self) -> None:
        def boom(req: ApprovalRequest) -> bool:
            raise RuntimeError("no")

        victim = os.path.join(self.outside, "thrown")
        with self.assertRaises(EscalationRefused):
            self.sb.session().write(victim, "x", sandbox_permissions="workspace-write",
                                    justification="j", approve=boom)
        self.assertFalse(os.path.exists(victim))


class Async(Scratch):
    def test_arun_and_abash(self) -> None:
        async def main() -> tuple:
            return await asyncio.gather(self.sb.arun(["echo", "a"]), self.sb.abash("echo b"))

        r, t = asyncio.run(main())
        self.assertEqual(r.stdout, b"a\n")
        self.assertEqual(t.text, "b\n")

    def test_cancellation_leaves_nothing_behind(self) -> None:
        # A duration no other process has: how the command and its background child are found.
        mark = f"{random.randint(100000, 999999)}.{os.getpid()}"
        needle = f"sleep\0{mark}".encode()

        async def main() -> None:
            task = asyncio.create_task(self.sb.abash(f"sleep {mark} & sleep {mark}; wait"))
            for _ in range(100):
                if len(processes_with(needle)) == 2:
                    break
                await asyncio.sleep(0.05)
            self.assertEqual(len(processes_with(needle)), 2, "the command never started")
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task

        start = time.monotonic()
        asyncio.run(main())
        self.assertEqual(processes_with(needle), [])
        self.assertLess(time.monotonic() - start, 30)

    def test_cancellation_of_arun(self) -> None:
        mark = f"{random.randint(100000, 999999)}.{os.getpid()}"
        needle = f"sleep\0{mark}".encode()

        async def main() -> None:
            task = asyncio.create_task(self.sb.arun(["sleep", mark]))
            for _ in range(100):
                if processes_with(needle):
                    break
                await asyncio.sleep(0.05)
            self.assertTrue(processes_with(needle), "the command never started")
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task

        asyncio.run(main())
        self.assertEqual(processes_with(needle), [])


ESCALATE = {"sandbox_permissions": "danger-full-access",
            "justification": "write outside for the test"}


class AsyncApprovals(Scratch):
    """An approve= that is an async def: awaited on the loop of the arun()/abash() that asked,
    or in a loop of its own for a sync call."""

    def test_allowed_on_the_callers_loop(self) -> None:
        s = self.sb.session()
        victims = [os.path.join(self.outside, n) for n in ("by-abash", "by-arun")]
        loops: list[asyncio.AbstractEventLoop] = []

        async def approve(req: ApprovalRequest) -> bool:
            loops.append(asyncio.get_running_loop())
            await asyncio.sleep(0.01)
            return True

        async def main() -> tuple:
            loops.append(asyncio.get_running_loop())
            return (await s.abash(f"touch {victims[0]}", approve=approve, **ESCALATE),
                    await s.arun(["touch", victims[1]], approve=approve, **ESCALATE))

        t, r = asyncio.run(main())
        self.assertEqual((t.exit_code, r.exit_code), (0, 0), t.text)
        self.assertTrue(all(map(os.path.exists, victims)))
        self.assertEqual(len(loops), 3)
        self.assertTrue(loops[0] is loops[1] is loops[2], "not awaited on the caller's loop")

    def test_rejected(self) -> None:
        s = self.sb.session()
        victim = os.path.join(self.outside, "rejected")
        for answer in (False, "rejected"):
            async def approve(req: ApprovalRequest, answer: object = answer) -> object:
                await asyncio.sleep(0.01)
                return answer

            with self.assertRaises(EscalationRefused) as cm:
                asyncio.run(s.abash(f"touch {victim}", approve=approve, **ESCALATE))
            self.assertIn("rejected", cm.exception.message)
        self.assertFalse(os.path.exists(victim))

    def test_from_sync_calls(self) -> None:
        s = self.sb.session()

        async def allow(req: ApprovalRequest) -> str:
            await asyncio.sleep(0.01)
            return "allowed-once"

        victim = os.path.join(self.outside, "by-bash")
        self.assertEqual(s.bash(f"touch {victim}", approve=allow, **ESCALATE).exit_code, 0)
        self.assertTrue(os.path.exists(victim))
        written = os.path.join(self.outside, "by-write")
        s.write(written, "x", approve=allow, **ESCALATE)
        self.assertTrue(os.path.exists(written))

        # A sync call inside a running loop cannot await the answer: unavailable, refused.
        victim = os.path.join(self.outside, "in-a-loop")

        async def main() -> None:
            s.bash(f"touch {victim}", approve=allow, **ESCALATE)

        with self.assertRaises(EscalationRefused) as cm:
            asyncio.run(main())
        self.assertIn("no approval channel is available", cm.exception.message)
        self.assertFalse(os.path.exists(victim))

    def test_an_answer_later_than_the_timeout_is_cancelled(self) -> None:
        s = self.sb.session()
        victim = os.path.join(self.outside, "late")
        given_up: list[float] = []

        async def never(req: ApprovalRequest) -> bool:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                given_up.append(req.timeout)
                raise
            return True

        start = time.monotonic()
        with self.assertRaises(EscalationRefused) as cm:
            asyncio.run(s.abash(f"touch {victim}", timeout=0.5, approve=never, **ESCALATE))
        self.assertIn("was cancelled", cm.exception.message)
        with self.assertRaises(EscalationRefused) as cm:
            s.bash(f"touch {victim}", timeout=0.5, approve=never, **ESCALATE)
        self.assertIn("was cancelled", cm.exception.message)
        self.assertLess(time.monotonic() - start, 20)
        self.assertEqual(given_up, [0.5, 0.5])
        self.assertFalse(os.path.exists(victim))

    def test_cancelling_the_task_while_the_answer_is_awaited(self) -> None:
        s = self.sb.session()
        victim = os.path.join(self.outside, "cancelled")
        asked: list[ApprovalRequest] = []
        given_up: list[bool] = []

        async def never(req: ApprovalRequest) -> bool:
            asked.append(req)
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                given_up.append(True)
                raise
            return True

        async def main() -> None:
            task = asyncio.create_task(s.abash(f"touch {victim}", approve=never, **ESCALATE))
            for _ in range(600):
                if asked:
                    break
                await asyncio.sleep(0.05)
            self.assertTrue(asked, "never asked")
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task

        start = time.monotonic()
        asyncio.run(main())
        # Promptly: not after the answer's own timeout (the call's, bash.timeout's 120 s).
        self.assertLess(time.monotonic() - start, 20)
        self.assertGreater(asked[0].timeout, 20)
        self.assertEqual(given_up, [True])
        self.assertFalse(os.path.exists(victim))
        # The call's thread was not left waiting for the answer.
        for _ in range(100):
            if not [t for t in threading.enumerate() if t.name == "dsh-sandbox-call"]:
                break
            time.sleep(0.05)
        self.assertEqual([t.name for t in threading.enumerate()
                          if t.name == "dsh-sandbox-call"], [])


class Threads(Scratch):
    def test_sixteen_threads_at_once(self) -> None:
        n = 16
        barrier = threading.Barrier(n)
        results: list = [None] * n

        def worker(i: int) -> None:
            try:
                barrier.wait()
                r = self.sb.run(["sh", "-c", 'echo "$0"; echo "$0" > "f$0"', str(i)],
                                timeout=60)
                t = self.sb.bash(f"cat f{i}", timeout=60) if i % 2 else self.sb.read(f"f{i}")
                results[i] = (r.exit_code, r.stdout, t.text)
            except BaseException as e:  # reported below, with the thread's index
                results[i] = e

        # Daemon threads: one that never returns fails this test, not the whole run at exit.
        threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(n)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 180
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        stuck = [i for i, t in enumerate(threads) if t.is_alive()]
        self.assertEqual(stuck, [], "threads still in their call; the processes then:\n" +
                         descendants())
        for i in range(n):
            self.assertEqual(results[i], (0, f"{i}\n".encode(), f"{i}\n"), f"thread {i}")


class MissingLibrary(unittest.TestCase):
    def test_a_clear_error(self) -> None:
        code = ("import dsh_sandbox\n"
                "try:\n"
                "    dsh_sandbox.Sandbox()\n"
                "except dsh_sandbox.LibraryNotFound as e:\n"
                "    print(e)\n")
        env = dict(os.environ, DSH_SANDBOX_LIBRARY="/nonexistent/libdshsandbox.so.0")
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout
        self.assertIn("DSH_SANDBOX_LIBRARY=/nonexistent/libdshsandbox.so.0", out)
        self.assertIn("libdshsandbox0", out)
        # Without the variable it names the loader's search.
        env = {k: v for k, v in os.environ.items()
               if k not in ("DSH_SANDBOX_LIBRARY", "LD_LIBRARY_PATH")}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout
        if out:  # empty where the library is installed system-wide
            self.assertIn("dynamic loader's search for libdshsandbox.so.0", out)

    def test_import_needs_no_library(self) -> None:
        self.assertTrue(hasattr(dsh_sandbox, "Sandbox"))


if __name__ == "__main__":
    unittest.main()
