"""IPUTrainingArguments: transformers' fields and properties, and what moves to the IPUConfig."""
import logging

import pytest

pytest.importorskip("transformers")
from ipu_tutorials.optimum.graphcore import IPUTrainingArguments  # noqa: E402


def test_accumulation_and_loss_scaling_move_to_the_ipu_config(tmp_path):
    args = IPUTrainingArguments(str(tmp_path), gradient_accumulation_steps=8, auto_loss_scaling=True,
                                ipu_config_overrides="device_iterations=2")
    assert args.gradient_accumulation_steps == 1  # the host never accumulates
    assert args.ipu_config_overrides == ("device_iterations=2,gradient_accumulation_steps=8,"
                                         "auto_loss_scaling=True")


def test_transformers_properties_describe_one_host_process(tmp_path):
    args = IPUTrainingArguments(str(tmp_path), per_device_train_batch_size=3,
                                evaluation_strategy="steps", load_best_model_at_end=True)
    assert (args.train_batch_size, args.eval_batch_size) == (3, 1)  # micro-batches; default 1
    assert str(args.device) == "cpu" and args.n_gpu == 0 and args.world_size == 1
    assert args.eval_strategy == "steps" and args.greater_is_better is False
    assert args.get_process_log_level() == logging.INFO  # "passive", as optimum-graphcore
    assert IPUTrainingArguments(str(tmp_path), log_level="error").get_process_log_level() == logging.ERROR
    assert args.to_dict()["per_device_train_batch_size"] == 3


def test_bad_ipu_fields_are_refused(tmp_path):
    with pytest.raises(ValueError, match="dataloader_mode must be one of sync, async, async_rebatched"):
        IPUTrainingArguments(str(tmp_path), dataloader_mode="fast")
    with pytest.raises(ValueError, match="n_ipu must be a positive integer"):
        IPUTrainingArguments(str(tmp_path), n_ipu=0)
