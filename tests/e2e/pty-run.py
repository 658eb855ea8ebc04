#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pty-run.py [--answer WAIT KEYS] -- ARGV...: runs ARGV on a new pseudo-terminal (its
controlling terminal, stdin, stdout and stderr) and writes everything the terminal was sent,
byte for byte, to stdout. With --answer, once WAIT has appeared, KEYS (Python escapes: '\\n',
'\\x03') are typed. Output processing is off (no CR added before each newline), so a CR or an
ESC in the transcript is one the program wrote. Exits with the program's status (128+N for a
signal). Standard library only.
"""
import os
import pty
import sys
import termios


def main(argv):
    wait = keys = None
    if argv[:1] == ["--answer"]:
        wait, keys = argv[1].encode(), argv[2].encode().decode("unicode_escape").encode()
        argv = argv[3:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    pid, fd = pty.fork()
    if pid == 0:
        attrs = termios.tcgetattr(0)
        attrs[1] &= ~termios.OPOST
        termios.tcsetattr(0, termios.TCSANOW, attrs)
        os.execvp(argv[0], argv)
    seen = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        if wait is not None and wait in seen:
            os.write(fd, keys)
            wait = None
    _, status = os.waitpid(pid, 0)
    sys.stdout.buffer.write(seen)
    sys.stdout.buffer.flush()
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
