#!/usr/bin/env python3
"""Writes python/README.md's table of fd.ops from the package itself, so it cannot go stale.

The unary and binary rows come from the op tables of cfuser._capi (the C API's
CF_UNARY_OP_TABLE and CF_BINARY_OP_TABLE, with nvFuser's names); every other public method
of cfuser.Ops is one row: its signature and the first sentence of its docstring. The table
sits between the markers <!-- ops table --> and <!-- end ops table --> of the README.

    tools/gen_ops_table.py            rewrite the table in python/README.md
    tools/gen_ops_table.py --check    exit 1, saying what differs, when the README is stale

Needs `import cfuser` to work (libcfuser.so found as python/README.md says; ctest passes
CFUSER_LIBRARY).
"""
import difflib
import inspect
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(REPO, "python", "README.md")
BEGIN, END = "<!-- ops table -->", "<!-- end ops table -->"
sys.path.insert(0, os.path.join(REPO, "python"))

import cfuser  # noqa: E402
from cfuser import _capi  # noqa: E402
from cfuser.ops import OP_ROWS, Ops  # noqa: E402


def first_sentence(doc):
    text = " ".join((doc or "").split())
    m = re.match(r"(.+?\.)(\s|$)", text)
    return (m.group(1) if m else text).replace("|", "\\|")


def signature(name, fn):
    params = list(inspect.signature(fn).parameters.values())[1:]  # without self
    return f"`{name}({', '.join(str(p).split(':')[0].strip() if p.default is p.empty else str(p.name) + '=' + repr(p.default) for p in params)})`"


def table():
    unary = ("set",) + tuple(py for py, (_, kind) in OP_ROWS.items() if kind == "unary" and py != "set")
    binary = tuple(py for py, (_, kind) in OP_ROWS.items() if kind == "binary")
    rows = ["| op | what it does |", "| --- | --- |",
            f"| unary: {' '.join(f'`{n}`' for n in unary)} | elementwise, `(t)` |",
            f"| binary: {' '.join(f'`{n}`' for n in binary)} | elementwise, `(a, b)`: equal ranks, size-1 "
            "broadcast axes; `add sub mul div` also take a number or a Scalar on either side |"]
    for name, fn in sorted(inspect.getmembers(Ops, inspect.isfunction)):
        if name.startswith("_") or name in unary or name in binary:
            continue
        rows.append(f"| {signature(name, fn)} | {first_sentence(fn.__doc__)} |")
    return "\n".join(rows) + "\n"


def main():
    text = open(README).read()
    if BEGIN not in text or END not in text:
        print(f"gen_ops_table: {README} has no {BEGIN} ... {END} markers", file=sys.stderr)
        return 2
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{table()}{END}{tail}"
    if "--check" in sys.argv[1:]:
        if new == text:
            return 0
        sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True), README, "generated"))
        print("gen_ops_table: python/README.md's ops table is stale: run tools/gen_ops_table.py", file=sys.stderr)
        return 1
    open(README, "w").write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
