"""trainer_evaluation.py: outputs split into loss and logits, gathered, scored with a prefix."""
import numpy as np
import pytest
import torch

from ipu_tutorials.optimum.graphcore.trainer_evaluation import evaluation_loop, split_outputs

LOSS, LOGITS, EXTRA = torch.tensor(0.25), torch.ones(2, 3), torch.zeros(2)


@pytest.mark.parametrize("outputs, has_labels, expected", [
    ({"loss": LOSS, "logits": LOGITS, "hidden": EXTRA}, True, (LOSS, (LOGITS, EXTRA))),
    ({"loss": LOSS, "logits": LOGITS, "hidden": EXTRA}, False, (None, (LOGITS, EXTRA))),
    ((LOSS, LOGITS), True, (LOSS, LOGITS)),
    ((LOSS, LOGITS), False, (None, (LOSS, LOGITS))),
    (LOGITS, False, (None, LOGITS)),
])
def test_the_loss_needs_labels_and_a_single_logit_is_unwrapped(outputs, has_labels, expected):
    assert split_outputs(outputs, has_labels, []) == expected


def test_ignored_keys_are_left_out_of_the_logits():
    outputs = {"loss": LOSS, "logits": LOGITS, "hidden": EXTRA}
    assert split_outputs(outputs, True, ["hidden"]) == (LOSS, LOGITS)


class ScoresByHalves:
    """A trainer whose executor returns loss = the batch's first label, logits = its inputs."""

    label_names = ["labels"]
    preprocess_logits_for_metrics = None

    @staticmethod
    def compute_metrics(prediction):
        return {"agree": np.float32((prediction.predictions == prediction.label_ids).mean())}

    def _inference_executor(self):
        return lambda x, labels: {"loss": labels[0].float(), "logits": x}


def test_losses_are_weighted_by_batch_size_and_metrics_prefixed():
    batches = [{"x": torch.tensor([1, 0, 1]), "labels": torch.tensor([1, 1, 1])},
               {"x": torch.tensor([0]), "labels": torch.tensor([0])}]
    result = evaluation_loop(ScoresByHalves(), batches, False, [], "eval")
    assert result.num_samples == 4 and result.predictions.tolist() == [1, 0, 1, 0]
    assert result.metrics == {"eval_agree": 0.75, "eval_loss": 0.75}  # (3 x 1 + 1 x 0) / 4
    only_loss = evaluation_loop(ScoresByHalves(), batches, True, [], "test")
    assert only_loss.predictions is None and only_loss.metrics == {"test_loss": 0.75}
