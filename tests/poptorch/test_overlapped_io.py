"""Overlapped host I/O: the marks pass values through; PopTorch's rules and their messages."""
import pytest
import torch

from ipu_tutorials import poptorch

OVERLAP = poptorch.OverlapMode.OverlapAccumulationLoop


def io_options():
    opts = poptorch.Options().setExecutionStrategy(poptorch.ShardedExecution())
    opts.TensorLocations.numIOTiles(32)
    return opts


class Marked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)

    def forward(self, x, pair):
        x = poptorch.set_overlap_for_input(x, OVERLAP)
        pair = poptorch.set_overlap_for_input(pair, poptorch.OverlapMode.OverlapDeviceIterationLoop)
        y = self.lin(x) + pair[0] * pair[1]
        return poptorch.set_overlap_for_output((y, y.sum()), OVERLAP)


def test_marked_inputs_and_outputs_compute_as_pytorch():
    torch.manual_seed(0)
    model, x, pair = Marked(), torch.randn(4, 3), (torch.randn(4, 2), torch.randn(4, 2))
    expected = model(x, pair)
    got = poptorch.inferenceModel(model, io_options())(x, pair)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)


def run(forward, opts=None, training=False):
    class Model(torch.nn.Module):
        def forward(self, x):
            return forward(x)
    wrap = poptorch.trainingModel if training else poptorch.inferenceModel
    return wrap(Model(), io_options() if opts is None else opts)(torch.ones(2))


def test_an_input_mark_on_a_computed_tensor_is_refused():
    with pytest.raises(poptorch.Error, match=r"^poptorch\.set_overlap_for_input applied on a node "
                       r"which is not a tensor input to the model\.$"):
        run(lambda x: poptorch.set_overlap_for_input(x + 1, OVERLAP))


def test_an_output_mark_on_a_tensor_not_returned_is_refused():
    with pytest.raises(poptorch.Error, match=r"^poptorch\.set_overlap_for_output applied on a "
                       r"node which is not a tensor output to the model\.$"):
        run(lambda x: poptorch.set_overlap_for_output(x + 1, OVERLAP).mean())


def test_a_marked_output_returned_twice_is_refused():
    def forward(x):
        y = x + 1
        return y, poptorch.set_overlap_for_output(y, OVERLAP)
    with pytest.raises(poptorch.Error, match=r"cannot be used with a tensor that is returned "
                       r"twice\. Please check all returned tensors including those nested"):
        run(forward)


def test_a_marked_output_may_feed_later_ops():
    def forward(x):
        y = poptorch.set_overlap_for_output(x + 1, OVERLAP)
        return y, y + 1
    y, z = run(forward)
    assert torch.equal(y, torch.full((2,), 2.0)) and torch.equal(z, torch.full((2,), 3.0))


@pytest.mark.parametrize("change, message", [
    (lambda opts: opts.setExecutionStrategy(poptorch.PipelinedExecution()),
     r"^Overlapped IO is not supported with poptorch\.PipelinedExecution\. If you are using only "
     r"one IPU, please switch to poptorch\.ShardedExecution\.$"),
    (lambda opts: opts.TensorLocations._values.pop("num_io_tiles"),  # no numIOTiles() call
     r"^No IO tiles allocated\. You must allocate at least 32 IO tiles using "
     r"poptorch\.Options\(\)\.TensorLocations\.numIOTiles\.$"),
    (lambda opts: opts.outputMode(poptorch.OutputMode.Final),
     r"^Unsupported output mode for overlapped IO\. Please switch output mode to "
     r"poptorch\.OutputMode\.All or poptorch\.OutputMode\.Sum\.$"),
])
def test_overlap_needs_sharding_io_tiles_and_every_output(change, message):
    opts = io_options()
    change(opts)
    with pytest.raises(poptorch.Error, match=message):
        run(lambda x: poptorch.set_overlap_for_input(x, OVERLAP) + 1, opts)


def test_no_overlap_marks_need_no_io_tiles():
    out = run(lambda x: poptorch.set_overlap_for_input(x, poptorch.OverlapMode.NoOverlap) + 1,
              poptorch.Options())
    assert torch.equal(out, torch.full((2,), 2.0))


def test_only_tensors_and_overlap_modes_are_accepted():
    with pytest.raises(poptorch.Error, match=r"You may only set overlap for torch\.tensor inputs\. "
                       r"<class 'int'> is not supported\."):
        poptorch.set_overlap_for_input(3, OVERLAP)
    with pytest.raises(TypeError, match=r"set_overlap_for_output\(\) expects a "
                       r"poptorch\.OverlapMode, got 'overlap'"):
        poptorch.set_overlap_for_output(torch.ones(1), "overlap")


@pytest.mark.parametrize("tiles", [10, 33, 193])
def test_io_tiles_are_an_even_number_from_32_to_192(tiles):
    with pytest.raises(AssertionError, match=r"^numIOTiles must be an even number between 32 and "
                       r"192\.$"):
        poptorch.Options().TensorLocations.numIOTiles(tiles)
    assert poptorch.Options().TensorLocations.numIOTiles(192)._value("num_io_tiles") == 192
