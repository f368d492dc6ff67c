"""Lesson 13's explorer: BERT-Base's plan per layers_per_ipu, and the rule on too many layers."""
import pytest

pytest.importorskip("transformers")

from ipu_tutorials.classroom.explorers.ipuconfig import ipuconfig_explorer  # noqa: E402


def test_explorer_shows_the_plan_and_refuses_too_many_layers():
    explorer = ipuconfig_explorer(first=1, second=4, third=4)
    assert "layers_per_ipu=[1, 4, 4, 3]" in explorer.text and "sequences/s" in explorer.text
    explorer.controls["first"].value = 6
    assert "IPUs 0-2 take 14 of BERT-Base's 12 layers" in explorer.text
