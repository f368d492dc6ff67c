"""IPUTrainingArguments: optimum's defaults, and each bad value refused with the valid ones."""
import pytest

from ipu_tutorials.optimum.graphcore import IPUTrainingArguments


def test_defaults_are_transformers_and_optimums():
    args = IPUTrainingArguments()
    assert (args.learning_rate, args.adam_beta2, args.num_train_epochs, args.max_steps) == \
        (5e-5, 0.999, 3.0, -1)
    assert args.dataloader_mode == "sync" and args.dataloader_drop_last


@pytest.mark.parametrize("field, value, message", [
    ("dataloader_mode", "fast", r"dataloader_mode must be one of sync, async, async_rebatched; "
                                r"got 'fast'"),
    ("lr_scheduler_type", "cosine", r"lr_scheduler_type must be 'linear' or 'constant' here"),
    ("per_device_train_batch_size", 0, r"per_device_train_batch_size must be a positive "
                                       r"integer; got 0"),
    ("per_device_eval_batch_size", 2.0, r"per_device_eval_batch_size must be a positive integer"),
    ("n_ipu", 0, r"n_ipu must be a positive integer \(or None\); got 0"),
    ("warmup_ratio", 1.0, r"warmup_ratio must be in \[0, 1\); got 1.0"),
])
def test_each_bad_value_is_refused(field, value, message):
    with pytest.raises(ValueError, match=message):
        IPUTrainingArguments(**{field: value})
