"""The wheel: python/build_wheel.py (the offline builder; `pip install ./python` builds the
same layout with scikit-build-core) packs the package and libcfuser.so inside it; installed
into a fresh virtual environment it loads its own library, with no checkout, build
directory or environment variable to find one, declares numpy, and runs the README's
examples. The venv sees the system's site-packages only for numpy (offline machines), and
the test checks that cfuser itself comes from the venv."""
import ctypes
import os
import re
import subprocess
import sys
import zipfile

import pytest

import cfuser

PYTHON_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

# Runs the README's python blocks in order, then says where the library came from.
RUN_README = r"""
import re, sys, contextlib, io
text = open(sys.argv[1]).read()
ns = {}
with contextlib.redirect_stdout(io.StringIO()):
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        exec(compile(block, "README.md", "exec"), ns)
import cfuser
print(cfuser.__file__)
print(cfuser.library_path)
print(cfuser.__version__)
"""


def clean_env():
    return {k: v for k, v in os.environ.items() if k not in ("CFUSER_LIBRARY", "CFUSER_BUILD_DIR", "PYTHONPATH")}


def _see_this_numpy(py: str) -> None:
    """Where this interpreter is itself a venv, --system-site-packages shows the new venv
    its base's packages, not this one's numpy: a .pth file adds numpy's directory (the
    machine is offline, and cfuser's own files still come from the venv: .pth paths go
    after its site-packages)."""
    if subprocess.run([py, "-c", "import numpy"], capture_output=True).returncode == 0:
        return
    import numpy
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(site, "numpy_of_the_test.pth"), "w") as pth:
        pth.write(os.path.dirname(os.path.dirname(numpy.__file__)) + "\n")


def test_the_wheel_carries_the_library_and_runs_the_readme_in_a_fresh_venv(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(PYTHON_DIR, "build_wheel.py"), "--out", str(tmp_path / "dist"),
                        "--lib", os.path.realpath(cfuser.library_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    wheel = r.stdout.strip()
    names = zipfile.ZipFile(wheel).namelist()
    assert "cfuser/libcfuser.so" in names and "cfuser/fusion_definition.py" in names
    meta = zipfile.ZipFile(wheel).read(f"cfuser-{cfuser.__version__}.dist-info/METADATA").decode()
    assert "Requires-Dist: numpy" in meta.splitlines()
    assert f"Version: {cfuser.__version__}" in meta.splitlines()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    _see_this_numpy(py)
    r = subprocess.run([py, "-m", "pip", "install", "-q", "--no-index", "--no-deps", wheel], capture_output=True,
                       text=True, env=clean_env())
    assert r.returncode == 0, r.stdout + r.stderr
    work = tmp_path / "elsewhere"  # not the checkout: nothing of it on sys.path
    work.mkdir()
    r = subprocess.run([py, "-c", RUN_README, os.path.join(PYTHON_DIR, "README.md")], cwd=work, env=clean_env(),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    module, library, version = r.stdout.split()
    site = str(venv)
    assert module.startswith(site), module
    assert library == os.path.join(os.path.dirname(module), "libcfuser.so")
    assert version == cfuser.__version__


def test_the_version_is_the_headers_everywhere():
    header = open(os.path.join(PYTHON_DIR, os.pardir, "include", "cfuser", "version.h")).read()
    want = re.search(r'#define CF_VERSION_STRING "([^"]+)"', header).group(1)
    assert cfuser.__version__ == want
    assert cfuser.library_version() == want


def test_the_package_lays_out_the_librarys_structs():
    """cf_struct_size: the loaded library's sizeof of each struct the package lays out with
    ctypes equals the package's (checked when the library loads); 0 for other names."""
    from cfuser import _capi
    for name, struct in (("cf_executor_options", _capi.ExecutorOptions), ("cf_launch_params", _capi.LaunchParams),
                         ("cf_op_info", _capi.OpInfo), ("DLTensor", _capi.DLTensor),
                         ("DLManagedTensor", _capi.DLManagedTensor)):
        assert _capi.lib.cf_struct_size(name.encode()) == ctypes.sizeof(struct), name
    assert _capi.lib.cf_struct_size(b"cf_fusion") == 0
    assert _capi.lib.cf_struct_size(None) == 0


def test_a_library_of_another_layout_is_refused_with_both_sizes(monkeypatch):
    """A library whose cf_executor_options differs in size from the package's (another
    version) is refused when loaded, naming the struct and both sizes; one without
    cf_struct_size at all (older than the check) is refused too."""
    from cfuser import _capi
    ours = ctypes.sizeof(_capi.ExecutorOptions)

    class Lib:
        @staticmethod
        def cf_struct_size(name):
            return ours - 4 if name == b"cf_executor_options" else _capi.lib.cf_struct_size(name)

    monkeypatch.setattr(_capi, "lib", Lib())
    with pytest.raises(_capi.LibraryMismatchError) as e:
        _capi._check_layouts()
    assert str(e.value) == (f"cfuser: {_capi.library_path} lays out cf_executor_options in {ours - 4} bytes, this "
                            f"package in {ours}: the package and the library are of different versions")
    monkeypatch.setattr(_capi, "lib", object())
    with pytest.raises(_capi.LibraryMismatchError) as e:
        _capi._check_layouts()
    assert str(e.value) == f"cfuser: {_capi.library_path} has no cf_struct_size: it is older than this package"
