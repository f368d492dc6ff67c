"""IPUTrainer checkpoints: what a checkpoint holds, and resuming from one equals training straight."""
import os

import pytest
import torch

pytest.importorskip("transformers")
from ipu_tutorials.optimum.graphcore import (IPUConfig, IPUTrainer, IPUTrainerState,  # noqa: E402
                                             IPUTrainingArguments)


class Line(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Parameter(torch.tensor(0.0)), torch.nn.Parameter(torch.tensor(0.0))

    def forward(self, x, labels=None):
        y = x * self.a + self.b
        return (torch.nn.functional.mse_loss(y, labels), y) if labels is not None else (y,)


class Points(torch.utils.data.Dataset):
    def __init__(self):
        self.x = torch.randn(48, generator=torch.Generator().manual_seed(0))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"x": self.x[i], "labels": 2 * self.x[i] + 3}


def trainer(output_dir) -> IPUTrainer:
    args = IPUTrainingArguments(str(output_dir), per_device_train_batch_size=2, learning_rate=0.1,
                                max_steps=9, save_steps=3, save_total_limit=2, fp32=True)
    return IPUTrainer(Line(), IPUConfig(gradient_accumulation_steps=2), args,
                      train_dataset=Points(), force_to_pipelined=True)


def test_resuming_from_a_checkpoint_ends_where_training_straight_ends(tmp_path):
    straight = trainer(tmp_path)
    straight.train()
    assert sorted(os.listdir(tmp_path)) == ["checkpoint-6", "checkpoint-9"]  # save_total_limit=2
    files = set(os.listdir(tmp_path / "checkpoint-6"))
    assert {"pytorch_model.bin", "optimizer.pt", "scheduler.pt", "rng_state.pth",
            "trainer_state.json", "ipu_config.json"} <= files
    assert IPUTrainerState.load_from_json(tmp_path / "checkpoint-6" / "trainer_state.json").global_step == 6
    resumed = trainer(tmp_path)
    resumed.train(resume_from_checkpoint=str(tmp_path / "checkpoint-6"))
    assert resumed.state.global_step == 9
    assert torch.equal(resumed.model.a, straight.model.a) and torch.equal(resumed.model.b, straight.model.b)


def test_missing_checkpoints_are_one_clear_error(tmp_path):
    with pytest.raises(ValueError, match="Can't find a valid checkpoint at"):
        trainer(tmp_path).train(resume_from_checkpoint=str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match="No valid checkpoint found in output directory"):
        trainer(tmp_path).train(resume_from_checkpoint=True)
