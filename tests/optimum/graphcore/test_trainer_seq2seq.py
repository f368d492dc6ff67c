"""trainer_seq2seq.py: generation settings default from the arguments; IPU generation is refused."""
import pytest

from ipu_tutorials.optimum.graphcore import IPUConfig
from ipu_tutorials.optimum.graphcore.trainer_seq2seq import IPUSeq2SeqTrainer
from ipu_tutorials.optimum.graphcore.training_args_seq2seq import IPUSeq2SeqTrainingArguments
from tests.optimum.graphcore.test_trainer import FirstTokenTask, tiny_bert


def trainer(**arguments):
    args = IPUSeq2SeqTrainingArguments(fp32=True, per_device_eval_batch_size=4, **arguments)
    return IPUSeq2SeqTrainer(tiny_bert(), IPUConfig(layers_per_ipu=[2, 2]), args,
                             eval_dataset=FirstTokenTask(16, 1))


def test_evaluate_takes_the_generation_settings_it_is_given_or_the_arguments_ones():
    seq2seq = trainer(generation_max_length=20, generation_num_beams=2)
    metrics = seq2seq.evaluate(num_beams=3, top_k=5)
    assert seq2seq._gen_kwargs == {"max_length": 20, "num_beams": 3, "top_k": 5}
    assert metrics["eval_loss"] > 0


def test_generation_on_the_ipu_is_refused_with_what_to_do_instead():
    seq2seq = trainer(predict_with_generate=True)
    for call in (seq2seq.evaluate, lambda: seq2seq.predict(FirstTokenTask(4, 2))):
        with pytest.raises(NotImplementedError, match=r"predict_with_generate=True runs "
                                                      r"generation on the IPU .* evaluate with "
                                                      r"predict_with_generate=False"):
            call()
