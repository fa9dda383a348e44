#!/usr/bin/env python3
"""Every code block of the docs runs somewhere, so none can go stale.

For each Markdown file (README.md, python/README.md, bench/README.md, docs/*.md,
tutorial/*.md) and each fenced block:
  ```c       compiled (cc -std=c11 -fsyntax-only against include/), and run when it has a
             main(); a tutorial's C blocks are its .c file, a test of its own (the
             tutorial_*_markdown_fresh tests keep the .md equal to it);
  ```python  run, the file's blocks in order in one namespace, with cfuser importable;
             python/README.md's are run by python/tests/test_readme.py (which also checks
             what they print);
  others     (sh, cmake, text: commands and notation) not run.
A block preceded by the line <!-- fragment --> is a piece of a larger program, shown but
not run. Usage: check_blocks.py SRC LIBCFUSER; prints one line per file and
"docs: N passed, N failed".
"""
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"(<!-- fragment -->\n)?```(\w+)\n(.*?)```", re.S)


def files(src):
    names = ["README.md", "python/README.md", "bench/README.md"]
    for d in ("docs", "tutorial"):
        names += sorted(f"{d}/{n}" for n in os.listdir(os.path.join(src, d)) if n.endswith(".md"))
    return [n for n in names if os.path.exists(os.path.join(src, n))]


def run_c(src, lib, code, tmp):
    path = os.path.join(tmp, "block.c")
    open(path, "w").write(code)
    has_main = re.search(r"\bint\s+main\s*\(", code) is not None
    cmd = ["cc", "-std=c11", "-I" + os.path.join(src, "include"), path]
    cmd += [lib, "-Wl,-rpath," + os.path.dirname(lib), "-o", path + ".exe"] if has_main else ["-fsyntax-only"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode == 0 and has_main:
        r = subprocess.run([path + ".exe"], capture_output=True, text=True, cwd=tmp)
    return r.returncode == 0, r.stdout + r.stderr


def run_python(src, lib, blocks, tmp):
    program = "\n".join(blocks)
    env = dict(os.environ, CFUSER_LIBRARY=lib, PYTHONPATH=os.path.join(src, "python"))
    r = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, cwd=tmp, env=env)
    return r.returncode == 0, r.stdout + r.stderr


def main():
    src, lib = sys.argv[1], os.path.abspath(sys.argv[2])
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="cfuser-docs-") as tmp:
        for name in files(src):
            text = open(os.path.join(src, name)).read()
            tutorial = name.startswith("tutorial/") and os.path.exists(os.path.join(src, name[:-3] + ".c"))
            ran, py = 0, []
            for fragment, lang, code in FENCE.findall(text):
                if fragment:
                    continue
                if lang == "c" and not tutorial:
                    ok, out = run_c(src, lib, code, tmp)
                    ran += 1
                    if not ok:
                        failed += 1
                        print(f"docs: {name}: a C block fails:\n{code}\n{out}")
                    else:
                        passed += 1
                elif lang == "python" and name != "python/README.md":
                    py.append(code)
            if py:
                ok, out = run_python(src, lib, py, tmp)
                ran += len(py)
                if ok:
                    passed += 1
                else:
                    failed += 1
                    print(f"docs: {name}: its python blocks fail:\n{out}")
            print(f"docs: {name}: {ran} blocks run here")
    print(f"docs: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
