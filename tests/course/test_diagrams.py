"""The diagram generator: every figure the course links exists, and writing is atomic."""
import os

import matplotlib.pyplot as plt

from ipu_tutorials.course import diagrams

from .stored import CHECKOUT


def test_every_named_diagram_has_a_drawing_and_a_committed_picture():
    assert tuple(diagrams.figures()) == diagrams.NAMES
    for name in diagrams.NAMES:
        assert os.path.exists(os.path.join(CHECKOUT.static, f"diagram_{name}.png")), (
            f"run `ipu-course diagrams` (diagram_{name}.png is missing)")


def test_write_diagrams_writes_each_png_and_leaves_no_temporary(tmp_path, monkeypatch):
    monkeypatch.setattr(diagrams, "figures", lambda: {"a": lambda: plt.figure(),
                                                      "b": lambda: plt.subplots()[1]})
    paths = diagrams.write_diagrams(str(tmp_path))
    assert [os.path.basename(p) for p in paths] == ["diagram_a.png", "diagram_b.png"]
    assert sorted(os.listdir(tmp_path)) == ["diagram_a.png", "diagram_b.png"]
    assert all(open(p, "rb").read(8) == b"\x89PNG\r\n\x1a\n" for p in paths)


def test_replication_memories_shard_the_optimizer_state_over_the_replicas():
    memories = list(diagrams.replication_memories().values())
    full, sharded = memories[0][0].off_chip["optimizer"], memories[1][0].off_chip["optimizer"]
    assert len(memories[0]) == diagrams.REPLICAS
    assert abs(full / sharded - diagrams.REPLICAS) < 0.05 * diagrams.REPLICAS
