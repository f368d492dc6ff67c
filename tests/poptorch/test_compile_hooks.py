"""Compile hooks run around every compilation, in order, until removed."""
import pytest
import torch

from ipu_tutorials import poptorch


def compile_once(options):
    poptorch.inferenceModel(torch.nn.Identity(), options())(torch.ones(2, 2))


def test_hooks_run_before_and_after_compiling_in_registration_order(options):
    calls = []
    handles = [poptorch.registerPreCompileHook(lambda: calls.append("pre 1")),
               poptorch.registerPreCompileHook(lambda: calls.append("pre 2")),
               poptorch.registerPostCompileHook(lambda: calls.append("post"))]
    try:
        compile_once(options)
    finally:
        for handle in handles:
            handle.remove()
    assert calls == ["pre 1", "pre 2", "post"]


def test_a_removed_hook_is_not_called(options):
    calls = []
    poptorch.registerPostCompileHook(lambda: calls.append("post")).remove()
    compile_once(options)
    assert calls == []


@pytest.mark.parametrize("register", [poptorch.registerPreCompileHook,
                                      poptorch.registerPostCompileHook])
def test_a_hook_must_be_callable(register):
    with pytest.raises(RuntimeError, match="must be callable .*got int"):
        register(3)
