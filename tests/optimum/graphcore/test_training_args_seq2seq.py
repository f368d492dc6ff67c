"""training_args_seq2seq.py: the IPU training arguments plus optimum's seq2seq fields."""
import dataclasses

import pytest

from ipu_tutorials.optimum.graphcore import IPUTrainingArguments
from ipu_tutorials.optimum.graphcore.training_args_seq2seq import IPUSeq2SeqTrainingArguments

SEQ2SEQ_DEFAULTS = {"sortish_sampler": False, "predict_with_generate": False,
                    "generation_max_length": None, "generation_num_beams": None,
                    "generation_config": None}  # optimum-graphcore's training_args_seq2seq.py


def test_the_seq2seq_fields_are_added_with_optimums_defaults():
    base = {f.name for f in dataclasses.fields(IPUTrainingArguments)}
    added = {f.name: f.default for f in dataclasses.fields(IPUSeq2SeqTrainingArguments)
             if f.name not in base}
    assert added == SEQ2SEQ_DEFAULTS


def test_they_are_set_like_any_other_argument_and_checked_like_the_rest():
    args = IPUSeq2SeqTrainingArguments(predict_with_generate=True, generation_num_beams=4,
                                       n_ipu=4)
    assert (args.predict_with_generate, args.generation_num_beams, args.n_ipu) == (True, 4, 4)
    assert args.to_dict()["generation_num_beams"] == 4
    assert isinstance(args, IPUTrainingArguments)
    with pytest.raises(ValueError, match="n_ipu must be a positive integer"):
        IPUSeq2SeqTrainingArguments(predict_with_generate=True, n_ipu=0)
