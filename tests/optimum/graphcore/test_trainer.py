"""IPUTrainer and IPUTrainingArguments: fine-tuning offline, combined batches, n_ipu, overrides, saving."""
import json

import pytest
import torch

from ipu_tutorials.optimum.graphcore import IPUConfig, IPUTrainer, IPUTrainingArguments

transformers = pytest.importorskip("transformers")

T = 8


class FirstTokenTask(torch.utils.data.Dataset):
    """Label 1 when the first token is in the upper half of the vocabulary: learnable, offline."""

    def __init__(self, size: int, seed: int):
        generator = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(4, 100, (size, T), generator=generator)
        self.labels = (self.ids[:, 0] >= 52).long()

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, index):
        return {"input_ids": self.ids[index], "attention_mask": torch.ones(T, dtype=torch.long),
                "labels": self.labels[index]}


def tiny_bert():
    config = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=4,
                                     num_attention_heads=2, intermediate_size=64,
                                     max_position_embeddings=32, num_labels=2)
    return transformers.BertForSequenceClassification(config)


def accuracy(prediction):  # numpy arrays, as transformers' EvalPrediction holds
    return {"accuracy": float((prediction.predictions.argmax(-1) == prediction.label_ids).mean())}


def test_trainer_fine_tunes_bert_to_better_than_chance(tmp_path):
    ipu_config = IPUConfig(layers_per_ipu=[1, 1, 1, 1], gradient_accumulation_steps=16)
    args = IPUTrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=2,
                                per_device_eval_batch_size=4, learning_rate=1e-3,
                                num_train_epochs=2, fp32=True, logging_steps=8)
    trainer = IPUTrainer(tiny_bert(), ipu_config, args, train_dataset=FirstTokenTask(384, 0),
                         eval_dataset=FirstTokenTask(128, 1), compute_metrics=accuracy)
    result = trainer.train()
    assert result.global_step == 2 * 384 // (2 * 16)
    assert trainer.training_model.options.Training.gradient_accumulation == 16
    assert trainer.get_train_dataloader().batch_size == 2 * ipu_config.batch_size_factor()
    metrics = trainer.evaluate()
    assert metrics["eval_loss"] < 0.7  # below chance (ln 2 = 0.69)
    assert metrics["eval_accuracy"] > 0.75, metrics
    assert [entry["step"] for entry in trainer.state.log_history if "loss" in entry] == [8, 16, 24]
    summary = [entry for entry in trainer.state.log_history if "train_loss" in entry]
    assert summary[0]["train_loss"] == pytest.approx(result.training_loss)
    trainer.save_model()
    saved = json.loads((tmp_path / "ipu_config.json").read_text())
    assert saved["layers_per_ipu"] == [1, 1, 1, 1] and saved["seed"] == 42
    assert json.loads((tmp_path / "config.json").read_text())["architectures"] == [
        "BertForSequenceClassification"]


def test_n_ipu_overrides_and_precision():
    ipu_config = IPUConfig(layers_per_ipu=[2, 2], inference_layers_per_ipu=[4],
                           gradient_accumulation_steps=8)
    args = IPUTrainingArguments(n_ipu=8, ipu_config_overrides="device_iterations=2,"
                                "gradient_accumulation_steps=16", per_device_train_batch_size=3,
                                dataloader_mode="async")
    trainer = IPUTrainer(tiny_bert(), ipu_config, args, train_dataset=FirstTokenTask(200, 0))
    config = trainer.ipu_config
    assert (config.replication_factor, config.inference_replication_factor) == (4, 8)
    assert config.batch_size_factor() == 4 * 16 * 2 and config.seed == 42
    assert ipu_config.replication_factor == 1  # the trainer works on a copy
    assert trainer.get_train_dataloader().batch_size == 3 * 4 * 16 * 2
    assert next(trainer.model.parameters()).dtype == torch.float16  # fp32=False: model.half()


def test_argument_errors():
    with pytest.raises(ValueError, match="n_ipu=6 is not a multiple of ipus_per_replica=4"):
        IPUTrainer(tiny_bert(), IPUConfig(layers_per_ipu=[1, 1, 1, 1]), IPUTrainingArguments(n_ipu=6))
    with pytest.raises(ValueError, match="dataloader_mode must be one of sync, async, async_rebatched"):
        IPUTrainingArguments(dataloader_mode="fast")
    with pytest.raises(ValueError, match="Key layer_per_ipu isn't in the original config dict"):
        IPUTrainer(tiny_bert(), IPUConfig(), IPUTrainingArguments(ipu_config_overrides="layer_per_ipu=[2]"))


def test_compile_only_compiles_without_running():
    ipu_config = IPUConfig(layers_per_ipu=[2, 2], gradient_accumulation_steps=16)
    args = IPUTrainingArguments(compile_only=True, fp32=True, per_device_train_batch_size=2)
    trainer = IPUTrainer(tiny_bert(), ipu_config, args, train_dataset=FirstTokenTask(64, 0))
    assert trainer.train().global_step == 0
    assert trainer.training_model.isCompiled() and trainer.training_model.plan is not None


