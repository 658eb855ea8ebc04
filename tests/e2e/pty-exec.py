#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`dsh-sandbox exec` on a terminal, for tests/e2e/t-harm-signals.sh (standard library only).

A confined command runs in a process group of its own, so exec lends it the terminal's
foreground while it runs. Each subcommand runs exec on a fresh pty and asserts what a person
would see; it exits 0 on success and prints the reason (and the terminal's bytes) on failure.

  ctrl-c BACKEND MODE STATUS [TRAP]
                              Ctrl-C reaches the command, exec exits STATUS, and the session's
                              process group has the terminal again, with its settings as they
                              were (the command changed them); with TRAP "trap", its INT trap
                              must have run
  read BACKEND MODE           a command reads a line from the terminal through exec
  ctrl-z BACKEND MODE         Ctrl-Z stops the job in an interactive shell, `fg` continues it,
                              and it then reads the terminal

$DSH_SANDBOX is the binary; the workspace is the current directory.
"""
import os
import pty
import select
import sys
import termios
import time

DSB = os.environ["DSH_SANDBOX"]
TIMEOUT = 30


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class Pty:
    """A child on a new pty (its session leader), and what it printed."""

    def __init__(self, child):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            try:
                child()
            finally:
                os._exit(99)
        self.buf = b""

    def expect(self, text, timeout=TIMEOUT):
        want = text.encode()
        end = time.monotonic() + timeout
        while want not in self.buf:
            left = end - time.monotonic()
            check(left > 0, "no %r within %ss; the terminal said %r" % (text, timeout, self.buf))
            r, _, _ = select.select([self.fd], [], [], left)
            if not r:
                continue
            try:
                data = os.read(self.fd, 4096)
            except OSError:
                data = b""
            check(data, "the terminal closed before %r; it said %r" % (text, self.buf))
            self.buf += data

    def send(self, data):
        os.write(self.fd, data)

    def close(self):
        os.close(self.fd)
        _, status = os.waitpid(self.pid, 0)
        return status


def exec_argv(backend, mode, script):
    return [DSB, "exec", "--backend", backend, "--mode", mode, "--workspace", os.getcwd(),
            "--", "sh", "-c", script]


def report_after(argv):
    """In the pty's session leader: runs @argv in our own process group (no job control, as a
    script would), then reports its status and whether the terminal is ours again."""
    def child():
        before = termios.tcgetattr(0)
        pid = os.fork()
        if pid == 0:
            os.execvp(argv[0], argv)
        _, status = os.waitpid(pid, 0)
        fg = os.tcgetpgrp(0)
        same = termios.tcgetattr(0) == before
        os.write(1, ("\nstatus=%d fg-ours=%s modes-restored=%s end\n" %
                     (os.waitstatus_to_exitcode(status), fg == os.getpgrp(), same)).encode())
    return child


def cmd_ctrl_c(argv):
    backend, mode, status = argv[0], argv[1], int(argv[2])
    trap = len(argv) > 3 and argv[3] == "trap"
    # The command leaves the terminal changed (no echo, no canonical mode); exec restores it.
    script = 'stty -echo -icanon; trap "echo got-int; exit 3" INT; echo ready; sleep 30'
    p = Pty(report_after(exec_argv(backend, mode, script)))
    p.expect("ready")
    time.sleep(0.3)
    p.send(b"\x03")
    p.expect(" end")
    out = p.buf.decode(errors="replace")
    check("got-int" in out or not trap, "the command's trap did not run: %r" % out)
    check("status=%d " % status in out, "exec's status, expected %d: %r" % (status, out))
    check("fg-ours=True" in out, "the terminal's foreground is not the session's: %r" % out)
    check("modes-restored=True" in out, "the terminal's settings were not restored: %r" % out)
    p.close()


def cmd_read(argv):
    backend, mode = argv[0], argv[1]
    script = 'echo ready; read line; echo "got=[$line]"'
    p = Pty(report_after(exec_argv(backend, mode, script)))
    p.expect("ready")
    p.send(b"hello tty\n")
    p.expect(" end")
    out = p.buf.decode(errors="replace")
    check("got=[hello tty]" in out, "the command did not read the terminal: %r" % out)
    check("status=0 " in out, "exec's status: %r" % out)
    check("fg-ours=True" in out, "the terminal's foreground is not the session's: %r" % out)
    p.close()


def cmd_ctrl_z(argv):
    backend, mode = argv[0], argv[1]

    def shell():
        os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])

    p = Pty(shell)
    p.send(b"PS1='$ '; stty -echo\n")
    script = 'echo ready; read line; echo "got=[$line]"'
    line = " ".join("'%s'" % a.replace("'", "'\\''") for a in exec_argv(backend, mode, script))
    # Alone on its line: a list would go on past the stopped job.
    p.send((line + "\n").encode())
    p.expect("ready")
    time.sleep(0.3)
    p.send(b"\x1a")
    p.expect("Stopped")
    # The shell has the terminal while the job is stopped: it runs this.
    p.send(b"echo shell-has-it\n")
    p.expect("shell-has-it")
    p.send(b"fg\n")
    time.sleep(0.5)
    p.send(b"after fg\n")
    p.expect("got=")
    p.send(b"echo exec-status=$?\n")
    p.expect("exec-status=")
    p.expect("$ ")
    out = p.buf.decode(errors="replace")
    check("got=[after fg]" in out, "the continued command did not read the terminal: %r" % out)
    check("exec-status=0" in out, "exec's status: %r" % out)
    p.send(b"exit\n")
    p.close()


def main():
    cmd = sys.argv[1].replace("-", "_")
    try:
        globals()["cmd_" + cmd](sys.argv[2:])
    except Failure as e:
        print("FAIL: %s" % e, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
