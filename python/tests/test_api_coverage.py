"""The binding covers the C API: every op and scheduling call of include/cfuser/fusion.h and
schedule.h is declared in cfuser/_capi.py and reachable from fd.ops or fd.sched, and the op
tables are the header's own. A call added to the C API without the binding fails here."""
import os
import re

import pytest

from cfuser import _capi
from cfuser.ops import Ops
from cfuser.sched import Sched

INCLUDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "include", "cfuser")

# Declared in the headers but deliberately not bound, each with the reason.
NOT_BOUND = {
    "cf_fusion_verify": "an internal check of the IR, for cfuser's own tests",
    "cf_fusion_copy": "a copy of the math for C's define and run (execute.h); FusionDefinition keeps its record",
}
# Python name in fd.ops / fd.sched of each C call whose name differs (or that one Python
# call reaches through an argument).
PYTHON_NAME = {
    "cf_max": "maximum", "cf_min": "minimum", "cf_max_reduce": "max", "cf_min_reduce": "min",
    "cf_add_scalar": None, "cf_mul_scalar": None,  # bound; a number beside a tensor is cf_const (a scalar in promotion)
    "cf_split_outer": "split", "cf_circular_buffer_prefetch": "circular_buffer",  # prefetch=
    "cf_reorder_all": "reorder", "cf_inline_at_best_effort": "inline_at",
    "cf_propagate_transforms_checked": "propagate_transforms", "cf_fusion_group_tmem": "group_tmem",
    "cf_tensor_concrete": None, "cf_tensor_symbolic": None, "cf_tensor_strided": None,  # define_tensor
    "cf_scalar_input": None,  # fd.define_scalar(dtype)
    # define_scalar(value) and numbers (complex ones too), when an op uses them
    "cf_const": None, "cf_const_int": None, "cf_const_complex": None,
    "cf_full_int": "full", "cf_expand_to": "broadcast_in_dim",  # also expand and full to another tensor's sizes
    "cf_uniform_like": "rand_like", "cf_normal_like": "randn_like",
    # sizes known only at run time: the ops given such sizes (a Scalar input, t.size(i) in arithmetic)
    "cf_tv_size": None, "cf_reshape_dynamic": "reshape", "cf_expand_dynamic": "expand",
    "cf_full_dynamic": "full", "cf_slice_dynamic": "slice", "cf_iota_dynamic": "iota",
}


def header(name):
    with open(os.path.join(INCLUDE, name)) as f:
        return f.read()


def functions(text):
    names = set(re.findall(r"CF_API\s+[\w\s\*]*?\b(cf_\w+)\s*\(", text))
    for table in re.findall(r"#define (CF_\w+_OP_TABLE)\(X\)((?:.*\\\n)*.*)", text):
        ops = re.findall(r"X\((\w+)\)", table[1])
        names |= {"cf_" + op for op in ops}
    return names


def test_the_op_tables_are_the_headers():
    text = header("fusion.h")
    for table, bound in (("CF_UNARY_OP_TABLE", _capi.UNARY_OPS), ("CF_BINARY_OP_TABLE", _capi.BINARY_OPS)):
        body = re.search(r"#define " + table + r"\(X\)((?:.*\\\n)*.*)", text).group(1)
        assert tuple(re.findall(r"X\((\w+)\)", body)) == bound


@pytest.mark.parametrize("name", ["fusion.h", "schedule.h"])
def test_every_call_is_bound(name):
    declared = functions(header(name))
    assert len(declared) > 20
    missing = sorted(declared - _capi.BOUND - set(NOT_BOUND))
    assert missing == []


@pytest.mark.parametrize("name,cls", [("fusion.h", Ops), ("schedule.h", Sched)])
def test_every_op_and_schedule_call_is_reachable(name, cls):
    text = header(name)
    section = text[text.index("---- ops") if name == "fusion.h" else 0:
                   text.index("---- inspection") if name == "fusion.h" else len(text)]
    for c_name in sorted(functions(section)):
        py = PYTHON_NAME.get(c_name, c_name[3:])
        if py is not None:
            assert hasattr(cls, py), f"{c_name} has no {cls.__name__}.{py}"
