#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The house's two rules that the compiler cannot see (docs/architecture.md).

house-check.py SOURCE_ROOT BUILD_DIR

1. Only a backend knows its backend: the names "bwrap" and "landlock", as C string literals
   (comments do not count), appear only in src/confine/backend-*.c and in the tests. The enum,
   its texts and the registry are generated from meson.build's list, so nothing else needs them.
2. No circles: within a piece, no two files call each other, directly or around a circle, and
   no two pieces do. Read from the compiled objects of the library (which file defines each
   symbol, which file uses it), so a call through a macro or a table counts like any other.

Prints each violation and exits 1 when there is any.
"""
import collections
import glob
import os
import re
import subprocess
import sys

NAMES = ('"bwrap"', '"landlock"')

# A C token stream without comments: strings and characters kept whole, so that "/*" in a
# string is no comment and '"' in a character constant no string.
TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|.', re.S)


def literals(text):
    for m in TOKEN.finditer(text):
        tok = m.group(0)
        if tok.startswith('"'):
            yield tok, text.count("\n", 0, m.start()) + 1


def allowed(path):
    return (path.startswith("tests/") or
            re.fullmatch(r"src/confine/backend-[a-z0-9_-]+\.c", path) is not None)


def check_names(top):
    bad = []
    for sub in ("src", "include", "bench", "fuzz", "examples"):
        for path in glob.glob(os.path.join(top, sub, "**", "*.[ch]"), recursive=True):
            rel = os.path.relpath(path, top)
            if allowed(rel) or "node_modules" in rel:
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            for tok, line in literals(text):
                if tok in NAMES:
                    bad.append(f"{rel}:{line}: the backend name {tok} outside its backend")
    return bad


def symbols(obj):
    """The global symbols @obj defines and those it uses."""
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDRBV":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
    return defined, used


def circles(edges):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def check_layers(build):
    objs = sorted(glob.glob(os.path.join(build, "libdsb-internal.a.p", "src_*.o")))
    if not objs:
        return [f"{build}: no objects of the library (build it first)"]
    defined, used = {}, {}
    for obj in objs:
        # src_confine_tree.c.o -> confine/tree.c
        name = os.path.basename(obj)[len("src_"):-len(".o")].replace("_", "/", 1)
        defined[name], used[name] = symbols(obj)
    owner = {s: n for n, syms in defined.items() for s in syms}
    files, pieces = collections.defaultdict(set), collections.defaultdict(set)
    for name, syms in used.items():
        for s in syms:
            other = owner.get(s)
            if not other or other == name:
                continue
            if name.split("/")[0] == other.split("/")[0]:
                files[name].add(other)
            else:
                pieces[name.split("/")[0]].add(other.split("/")[0])
    bad = [f"src/{', src/'.join(c)}: these files call each other" for c in circles(files)]
    bad += [f"pieces {', '.join(c)} call each other" for c in circles(pieces)]
    return bad


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: house-check.py SOURCE_ROOT BUILD_DIR")
    bad = check_names(sys.argv[1]) + check_layers(sys.argv[2])
    for line in bad:
        print(line)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
