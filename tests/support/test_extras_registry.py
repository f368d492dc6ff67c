"""extras_registry.py: each simulator extra declared once, with why and the real way."""
from ipu_tutorials.support import extras_registry
from ipu_tutorials.support.extras_registry import EXTRAS, Extra, declares


def test_each_extra_is_declared_once_with_why_and_the_real_way():
    names = [extra.name for extra in EXTRAS]
    assert len(names) == len(set(names))
    for extra in EXTRAS:
        assert extra.why and extra.real_way, extra.name
        assert extra.kind in ("extra", "signature", "keyword"), extra.name
        assert extra.name.startswith(("poptorch.", "optimum.graphcore.", "lightning.pytorch."))


def test_a_finding_is_declared_only_under_its_own_kind():
    assert declares("extra", "poptorch.PoplarExecutor.plan")
    assert not declares("signature", "poptorch.PoplarExecutor.plan")
    assert declares("signature", "poptorch.PoplarExecutor.__init__")
    assert not declares("extra", "poptorch.Phase.ipu_ids")  # no longer offered


def test_by_name_finds_each_declaration():
    assert all(extras_registry.BY_NAME[e.name] is e for e in EXTRAS)
    assert isinstance(extras_registry.BY_NAME["poptorch.OutOfMemoryError"], Extra)
