#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Python binding's tests (test_*.py beside this script, unittest) as TAP, against a build's
# shared library (below) and the package in bindings/python. Run by meson as the caller and, through
# tests/e2e/as-user.sh, as the user nobody (which stages this directory, the sources and the
# library).
#
# Debian's python3 when there is one: it is the interpreter python3-dsh-sandbox is built for,
# and one that nobody can run (a root's pyenv lives in a 0700 home).
#
# The library is $DSB_PY_LIBRARY, the build's non-sanitized copy (tests/meson.build says why),
# else the build's libdshsandbox.so.0. A sanitized one needs its ASan runtime first in the
# process: it is preloaded into the interpreter, with leak detection off, since CPython does not
# free everything at exit, and without allocation stacks (malloc_context_size=0), which makes
# the ASan allocator's hang after fork in a threaded caller rarer, not impossible. helpers.py
# takes it out of the environment again, so that the commands the tests start do not inherit it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${DSB_SOURCE_ROOT:?}
build=${DSB_BUILD_ROOT:-$(dirname "${DSH_SANDBOX:?}")}
python=python3
[ ! -x /usr/bin/python3 ] || python=/usr/bin/python3
export DSH_SANDBOX_LIBRARY=${DSB_PY_LIBRARY:-$build/libdshsandbox.so.0}
export PYTHONPATH=$src/bindings/python PYTHONDONTWRITEBYTECODE=1
[ -f "$DSH_SANDBOX_LIBRARY" ] || {
	echo "1..0 # SKIP no $DSH_SANDBOX_LIBRARY (a fuzzing build has no shared library)"
	exit 0
}
asan=$(ldd "$DSH_SANDBOX_LIBRARY" | awk '$1 ~ /^libasan\./ { print $3 }')
if [ -n "$asan" ]; then
	export LD_PRELOAD=$asan DSB_PY_PRELOADED=$asan
	export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:malloc_context_size=0
fi
exec "$python" "$here/tap.py" "$here"
