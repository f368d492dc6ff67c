"""The tested Lightning range, checked on import with the fix in the message."""
import pytest

pytest.importorskip("lightning.pytorch")

from ipu_tutorials.lightning import _compat  # noqa: E402


@pytest.mark.parametrize("version", ["2.6.0", "2.6.6", "2.6.1rc1", "2.6.0.dev20250101"])
def test_versions_in_the_tested_range_pass(version):
    _compat.check_version(version)


@pytest.mark.parametrize("version", ["2.5.9", "2.7.0", "3.0.0", "1.9"])
def test_other_versions_are_refused_with_the_install_command(version):
    with pytest.raises(ImportError, match=rf"tested with lightning>=2.6,<2.7 .* lightning "
                                          rf"{version} is installed. .*pip install -e"):
        _compat.check_version(version)


def test_the_connector_is_patched_once():
    from lightning.pytorch.trainer.connectors.accelerator_connector import _AcceleratorConnector

    import ipu_tutorials.lightning as ipu_lightning

    chosen = _AcceleratorConnector._choose_strategy
    _compat.install(ipu_lightning.IPUStrategy, ipu_lightning.IPUPrecisionPlugin,
                    ipu_lightning.IPUAccelerator)
    assert _AcceleratorConnector._choose_strategy is chosen
