# SPDX-License-Identifier: MIT
"""dsh_sandbox: DeepSeek Harness's sandbox policy for Python, over libdshsandbox (ctypes,
in-process, standard library only).

    from dsh_sandbox import Sandbox
    sb = Sandbox(mode="workspace-write", workspace="/src/app", network="none")
    r = sb.run(["make", "-j2"], timeout=60)   # r.exit_code, r.stdout, r.stderr, r.denied
    t = sb.bash("rm -rf build")               # DSH's bash tool: t.text is what the model reads

Each call is one dsb_call of its own, so any number of threads may call at once. A call that
fails raises the SandboxError subclass of its stable code (errors.py); a command that runs and
fails (non-zero exit, a sandbox denial, a timeout) is a result, as in DSH.
"""
import asyncio
import concurrent.futures
import ctypes
import inspect
import json
import os
import threading
from dataclasses import dataclass, field
from typing import (Any, Awaitable, Callable, Optional, Protocol, Sequence, Union,
                    overload)

from . import _lib
from ._lib import LibraryNotFound
from .errors import *  # noqa: F401,F403 (the exception classes are the package's API)
from .errors import BY_CODE, SandboxError

__all__ = ["Sandbox", "Session", "RunResult", "ToolResult", "ApprovalRequest", "Approver",
           "LibraryNotFound", "SandboxError", "library_version"] + [c.__name__ for c in
                                                                  BY_CODE.values()]

_TOOLS = {"bash": 0, "exec": 1, "write": 2, "edit": 3, "read": 4}  # checked by test_layout


@dataclass(frozen=True)
class ApprovalRequest:
    """What an approval callback decides on: an escalation of one call."""
    tool: str                     # "bash", "write", "edit"
    subject: str                  # the command or the path
    mode: str                     # the mode asked for: "workspace-write", "danger-full-access"
    justification: str
    reason: str                   # "escalate sandbox to MODE: JUSTIFICATION"
    id: Optional[str] = None      # the audit id in the session log
    session_id: Optional[str] = None
    call_id: Optional[str] = None
    timeout: float = 0.0          # seconds an async answer may take; later it is cancelled
    # What the sandbox refused the call this one retries, one "[sandbox: ...]" line each, as
    # the model read them (paths are the command's: escape them before showing them); None.
    refused: Optional[str] = None


Answer = Union[bool, str]
# True: allowed once; False: rejected; or an outcome word ("allowed-once", "rejected",
# "cancelled", "unavailable"); or an awaitable of one (an async def), awaited on the event loop
# of an arun()/abash(), else in a loop of its own. A callback that raises counts as unavailable
# (refused).
Approver = Callable[[ApprovalRequest], Union[Answer, Awaitable[Answer]]]


@dataclass
class RunResult:
    """A command's outcome. exit_code is None when a signal (its name in signal) killed it."""
    exit_code: Optional[int]
    signal: Optional[str]
    stdout: bytes
    stderr: bytes
    timed_out: bool
    denied: bool
    mode: str
    result: dict[str, Any] = field(repr=False)  # dsb_call_render_json()'s object

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def refusals(self) -> Optional[list[dict[str, Any]]]:
        """What the sandbox refused, from its evidence: {"op", "path", "named", "errno",
        "reason"} each (the first 16 paths); None where it could not watch."""
        return self.result.get("sandbox", {}).get("refusals")


@dataclass
class ToolResult:
    """One DSH tool call's result: text is what the model reads, byte for byte (data)."""
    tool: str
    data: bytes
    result: dict[str, Any] = field(repr=False)

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")

    @property
    def exit_code(self) -> Optional[int]:
        return self.result.get("exitCode")

    @property
    def timed_out(self) -> bool:
        return bool(self.result.get("timedOut"))

    @property
    def denied(self) -> bool:
        return bool(self.result.get("sandbox", {}).get("denied"))

    @property
    def path(self) -> Optional[str]:
        return self.result.get("path")

    @property
    def refusals(self) -> Optional[list[dict[str, Any]]]:
        """As RunResult.refusals."""
        return self.result.get("sandbox", {}).get("refusals")


def library_version() -> str:
    """The loaded libdshsandbox's version (LibraryNotFound when there is none)."""
    return _lib.load().dsb_version().decode()


def _b(s: Optional[str]) -> Optional[bytes]:
    return None if s is None else s.encode()


def _enum(lib: ctypes.CDLL, what: str, value: Optional[str]) -> int:
    if value is None:
        return -1  # _DSB_*_INVALID: the configured one
    v = getattr(lib, f"dsb_{what}_from_string")(value.encode())
    if v < 0:
        raise BY_CODE["INVALID_ARGS"](f"unknown {what.replace('_', ' ')} {value!r}")
    return int(v)


def _error(err: _lib.Error) -> SandboxError:
    name = _lib.load().dsb_code_name(err.code)
    cls = BY_CODE.get(name.decode() if name else "", SandboxError)
    return cls(err.message.decode("utf-8", "replace"), sys_errno=err.sys_errno,
               subject=err.subject.decode("utf-8", "replace"))


def _timeout_ms(timeout: Optional[float]) -> int:
    if timeout is None:
        return 0
    if timeout <= 0:
        raise BY_CODE["INVALID_ARGS"](f"timeout must be positive, not {timeout!r}")
    return max(1, int(timeout * 1000))


class _Call:
    """One dsb_call: made, given its callbacks, run once (in any thread), freed by its owner
    after the run returned, so a dsb_call_cancel() from elsewhere never races the free."""

    def __init__(self, sb: "Sandbox", req: _lib.Request, approve: Optional[Approver],
                 capture: bool) -> None:
        self.lib = _lib.load()
        self.req = req
        self.approve = approve
        self.out: list[bytes] = []
        self.err: list[bytes] = []
        # The event loop of the task awaiting an async call, set before its thread starts: an
        # awaitable answer is awaited there. None: a sync call.
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        # The answer being awaited on that loop, which cancel() cancels too: the thread that
        # waits for it is the call's, and must not wait for a task nobody awaits any more.
        self._lock = threading.Lock()
        self._pending: Optional[concurrent.futures.Future[Any]] = None
        self._cancelled = False
        setup = _lib.Setup(config_path=_b(sb.config), store_path=_b(sb.store),
                           cache_dir=_b(sb.cache_dir))
        err = _lib.Error()
        handle = ctypes.c_void_p()
        if self.lib.dsb_call_new(ctypes.byref(setup), ctypes.byref(handle),
                                 ctypes.byref(err)) < 0:
            raise _error(err)
        self.handle = handle
        # The callbacks live as long as the call: ctypes frees a thunk with its Python object.
        self._answer = _lib.ANSWERER(self._on_approval)
        self.lib.dsb_call_set_answerer(handle, self._answer, None)
        self._output = _lib.ON_OUTPUT(self._on_output) if capture else None
        if self._output:
            self.lib.dsb_call_set_on_output(handle, self._output, None)
            # An exec call's output is ours to collect, not this process's stdio to share.
            self.lib.dsb_call_set_capture(handle, True)

    def _on_approval(self, creq: Any, userdata: Any, ret: Any) -> int:
        if self.approve is None:
            return -1  # nobody to ask: unavailable, as the C default
        r = creq.contents

        def s(v: Optional[bytes]) -> Optional[str]:
            return None if v is None else v.decode("utf-8", "replace")

        request = ApprovalRequest(tool=s(r.tool_name) or "", subject=s(r.subject) or "",
                                  mode=s(r.mode) or "", justification=s(r.justification) or "",
                                  reason=s(r.reason) or "", id=s(r.id),
                                  session_id=s(r.session_id), call_id=s(r.call_id),
                                  refused=s(r.refused),
                                  timeout=r.timeout_ms / 1000)
        try:
            answer = self.approve(request)
            if inspect.isawaitable(answer):
                answer = self._await(answer, request.timeout)
        except BaseException:  # a throwing answerer: the approval service records unavailable
            # (nothing may cross into C: ctypes would print it and return 0, a success)
            return -1
        if answer is True:
            answer = "allowed-once"
        elif answer is False:
            answer = "rejected"
        if not isinstance(answer, str):
            return -1
        outcome = self.lib.dsb_approval_outcome_from_string(answer.encode())
        if outcome < 0:
            return -1
        ret[0] = outcome
        return 0

    def _await(self, answer: Awaitable[Answer], timeout: float) -> Optional[Answer]:
        """The answer an awaitable gives within timeout seconds (0: no limit), else
        "cancelled"; None (unavailable) when it cannot be awaited here."""
        limit = timeout if timeout > 0 else None
        if self.loop is None:
            # A sync call: a loop of its own in this thread, unless one runs here already,
            # which this thread, blocked in the call, could never let the answer finish on.
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                pass
            else:
                _discard(answer)
                return None
            try:
                return asyncio.run(_within(answer, limit))
            except (asyncio.TimeoutError, asyncio.CancelledError):
                return "cancelled"
        # An async call: on the caller's loop, the limit kept here in the call's thread, so
        # that a loop too busy to run the answer cannot hold the call past it either.
        with self._lock:
            if self._cancelled:  # the awaiting task is gone already
                _discard(answer)
                return "cancelled"
            pending: concurrent.futures.Future[Answer] = asyncio.run_coroutine_threadsafe(
                _within(answer, None), self.loop)
            self._pending = pending
        try:
            return pending.result(limit)
        except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
            pending.cancel()  # the answer is too late, or the awaiting task was cancelled
            return "cancelled"
        finally:
            with self._lock:
                self._pending = None

    def _on_output(self, userdata: Any, stream: int, buf: Any, n: int) -> None:
        (self.out if stream == 1 else self.err).append(ctypes.string_at(buf, n))

    def run(self) -> tuple[bytes, dict[str, Any]]:
        """Runs the call: (text, JSON result), or raises the error of a call that failed."""
        res = _lib.Result()
        err = _lib.Error()
        if self.lib.dsb_call_run(self.handle, ctypes.byref(self.req), ctypes.byref(res),
                                 ctypes.byref(err)) < 0:
            raise _error(err)
        try:
            text = ctypes.string_at(res.text, res.text_len) if res.text else b""
            js = ctypes.c_void_p()
            if self.lib.dsb_call_render_json(ctypes.byref(res), ctypes.byref(js),
                                             ctypes.byref(err)) < 0:
                raise _error(err)
            try:
                result = json.loads(ctypes.string_at(js.value))
            finally:
                _lib.free(js.value)
            if res.is_error:
                error = _error(res.error)
                error.text = text.decode("utf-8", "replace")
                error.result = result
                note = self.lib.dsb_call_approval_note(self.handle)
                if note:
                    error.message += f" ({note.decode('utf-8', 'replace')})"
                raise error
            return text, result
        finally:
            self.lib.dsb_call_result_done(ctypes.byref(res))

    def cancel(self) -> None:
        """Cancels the call, from any thread, and the answer it awaits on the loop if any."""
        self.lib.dsb_call_cancel(self.handle)
        with self._lock:
            self._cancelled = True
            pending = self._pending
        if pending is not None:
            pending.cancel()

    def free(self) -> None:
        if self.handle:
            self.lib.dsb_call_free(self.handle)
            self.handle = None

    def finish(self, make: Callable[["_Call"], Any]) -> Any:
        """make(self), which runs the call, then the call freed."""
        try:
            return make(self)
        finally:
            self.free()


def _store_cache_dir(store: Optional[str]) -> Optional[str]:
    """Where the CLI keeps the probe verdict for store (cmd-probe.c, cli_cache_dir()): the
    store root's cache directory, or None (no disk cache) when the store cannot be opened."""
    lib = _lib.load()
    handle = ctypes.c_void_p()
    if lib.dsb_store_open(_b(store), ctypes.byref(handle), None) < 0:
        return None
    try:
        return os.path.join(lib.dsb_store_root(handle).decode(), "cache")
    finally:
        lib.dsb_store_free(handle)


class _OnClass(Protocol):  # Sandbox.open_session
    def __call__(self, session_id: str, **options: Any) -> "Session": ...


_OnInstance = Callable[[str], "Session"]  # sb.open_session


class _OpenSession:
    """The session session_id (an id in the store, or a DSH log's path; SessionNotFound when
    there is none). On an instance, sb.open_session(id) opens it in sb's store; on the class,
    Sandbox.open_session(id, store=..., workspace=..., backend=...) makes the Sandbox of those
    keyword options (Sandbox()'s) first. A descriptor, since a plain method is one or the
    other."""

    @overload
    def __get__(self, sb: None, owner: type["Sandbox"]) -> _OnClass: ...

    @overload
    def __get__(self, sb: "Sandbox", owner: Optional[type] = None) -> _OnInstance: ...

    def __get__(self, sb: Optional["Sandbox"],
                owner: Optional[type] = None) -> Union[_OnClass, _OnInstance]:
        if sb is not None:
            return sb._open_session
        # Session's constructor takes its parent: from Session itself the parent is a Sandbox.
        make = Sandbox if owner is None or issubclass(owner, Session) else owner

        def open_session(session_id: str, **options: Any) -> Session:
            return make(**options)._open_session(session_id)

        open_session.__doc__ = self.__doc__
        open_session.__qualname__ = f"{make.__qualname__}.open_session"
        return open_session


class Sandbox:
    """Calls under one policy: mode ("read-only", "workspace-write", "danger-full-access"; None:
    the configured one), workspace (None: the configured root, else the current directory),
    network ("full", "none", "allowlist"; None: configured), backend ("bwrap", "landlock";
    None: the chain). store and config are the CLI's --store and --config (None: as the CLI
    finds them). cache_dir is where the backend's probe verdict is kept between calls and
    processes (None: as the CLI keeps it, in the store's cache directory; no disk cache when
    there is no store); without one every call probes the backend again first. approve is
    asked of escalations (an Approver: a function or an async def)."""

    def __init__(self, mode: Optional[str] = None, workspace: Optional[str] = None,
                 network: Optional[str] = None, *, backend: Optional[str] = None,
                 store: Optional[str] = None, config: Optional[str] = None,
                 cache_dir: Optional[str] = None, approve: Optional[Approver] = None) -> None:
        lib = _lib.load()
        self.mode = mode
        self.workspace = workspace
        self.network = network
        self.backend = backend
        self.store = store
        self.config = config
        # Resolved once: a Session is given its parent's, so every call of both shares it.
        self.cache_dir = cache_dir if cache_dir is not None else _store_cache_dir(store)
        self.approve = approve
        self.session_id: Optional[str] = None
        # Checked once here so that a typo fails at construction, not at the first call.
        self._mode = _enum(lib, "mode", mode)
        self._network = _enum(lib, "network_access", network)
        self._backend = _enum(lib, "backend", backend)

    def _request(self, tool: str, timeout: Optional[float], cwd: Optional[str],
                 sandbox_permissions: Optional[str], justification: Optional[str],
                 call_id: Optional[str]) -> _lib.Request:
        return _lib.Request(
            tool=_TOOLS[tool], session=_b(self.session_id), mode=self._mode,
            workspace=_b(self.workspace), backend=self._backend, workdir=_b(cwd),
            timeout_ms=_timeout_ms(timeout), content_fd=-1, network=self._network,
            sandbox_permissions=_b(sandbox_permissions), justification=_b(justification),
            call_id=_b(call_id))

    def _call(self, req: _lib.Request, approve: Optional[Approver],
              capture: bool = False) -> _Call:
        return _Call(self, req, approve if approve is not None else self.approve, capture)

    @staticmethod
    def _tool(tool: str) -> Callable[[_Call], ToolResult]:
        return lambda call: ToolResult(tool, *call.run())

    @staticmethod
    def _run_result(call: _Call) -> RunResult:
        _, result = call.run()
        sandbox = result.get("sandbox", {})
        return RunResult(exit_code=result.get("exitCode"), signal=result.get("signal"),
                         stdout=b"".join(call.out), stderr=b"".join(call.err),
                         timed_out=bool(result.get("timedOut")),
                         denied=bool(sandbox.get("denied")), mode=sandbox.get("mode", ""),
                         result=result)

    # ---- argv, for programs -------------------------------------------------------------

    def _run_call(self, argv: Sequence[str], timeout: Optional[float], cwd: Optional[str],
                  sandbox_permissions: Optional[str], justification: Optional[str],
                  approve: Optional[Approver]) -> _Call:
        if isinstance(argv, (str, bytes)) or not argv:
            raise BY_CODE["INVALID_ARGS"]("argv must be a non-empty list of strings")
        # The exec tool, capturing (dsb_call_set_capture()): the argv itself is what the
        # sandbox runs, with no shell started first, and its output comes whole through the
        # on-output callback, not as the bounded tails of the result.
        # exec starts where the process is unless told: ".", the workspace, as bash starts.
        req = self._request("exec", timeout, cwd if cwd is not None else ".",
                            sandbox_permissions, justification, None)
        words = [a.encode() for a in argv]
        req.argv = (ctypes.c_char_p * (len(words) + 1))(*words, None)
        return self._call(req, approve, capture=True)

    def run(self, argv: Sequence[str], *, timeout: Optional[float] = None,
            cwd: Optional[str] = None, sandbox_permissions: Optional[str] = None,
            justification: Optional[str] = None,
            approve: Optional[Approver] = None) -> RunResult:
        """Runs argv (argv[0] looked up in PATH) confined, stdin /dev/null, its whole output
        captured. timeout in seconds (None: none, as subprocess.run);
        cwd absolute or relative to the workspace (None: the workspace)."""
        return self._run_call(argv, timeout, cwd, sandbox_permissions, justification,
                              approve).finish(self._run_result)

    async def arun(self, argv: Sequence[str], *, timeout: Optional[float] = None,
                   cwd: Optional[str] = None, sandbox_permissions: Optional[str] = None,
                   justification: Optional[str] = None,
                   approve: Optional[Approver] = None) -> RunResult:
        """run() for asyncio: cancelling the task kills the command and its whole tree, or
        cancels the answer of an async approve still awaited."""
        call = self._run_call(argv, timeout, cwd, sandbox_permissions, justification, approve)
        return await _in_thread(call, self._run_result)

    # ---- DSH's tools, for a model ---------------------------------------------------------

    def _bash_call(self, command: str, timeout: Optional[float], cwd: Optional[str],
                   sandbox_permissions: Optional[str], justification: Optional[str],
                   approve: Optional[Approver], call_id: Optional[str]) -> _Call:
        req = self._request("bash", timeout, cwd, sandbox_permissions, justification, call_id)
        req.command = command.encode()
        return self._call(req, approve)

    def bash(self, command: str, *, timeout: Optional[float] = None, cwd: Optional[str] = None,
             sandbox_permissions: Optional[str] = None, justification: Optional[str] = None,
             approve: Optional[Approver] = None, call_id: Optional[str] = None) -> ToolResult:
        """DSH's bash tool: `bash -c command`; .text is what the model reads (dsh-compat §6.8).
        An escalation (sandbox_permissions with justification) is asked of approve."""
        return self._bash_call(command, timeout, cwd, sandbox_permissions, justification,
                               approve, call_id).finish(self._tool("bash"))

    async def abash(self, command: str, *, timeout: Optional[float] = None,
                    cwd: Optional[str] = None, sandbox_permissions: Optional[str] = None,
                    justification: Optional[str] = None, approve: Optional[Approver] = None,
                    call_id: Optional[str] = None) -> ToolResult:
        """bash() for asyncio: cancelling the task kills the command and its whole tree, or
        cancels the answer of an async approve still awaited."""
        call = self._bash_call(command, timeout, cwd, sandbox_permissions, justification,
                               approve, call_id)
        return await _in_thread(call, self._tool("bash"))

    def write(self, path: str, content: Union[str, bytes], *,
              sandbox_permissions: Optional[str] = None, justification: Optional[str] = None,
              approve: Optional[Approver] = None, call_id: Optional[str] = None) -> ToolResult:
        """DSH's write tool, fenced: path absolute or relative to the workspace."""
        data = content.encode() if isinstance(content, str) else bytes(content)
        req = self._request("write", None, None, sandbox_permissions, justification, call_id)
        req.path = path.encode()
        req.content = data
        req.content_len = len(data)
        return self._call(req, approve).finish(self._tool("write"))

    def edit(self, path: str, old: str, new: str, *, replace_all: bool = False,
             sandbox_permissions: Optional[str] = None, justification: Optional[str] = None,
             approve: Optional[Approver] = None, call_id: Optional[str] = None) -> ToolResult:
        """DSH's edit tool, fenced: old replaced by new (every one with replace_all)."""
        req = self._request("edit", None, None, sandbox_permissions, justification, call_id)
        req.path = path.encode()
        req.old_string = old.encode()
        req.new_string = new.encode()
        req.replace_all = replace_all
        return self._call(req, approve).finish(self._tool("edit"))

    def read(self, path: str) -> ToolResult:
        """A file's text (.text); only sandbox-policy.denyRead refuses it."""
        req = self._request("read", None, None, None, None, None)
        req.path = path.encode()
        return self._call(req, None).finish(self._tool("read"))

    # ---- sessions -------------------------------------------------------------------------

    def session(self, cwd: Optional[str] = None) -> "Session":
        """A new DSH session in the store, its root cwd (None: the workspace, else the current
        directory); its log decides its mode from then on."""
        root = os.path.abspath(cwd or self.workspace or os.getcwd())
        return Session(self, self._session("dsb_session_create", root))

    def _open_session(self, session_id: str) -> "Session":
        """The session session_id (an id in the store, or a DSH log's path): SessionNotFound
        when there is none."""
        self._session("dsb_session_open", session_id)
        return Session(self, session_id)

    open_session = _OpenSession()

    def _session(self, fn: str, arg: str) -> str:
        """The id of the session that dsb_session_create() or dsb_session_open() gives for
        arg in the store."""
        lib = _lib.load()
        store = ctypes.c_void_p()
        handle = ctypes.c_void_p()
        err = _lib.Error()
        if lib.dsb_store_open(_b(self.store), ctypes.byref(store), ctypes.byref(err)) < 0:
            raise _error(err)
        try:
            if getattr(lib, fn)(store, arg.encode(), ctypes.byref(handle),
                                ctypes.byref(err)) < 0:
                raise _error(err)
            sid: str = lib.dsb_session_id(handle).decode()
            lib.dsb_session_free(handle)
            return sid
        finally:
            lib.dsb_store_free(store)


class Session(Sandbox):
    """A DSH session's calls: its log decides the mode (an explicit mode of the Sandbox it came
    from is not carried over), and escalations are recorded in it as DSH's audit pair."""

    def __init__(self, parent: Sandbox, session_id: str) -> None:
        super().__init__(None, parent.workspace, parent.network, backend=parent.backend,
                         store=parent.store, config=parent.config, cache_dir=parent.cache_dir,
                         approve=parent.approve)
        self.session_id = session_id

    @property
    def id(self) -> str:
        assert self.session_id is not None
        return self.session_id


async def _within(answer: Awaitable[Answer], timeout: Optional[float]) -> Answer:
    """answer awaited, for at most timeout seconds (None: no limit). A coroutine, which is what
    asyncio.run() and run_coroutine_threadsafe() take, whatever the awaitable."""
    return await asyncio.wait_for(answer, timeout)


def _discard(answer: Awaitable[Answer]) -> None:
    """An awaitable that will not be awaited: a coroutine is closed, which spares the
    "never awaited" warning."""
    if inspect.iscoroutine(answer):
        answer.close()


async def _in_thread(call: _Call, make: Callable[[_Call], Any]) -> Any:
    """make(call), which runs the call, in a thread of its own. A cancellation of the awaiting
    task cancels the call, waits until its command is dead, then propagates. The call is freed
    here, once its run has returned, so that a dsb_call_cancel() never races dsb_call_free()."""
    loop = asyncio.get_running_loop()
    call.loop = loop  # where the call's awaitable answers are awaited
    done: asyncio.Future[Any] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if not done.done():
            (done.set_result if ok else done.set_exception)(value)

    def worker() -> None:
        try:
            value, ok = make(call), True
        except BaseException as e:  # delivered to the awaiting task
            value, ok = e, False
        loop.call_soon_threadsafe(settle, ok, value)

    threading.Thread(target=worker, name="dsh-sandbox-call", daemon=True).start()
    try:
        return await asyncio.shield(done)
    except asyncio.CancelledError:
        call.cancel()
        # The call ends quickly once cancelled (SIGTERM, then SIGKILL after bash.graceMs);
        # until it has, the command may still be running, so the cancellation waits for it.
        while not done.done():
            try:
                await asyncio.shield(done)
            except asyncio.CancelledError:
                continue
            except BaseException:
                break
        raise
    finally:
        if done.done():
            call.free()
