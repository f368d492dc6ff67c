"""The option rules shared by Options, the executor and the simulator door."""
import pytest

from ipu_tutorials.poptorch import OutputMode
from ipu_tutorials.poptorch._option_rules import check_version, resolved_output_mode


@pytest.mark.parametrize("version", [1, 2, 21])
def test_check_version_accepts_the_chips_the_simulator_knows(version):
    assert check_version(version) == version


@pytest.mark.parametrize("version", [0, 3, 22])
def test_check_version_lists_the_known_versions(version):
    with pytest.raises(ValueError, match=rf"unknown IPU version {version}; known versions: "
                                         r"'ipu1' \(GC2\), 'ipu2' \(GC200\), 'ipu21' \(Bow\)"):
        check_version(version)


@pytest.mark.parametrize("training, expected", [(True, OutputMode.Final), (False, OutputMode.All)])
def test_default_output_mode_depends_on_the_kind_of_model(training, expected):
    assert resolved_output_mode(OutputMode.Default, training) == expected


@pytest.mark.parametrize("mode", [OutputMode.All, OutputMode.Final, OutputMode.Sum,
                                  OutputMode.EveryN])
@pytest.mark.parametrize("training", [True, False])
def test_an_explicit_output_mode_is_kept(mode, training):
    assert resolved_output_mode(mode, training) == mode
