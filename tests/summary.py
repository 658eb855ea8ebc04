#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Counts single test cases across a meson test log and tests/check.sh's step results, and prints
the closing line "N passed, N failed, N skipped". Exits 1 when anything failed.

A TAP script counts its ok / not ok lines (a "# SKIP" directive is a skip), a cmocka binary its
PASSED / FAILED summary, anything else (fuzz replays, a binary that crashed before its summary,
a step) counts once by its result.
"""
import json
import os
import re
import sys

TAP = re.compile(r"^(not )?ok \d+\b(.*)$", re.M)
CMOCKA_PASSED = re.compile(r"^\[  PASSED  \] (\d+) test", re.M)
CMOCKA_FAILED = re.compile(r"^\[  FAILED  \] (\d+) test", re.M)
MAX_NOTES = 20  # a failed case's last diagnostic lines printed in the summary


def print_failed_cases(stdout, output):
    """The failed TAP cases and the diagnostics under each (or, where no case failed, the end of
    the test's whole @output), so that the tail of a CI log, often all that is kept, says what
    failed and why."""
    lines = stdout.splitlines()
    failed = [i for i, line in enumerate(lines) if line.startswith("not ok ")]
    if not failed:
        print_notes([line for line in output.splitlines() if line.strip()])
    for i in failed:
        print(f"  {lines[i]}")
        end = i + 1
        while end < len(lines) and lines[end].startswith("#"):
            end += 1
        print_notes(lines[i + 1:end])


def print_notes(notes):
    for note in notes[-MAX_NOTES:]:
        print(f"    {note[:300]}")


def count_meson(path):
    passed = failed = skipped = 0
    with open(path, encoding="utf-8", errors="replace") as log:
        for line in log:
            entry = json.loads(line)
            result = entry["result"]
            output = (entry.get("stdout") or "") + "\n" + (entry.get("stderr") or "")
            tap = TAP.findall(entry.get("stdout") or "")
            ok_result = result in ("OK", "EXPECTEDFAIL")
            if result == "SKIP":
                skipped += 1
            elif tap:
                for negated, rest in tap:
                    if negated:
                        failed += 1
                    elif "# SKIP" in rest:
                        skipped += 1
                    else:
                        passed += 1
                if not ok_result and not any(n for n, _ in tap):
                    failed += 1  # died after its last reported case
            elif CMOCKA_PASSED.search(output) or CMOCKA_FAILED.search(output):
                p = CMOCKA_PASSED.search(output)
                f = CMOCKA_FAILED.search(output)
                passed += int(p.group(1)) if p else 0
                failed += int(f.group(1)) if f else 0
                if not ok_result and not f:
                    failed += 1  # e.g. a leak reported after the summary
            elif ok_result:
                passed += 1
            else:
                failed += 1
            if not ok_result and result != "SKIP":
                print(f"FAILED: {entry['name']} ({result})")
                print_failed_cases(entry.get("stdout") or "", output)
    return passed, failed, skipped


def count_steps(path):
    passed = failed = 0
    with open(path, encoding="utf-8") as steps:
        for line in steps:
            verdict, _, name = line.rstrip("\n").partition(" ")
            if verdict == "pass":
                passed += 1
            else:
                failed += 1
                print(f"FAILED: {name}")
    return passed, failed


def main():
    passed, failed, skipped = count_meson(sys.argv[1])
    for path in sys.argv[2:]:
        p, f = count_steps(path)
        passed += p
        failed += f
    # A machine that has every feature must not skip: a skipped confinement test there
    # would prove nothing (DSB_REQUIRE_NO_SKIPS is set by tests/check.sh after probing).
    if skipped and os.environ.get("DSB_REQUIRE_NO_SKIPS") == "1":
        print(f"FAILED: {skipped} test(s) skipped on a machine where every backend works")
        failed += skipped
        skipped = 0
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
