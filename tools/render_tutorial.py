#!/usr/bin/env python3
"""Renders a literate tutorial (tutorial/x.c) to Markdown (tutorial/x.md).

Rule: a comment block that starts at column 0 with `/*` and ends with `*/` is Markdown
prose; everything else is C code, fenced as ```c. Leading ` * ` on prose lines is removed.
Usage: render_tutorial.py tutorial/tmem.c [out.md]   (default: same name, .md)
       render_tutorial.py --check tutorial/tmem.c    (exit 1 if the .md is stale)
"""
import re
import sys


def render(src: str) -> str:
    out, code = [], []

    def flush_code():
        while code and not code[-1].strip():
            code.pop()
        while code and not code[0].strip():
            code.pop(0)
        if code:
            out.append("```c\n" + "\n".join(code) + "\n```\n")
        code.clear()

    lines = src.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("/*") and not line.startswith("/**/"):
            block = [line[2:]]
            while "*/" not in block[-1] and i + 1 < len(lines):
                i += 1
                block.append(lines[i])
            block[-1] = block[-1][: block[-1].rindex("*/")]
            flush_code()
            prose = [re.sub(r"^ ?\* ?", "", b) if b.lstrip().startswith("*") else b for b in block]
            out.append("\n".join(p.rstrip() for p in prose).strip("\n") + "\n")
        elif line.startswith("// labels:"):
            pass
        else:
            code.append(line)
        i += 1
    flush_code()
    return "\n".join(out)


def main(argv):
    check = argv[1:2] == ["--check"]
    args = argv[2:] if check else argv[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    src_path = args[0]
    dst_path = args[1] if len(args) > 1 else re.sub(r"\.c$", ".md", src_path)
    text = render(open(src_path, encoding="utf-8").read())
    if check:
        try:
            current = open(dst_path, encoding="utf-8").read()
        except FileNotFoundError:
            current = None
        if current != text:
            print(f"{dst_path} is stale: run tools/render_tutorial.py {src_path}", file=sys.stderr)
            return 1
        return 0
    open(dst_path, "w", encoding="utf-8").write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
