#!/usr/bin/env python3
"""Builds the cfuser wheel with CMake directly and nothing but the standard library: the
offline fallback of `pip install ./python` (whose build backend, scikit-build-core, comes
from PyPI), for machines without a package index (a GPU box, an air-gapped cluster).

    python3 python/build_wheel.py [--out DIR] [--lib PATH/libcfuser.so] [--build-dir DIR]
    pip install --no-index DIR/cfuser-<version>-py3-none-<platform>.whl

It configures and builds libcfuser with CMake (tests and benchmarks off; the CUDA toolkit
used when found, as the main build does) unless --lib names a built one, and writes a
wheel holding the package (python/cfuser) and the library inside it (cfuser/libcfuser.so,
which `import cfuser` loads first): the same layout scikit-build-core produces, so the
installed package works after the checkout is gone. The wheel declares numpy and needs
libffi at run time (every CPython with ctypes has it). Prints the wheel's path.
"""
import argparse
import base64
import csv
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def version() -> str:
    text = open(os.path.join(REPO, "include", "cfuser", "version.h")).read()
    return re.search(r'#define CF_VERSION_STRING "([^"]+)"', text).group(1)


def platform_tag() -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", sysconfig.get_platform())


def build_library(build_dir: str) -> str:
    """Configures and builds libcfuser in build_dir; returns the library's path."""
    subprocess.run(["cmake", "-S", REPO, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release", "-DCFUSER_BUILD_TESTS=OFF",
                    "-DCFUSER_BUILD_BENCH=OFF"], check=True, stdout=subprocess.DEVNULL)
    jobs = str(os.cpu_count() or 2)
    subprocess.run(["cmake", "--build", build_dir, "--target", "cfuser", "-j", jobs], check=True,
                   stdout=subprocess.DEVNULL)
    return os.path.join(build_dir, "libcfuser.so")


def metadata(ver: str) -> str:
    readme = open(os.path.join(HERE, "README.md")).read()
    return (f"Metadata-Version: 2.1\nName: cfuser\nVersion: {ver}\n"
            "Summary: Python frontend of cfuser, a tensor-fusion compiler (libcfuser inside)\n"
            "Requires-Python: >=3.8\nRequires-Dist: numpy\n"
            "Description-Content-Type: text/markdown\n\n" + readme)


def record_line(name: str, data: bytes) -> list:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [name, f"sha256={digest}", str(len(data))]


def write_wheel(out_dir: str, lib: str) -> str:
    ver, tag = version(), f"py3-none-{platform_tag()}"
    files = {}
    pkg = os.path.join(HERE, "cfuser")
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py") or name == "py.typed":
            files[f"cfuser/{name}"] = open(os.path.join(pkg, name), "rb").read()
    files["cfuser/libcfuser.so"] = open(os.path.realpath(lib), "rb").read()
    info = f"cfuser-{ver}.dist-info"
    files[f"{info}/METADATA"] = metadata(ver).encode()
    files[f"{info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: cfuser build_wheel.py\nRoot-Is-Purelib: false\n"
                              f"Tag: {tag}\n").encode()
    rows = [record_line(n, d) for n, d in files.items()] + [[f"{info}/RECORD", "", ""]]
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    files[f"{info}/RECORD"] = text.getvalue().encode()
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"cfuser-{ver}-{tag}.whl")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            zi = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            zi.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "dist"), help="where the wheel goes (default dist/)")
    ap.add_argument("--lib", help="a built libcfuser.so to package instead of building one")
    ap.add_argument("--build-dir", help="the CMake build directory (default: a temporary one)")
    args = ap.parse_args()
    if args.lib:
        print(write_wheel(args.out, args.lib))
        return 0
    if not shutil.which("cmake"):
        print("build_wheel.py: cmake is not installed", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="cfuser-wheel-") as tmp:
        print(write_wheel(args.out, build_library(args.build_dir or tmp)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
