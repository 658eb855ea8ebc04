# SPDX-License-Identifier: MIT
"""dsh_sandbox/errors.py is what gen_errors.py makes of include/dsb/codes.def, and its codes
are the library's, in the library's order."""
import os
import subprocess
import sys
import unittest

from helpers import SOURCE_ROOT
import dsh_sandbox
from dsh_sandbox import _lib, errors


class Codes(unittest.TestCase):
    def test_committed_file_is_generated_from_codes_def(self) -> None:
        py = os.path.join(SOURCE_ROOT, "bindings", "python")
        made = subprocess.run(
            [sys.executable, os.path.join(py, "gen_errors.py"),
             os.path.join(SOURCE_ROOT, "include", "dsb", "codes.def")],
            check=True, capture_output=True, text=True).stdout
        with open(os.path.join(py, "dsh_sandbox", "errors.py"), encoding="utf-8") as f:
            self.assertEqual(f.read(), made,
                             "run bindings/python/gen_errors.py include/dsb/codes.def "
                             "bindings/python/dsh_sandbox/errors.py")

    def test_codes_are_the_librarys(self) -> None:
        lib = _lib.load()
        names = []
        while (name := lib.dsb_code_name(len(names))) is not None:
            names.append(name.decode())
        self.assertEqual(tuple(names), errors.CODES)

    def test_one_exported_class_per_code(self) -> None:
        for code in errors.CODES[1:]:
            cls = errors.BY_CODE[code]
            self.assertEqual(cls.code, code)
            self.assertIs(getattr(dsh_sandbox, cls.__name__), cls)
            self.assertTrue(issubclass(cls, dsh_sandbox.SandboxError))
        self.assertEqual(dsh_sandbox.FsSandboxDenied.dsh_error, "FsError")
        self.assertTrue(issubclass(dsh_sandbox.InvalidArgs, ValueError))


if __name__ == "__main__":
    unittest.main()
