"""The tutorial in python/README.md runs as written: its ```python blocks, in order, in one
namespace (their asserts are the tutorial's claims), and the printed math it shows is what
print_math prints."""
import contextlib
import io
import os
import re

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "README.md")


def blocks(text, lang):
    return re.findall(r"```" + lang + r"\n(.*?)```", text, re.S)


def test_readme_python_blocks_run():
    text = open(README).read()
    code = blocks(text, "python")
    assert len(code) >= 6
    ns = {}
    printed = io.StringIO()
    for block in code:
        with contextlib.redirect_stdout(printed):
            exec(compile(block, README, "exec"), ns)  # noqa: S102 - our own tutorial
    math = re.findall(r"```\n(Inputs:.*?)```", text, re.S)  # the block after `fd.print_math()`
    assert len(math) == 1
    head, _, first_expr = math[0].replace("...\n", "").partition("%kernel_math {\n")
    assert printed.getvalue().startswith(head + "%kernel_math {\n" + first_expr)
