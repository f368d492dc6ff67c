"""poptorch.ctc_beam_search_decoder: the most likely labellings of CTC log probabilities.

PopTorch runs PopLibs' beam search on the IPU; this is the textbook CTC prefix beam search
(the same labellings once the beam holds every prefix worth keeping). It is a torch custom op:
the simulator plans a model on meta tensors, where the op only states its output shapes, and
runs the search on the host when the model runs, so no value it reads is frozen into the graph.
"""
from __future__ import annotations

import collections
import math

import torch

from ..errors import Error

_NEG_INF = -math.inf


def _logadd(a: float, b: float) -> float:
    if a == _NEG_INF:
        return b
    if b == _NEG_INF:
        return a
    return max(a, b) + math.log1p(math.exp(-abs(a - b)))


def _search(log_probs: list[list[float]], blank: int, beam_width: int) -> list[tuple]:
    """(log probability, labels) of the beams after every step, most likely first.

    Each prefix (a labelling, repeats collapsed, blanks removed) keeps the probability of the
    alignments that end in a blank and of those that end in its last label: a repeated label
    extends the prefix only after a blank.
    """
    beams = {(): (0.0, _NEG_INF)}  # prefix -> (log p ending in blank, log p ending in a label)
    for step in log_probs:
        grown = collections.defaultdict(lambda: [_NEG_INF, _NEG_INF])
        for prefix, (blank_end, label_end) in beams.items():
            total = _logadd(blank_end, label_end)
            for label, p in enumerate(step):
                if label == blank:
                    grown[prefix][0] = _logadd(grown[prefix][0], total + p)
                elif prefix and prefix[-1] == label:  # "aa" collapses unless a blank separates
                    grown[prefix][1] = _logadd(grown[prefix][1], label_end + p)
                    grown[prefix + (label,)][1] = _logadd(grown[prefix + (label,)][1],
                                                          blank_end + p)
                else:
                    grown[prefix + (label,)][1] = _logadd(grown[prefix + (label,)][1], total + p)
        ranked = sorted(grown.items(), key=lambda item: -_logadd(*item[1]))[:beam_width]
        beams = {prefix: tuple(p) for prefix, p in ranked}
    return sorted(((_logadd(*p), prefix) for prefix, p in beams.items()), key=lambda x: -x[0])


@torch.library.custom_op("ipu_tutorials::ctc_beam_search_decoder", mutates_args=())
def _decode(probs: torch.Tensor, lengths: torch.Tensor, blank: int, beam_width: int,
            top_paths: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    steps, batch, _ = probs.shape
    path_probs = torch.full((batch, top_paths), _NEG_INF, dtype=probs.dtype)
    path_lengths = torch.zeros(batch, top_paths, dtype=torch.int32)
    paths = torch.zeros(batch, top_paths, steps, dtype=torch.int32)
    for b in range(batch):
        length = min(int(lengths[b]), steps)
        found = _search(probs[:length, b].double().tolist(), blank, beam_width)[:top_paths]
        for k, (log_p, labels) in enumerate(found):
            path_probs[b, k] = log_p
            path_lengths[b, k] = len(labels)
            paths[b, k, :len(labels)] = torch.tensor(labels, dtype=torch.int32)
    return path_probs, path_lengths, paths


@_decode.register_fake
def _(probs, lengths, blank, beam_width, top_paths):
    steps, batch, _ = probs.shape
    return (probs.new_empty(batch, top_paths),
            lengths.new_empty(batch, top_paths, dtype=torch.int32),
            lengths.new_empty(batch, top_paths, steps, dtype=torch.int32))


def ctc_beam_search_decoder(probs: torch.Tensor, lengths: torch.Tensor, blank: int = 0,
                            beam_width: int = 100, top_paths: int = 1) -> list[torch.Tensor]:
    """The `top_paths` most likely labellings of each sequence (CTC beam search).

    Args:
        probs: log probabilities, (input length, batch, classes).
        lengths: each sequence's length, (batch,); the steps after it are not read.
        blank: the blank class.
        beam_width: the prefixes kept after each step.
        top_paths: the labellings returned per sequence, most likely first.

    Returns:
        [log probability (batch, top_paths), length (batch, top_paths) int32, labels
        (batch, top_paths, input length) int32, zero after each labelling's length].

    Raises:
        poptorch.Error: probs or lengths is not a tensor (PopTorch's message).
        ValueError: a count below 1 or a blank outside the classes.
    """
    for name, value in (("probs", probs), ("lengths", lengths)):
        if not isinstance(value, torch.Tensor):
            raise Error(f"ctc_beam_search_decoder: {name} must be a torch.tensor argument. "
                        f"{type(value)} is not supported.")
    if probs.dim() != 3 or not 0 <= blank < probs.shape[-1] or beam_width < 1 or top_paths < 1:
        raise ValueError(f"ctc_beam_search_decoder needs probs of shape (input length, batch, "
                         f"classes), a blank among the classes and beam_width, top_paths >= 1; "
                         f"got probs {tuple(probs.shape)}, blank={blank}, "
                         f"beam_width={beam_width}, top_paths={top_paths}")
    return list(_decode(probs, lengths, blank, beam_width, top_paths))
