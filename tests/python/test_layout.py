# SPDX-License-Identifier: MIT
"""The ctypes structures of dsh_sandbox/_lib.py against the C headers (layout.c): every size,
every member's offset, the enum values passed as numbers."""
import ctypes
import json
import os
import subprocess
import unittest

import helpers  # noqa: F401 (the environment)
from dsh_sandbox import _TOOLS, _lib


class Layout(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        out = subprocess.run([os.environ["DSB_PY_LAYOUT"]], check=True, capture_output=True)
        cls.c = json.loads(out.stdout)

    def test_every_struct_matches_the_header(self) -> None:
        self.assertEqual(set(self.c["structs"]), set(_lib.STRUCTS))
        for name, cls in _lib.STRUCTS.items():
            with self.subTest(struct=name):
                c = self.c["structs"][name]
                self.assertEqual(ctypes.sizeof(cls), c["size"], f"sizeof({name})")
                py = {f[0]: getattr(cls, f[0]).offset for f in cls._fields_}
                self.assertEqual(py, c["fields"], f"the members of {name}")

    def test_enums(self) -> None:
        self.assertEqual(_TOOLS, self.c["tools"])
        self.assertEqual(set(self.c["invalid"]), {-1}, "the _INVALID values the binding passes")
        self.assertEqual(self.c["enum_size"], ctypes.sizeof(ctypes.c_int))
        lib = _lib.load()
        for name, value in _TOOLS.items():
            self.assertEqual(lib.dsb_tool_from_string(name.encode()), value)


if __name__ == "__main__":
    unittest.main()
