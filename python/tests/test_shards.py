"""ctest's python_tests shards (conftest.py, $CFUSER_PYTEST_SHARD=i/n): the n shards of a
collection are disjoint and cover it, each every n-th test from the i-th, and a malformed
spec is a usage error that says what is expected."""
import pytest

import conftest


class _Hook:
    def __init__(self):
        self.deselected = []

    def pytest_deselected(self, items):
        self.deselected.extend(items)


class _Config:
    def __init__(self):
        self.hook = _Hook()


def _shard_of(monkeypatch, spec, items):
    monkeypatch.setenv("CFUSER_PYTEST_SHARD", spec)
    config, kept = _Config(), list(items)
    conftest.pytest_collection_modifyitems(config, kept)
    return kept, config.hook.deselected


def test_shards_partition_the_collection(monkeypatch):
    items = [f"t{k}" for k in range(10)]
    kept = [_shard_of(monkeypatch, f"{i}/3", items) for i in (1, 2, 3)]
    assert [k for k, _ in kept] == [["t0", "t3", "t6", "t9"], ["t1", "t4", "t7"], ["t2", "t5", "t8"]]
    for k, d in kept:
        assert sorted(k + d) == sorted(items)


def test_no_shard_keeps_everything(monkeypatch):
    monkeypatch.delenv("CFUSER_PYTEST_SHARD", raising=False)
    config, items = _Config(), ["a", "b"]
    conftest.pytest_collection_modifyitems(config, items)
    assert items == ["a", "b"] and config.hook.deselected == []


@pytest.mark.parametrize("spec", ["0/4", "5/4", "2", "a/b", "1/0"])
def test_a_malformed_shard_is_a_usage_error(monkeypatch, spec):
    with pytest.raises(pytest.UsageError, match=r"expected i/n with 1 <= i <= n, e\.g\. 2/4"):
        _shard_of(monkeypatch, spec, ["a"])
