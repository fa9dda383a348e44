"""The Python enums and exception classes match the C library's tables value for value."""
import cfuser
from cfuser import DataType, MemoryType, ParallelType, _capi, types


def test_data_types_match_the_c_table():
    c_dtypes = [d for d in DataType if d.value >= 0]  # Null ("no dtype given") and Float4_e2m1fn_x2: frontend values
    names = [_capi.lib.cf_dtype_name(i).decode() for i in range(len(c_dtypes) + 1)]
    assert names[-1] == "invalid"  # every C dtype has a Python name
    assert [types.C_DTYPE_NAMES[d] for d in c_dtypes] == names[:-1]
    assert [_capi.lib.cf_dtype_size(int(d)) for d in c_dtypes] == [4, 8, 2, 2, 1, 4, 8, 4, 1, 16, 24, 1, 1, 8, 16, 1]
    assert _capi.lib.cf_dtype_storage_bytes(int(DataType.Float4_e2m1fn), 7) == 4  # packed: two to a byte
    packed = [d for d in types.ELEMENT_DTYPES
              if _capi.lib.cf_dtype_storage_bytes(int(d), 2) < 2 * _capi.lib.cf_dtype_size(int(d))]
    assert tuple(packed) == types.PACKED_DTYPES
    assert types.as_dtype("torch.float4_e2m1fn_x2") is DataType.Float4_e2m1fn  # torch's bytes of two
    assert DataType.Null.value == -1 and DataType.Null not in types.ELEMENT_DTYPES


def test_parallel_types_match_the_c_table():
    names = [_capi.lib.cf_parallel_type_name(i).decode() for i in range(len(ParallelType))]
    assert [types.C_PARALLEL_TYPE_NAMES[p] for p in ParallelType] == names
    assert ParallelType.grid_x.value == 4 and ParallelType.block_x.value == 1


def test_memory_types_match_the_c_table():
    names = [_capi.lib.cf_memory_type_name(i).decode() for i in range(len(MemoryType) + 1)]
    assert [types.C_MEMORY_TYPE_NAMES[m] for m in MemoryType] + ["invalid"] == names


def test_every_status_has_its_exception():
    for status, cls in types.STATUS_ERRORS.items():
        assert _capi.lib.cf_status_name(status).decode() == cls.status
        assert issubclass(cls, cfuser.CfuserError)
    assert _capi.lib.cf_status_name(0).decode() == "OK"
    assert len(types.STATUS_ERRORS) == 9


def test_dtype_names():
    assert types.as_dtype("float32") is DataType.Float
    assert types.as_dtype("torch.bfloat16") is DataType.BFloat16
    assert types.as_dtype("Int") is DataType.Int
    assert types.as_dtype("long") is DataType.Int
    import numpy
    assert types.as_dtype(numpy.dtype("int32")) is DataType.Int32
    assert types.dtype_of_number(True) is DataType.Bool and types.dtype_of_number(3) is DataType.Int
    assert types.dtype_of_number(2.5) is DataType.Double
