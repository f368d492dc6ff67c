"""ctc_beam_search_decoder: the most likely labellings, checked against every alignment."""
import collections
import itertools
import math

import pytest
import torch

from ipu_tutorials import poptorch


def labellings_by_brute_force(log_probs: torch.Tensor, blank: int) -> list[tuple[float, tuple]]:
    """Every labelling's log probability: the sum over the alignments that collapse to it."""
    steps, classes = log_probs.shape
    total = collections.defaultdict(float)
    for path in itertools.product(range(classes), repeat=steps):
        labels = tuple(c for i, c in enumerate(path) if c != blank and (i == 0 or c != path[i - 1]))
        total[labels] += math.exp(sum(float(log_probs[t, c]) for t, c in enumerate(path)))
    return sorted(((math.log(p), labels) for labels, p in total.items()), key=lambda x: -x[0])


class Decoder(torch.nn.Module):
    def forward(self, log_probs, lengths):
        return poptorch.ctc_beam_search_decoder(log_probs, lengths, blank=0, top_paths=3)


def test_a_wide_beam_finds_the_most_likely_labellings():
    torch.manual_seed(0)
    log_probs = torch.randn(5, 2, 3).log_softmax(-1)  # (input length, batch, classes)
    lengths = torch.tensor([5, 3], dtype=torch.int32)
    probs, sizes, paths = poptorch.inferenceModel(Decoder())(log_probs, lengths)
    assert (probs.shape, sizes.shape, paths.shape) == ((2, 3), (2, 3), (2, 3, 5))
    assert sizes.dtype == paths.dtype == torch.int32
    for b in range(2):
        best = labellings_by_brute_force(log_probs[:lengths[b], b], blank=0)[:3]
        for k, (log_p, labels) in enumerate(best):
            assert probs[b, k].item() == pytest.approx(log_p, abs=1e-5)
            assert sizes[b, k].item() == len(labels)
            assert paths[b, k].tolist() == list(labels) + [0] * (5 - len(labels))


def test_a_narrow_beam_keeps_only_its_best_prefixes():
    torch.manual_seed(1)
    log_probs = torch.randn(6, 1, 4).log_softmax(-1)
    probs, _, _ = poptorch.ctc_beam_search_decoder(log_probs, torch.tensor([6]), beam_width=1)
    assert probs[0, 0].item() <= labellings_by_brute_force(log_probs[:, 0], 0)[0][0] + 1e-6


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(probs=[1.0]), poptorch.Error, r"ctc_beam_search_decoder: probs must be a torch.tensor "
                                        r"argument. <class 'list'> is not supported."),
    (dict(lengths=3), poptorch.Error, r"lengths must be a torch.tensor argument"),
    (dict(blank=4), ValueError, r"a blank among the classes .* blank=4"),
    (dict(top_paths=0), ValueError, r"top_paths=0"),
])
def test_arguments_are_checked(kwargs, error, message):
    arguments = {"probs": torch.zeros(2, 1, 4), "lengths": torch.tensor([2]), **kwargs}
    with pytest.raises(error, match=message):
        poptorch.ctc_beam_search_decoder(**arguments)
