# SPDX-License-Identifier: MIT
"""The package as a user installs it: pip, offline, from bindings/python (with the setuptools
and wheel already on the machine), into a fresh directory; then README.md's Python example run
with what was installed."""
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from helpers import SOURCE_ROOT


def readme_example() -> str:
    with open(os.path.join(SOURCE_ROOT, "README.md"), encoding="utf-8") as f:
        blocks = re.findall(r"^```python\n(.*?)^```", f.read(), flags=re.S | re.M)
    if not blocks:
        raise AssertionError("README.md has no ```python block")
    return blocks[0]


class Install(unittest.TestCase):
    def test_pip_install_offline_and_the_readme_example(self) -> None:
        for module in ("pip", "setuptools", "wheel"):
            if importlib.util.find_spec(module) is None:
                self.skipTest(f"no {module} here: scripts/install-deps.sh installs it")
        top = tempfile.mkdtemp(prefix="dsb-py-install.", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, top, ignore_errors=True)
        # pip builds in the tree it is given: a copy, so the checkout (read-only to nobody)
        # stays clean.
        src = os.path.join(top, "src")
        shutil.copytree(os.path.join(SOURCE_ROOT, "bindings", "python"), src,
                        ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
        target = os.path.join(top, "site")
        env = dict(os.environ, HOME=top, PIP_DISABLE_PIP_VERSION_CHECK="1")
        env.pop("PYTHONPATH", None)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index",
                        "--no-build-isolation", "--no-cache-dir", "--target", target, src],
                       env=env, check=True, capture_output=True)
        pkg = os.path.join(target, "dsh_sandbox")
        for name in ("__init__.py", "_lib.py", "errors.py", "py.typed"):
            self.assertTrue(os.path.isfile(os.path.join(pkg, name)), name)

        ws = os.path.join(top, "ws")
        os.mkdir(ws)
        with open(os.path.join(top, "example.py"), "w", encoding="utf-8") as f:
            f.write("import dsh_sandbox\n"
                    f"assert dsh_sandbox.__file__.startswith({target!r}), dsh_sandbox.__file__\n")
            f.write(readme_example())
        env["PYTHONPATH"] = target
        if os.environ.get("DSB_PY_PRELOADED"):  # a sanitized library (run.sh)
            env["LD_PRELOAD"] = os.environ["DSB_PY_PRELOADED"]
        out = subprocess.run([sys.executable, os.path.join(top, "example.py")], cwd=ws,
                             env=env, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertEqual(lines[0], "b'hi\\n'")
        self.assertIn("[sandbox: file access denied under workspace-write mode]", lines)
        self.assertEqual(lines[-1], "FS_SANDBOX_DENIED")
        self.assertTrue(os.path.exists(os.path.join(ws, "py.txt")))


if __name__ == "__main__":
    unittest.main()
