"""trainer_loop.py: how many IPU calls train() makes, and which output is the loss."""
import math

import pytest
import torch

from ipu_tutorials.optimum.graphcore import IPUConfig, IPUTrainer, IPUTrainingArguments
from ipu_tutorials.optimum.graphcore.trainer_loop import TrainingLoop, _loss_of
from tests.optimum.graphcore.test_trainer import FirstTokenTask, tiny_bert


def loop(**arguments):
    args = IPUTrainingArguments(per_device_train_batch_size=2, fp32=True, **arguments)
    trainer = IPUTrainer(tiny_bert(), IPUConfig(layers_per_ipu=[2, 2], gradient_accumulation_steps=4),
                         args, train_dataset=FirstTokenTask(200, 0))
    return TrainingLoop(trainer, None, None)


def test_epochs_count_the_combined_batches_and_max_steps_wins():
    epochs = loop(num_train_epochs=1.5)
    assert epochs.steps_per_epoch == 200 // (2 * 4)
    assert (epochs.max_steps, epochs.epochs) == (math.ceil(1.5 * 25), 2)
    steps = loop(max_steps=30)
    assert (steps.max_steps, steps.epochs) == (30, 2)


def test_the_loss_is_the_loss_entry_or_the_first_output():
    loss, logits = torch.tensor(0.5), torch.ones(2, 3)
    assert _loss_of({"logits": logits, "loss": loss}) is loss
    assert _loss_of((loss, logits)) is loss and _loss_of(loss) is loss


def test_a_training_set_smaller_than_one_combined_batch_is_refused():
    args = IPUTrainingArguments(per_device_train_batch_size=4, max_steps=3, fp32=True)
    trainer = IPUTrainer(tiny_bert(), IPUConfig(layers_per_ipu=[2, 2], gradient_accumulation_steps=16),
                         args, train_dataset=FirstTokenTask(32, 0))
    with pytest.raises(ValueError, match=r"smaller than one combined batch \(4 x 16 samples"):
        trainer.train()
