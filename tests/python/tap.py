# SPDX-License-Identifier: MIT
"""Runs the test_*.py modules of a directory with unittest and reports each case in TAP, which
meson counts one by one (tests/summary.py)."""
import sys
import unittest


class Tap(unittest.TestResult):
    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    def _line(self, test: unittest.TestCase, ok: bool, extra: str = "") -> None:
        self.n += 1
        print(f"{'ok' if ok else 'not ok'} {self.n} - {test.id()}{extra}", flush=True)

    def addSuccess(self, test):  # noqa: N802 (unittest's names)
        super().addSuccess(test)
        self._line(test, True)

    def addSkip(self, test, reason):  # noqa: N802
        super().addSkip(test, reason)
        self._line(test, True, f" # SKIP {reason}")

    def _fail(self, test, err, kind):
        self._line(test, False)
        text = self._exc_info_to_string(err, test)
        print("\n".join(f"# {kind}: {line}" for line in text.splitlines()), flush=True)

    def addFailure(self, test, err):  # noqa: N802
        super().addFailure(test, err)
        self._fail(test, err, "failure")

    def addError(self, test, err):  # noqa: N802
        super().addError(test, err)
        self._fail(test, err, "error")

    def addExpectedFailure(self, test, err):  # noqa: N802
        super().addExpectedFailure(test, err)
        self._fail(test, err, "expected failure not allowed")

    def addUnexpectedSuccess(self, test):  # noqa: N802
        super().addUnexpectedSuccess(test)
        self._line(test, False, " (unexpected success)")


def main() -> int:
    sys.path.insert(0, sys.argv[1])
    suite = unittest.defaultTestLoader.discover(sys.argv[1], pattern="test_*.py",
                                                top_level_dir=sys.argv[1])
    print(f"1..{suite.countTestCases()}", flush=True)
    result = Tap()
    suite.run(result)
    return 0 if result.wasSuccessful() and result.n == suite.countTestCases() else 1


if __name__ == "__main__":
    sys.exit(main())
