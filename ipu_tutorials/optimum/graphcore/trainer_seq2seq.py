"""IPUSeq2SeqTrainer: IPUTrainer for encoder-decoder models, with generation settings on evaluate/predict."""
from __future__ import annotations

from .trainer import IPUTrainer


class IPUSeq2SeqTrainer(IPUTrainer):
    """IPUTrainer that takes IPUSeq2SeqTrainingArguments; evaluate/predict take max_length and
    num_beams (defaulting to generation_max_length and generation_num_beams).

    Raises:
        NotImplementedError: for predict_with_generate=True: generation on (simulated) IPUs,
            optimum-graphcore's IPUGenerationMixin, is not simulated.
    """

    def _generation_kwargs(self, max_length, num_beams) -> dict:
        if getattr(self.args, "predict_with_generate", False):
            raise NotImplementedError(
                "predict_with_generate=True runs generation on the IPU (optimum-graphcore's "
                "IPUGenerationMixin), which ipu_tutorials does not simulate; evaluate with "
                "predict_with_generate=False (loss and logits), or call model.generate() on the host.")
        return {"max_length": max_length or getattr(self.args, "generation_max_length", None),
                "num_beams": num_beams or getattr(self.args, "generation_num_beams", None)}

    def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval",
                 max_length: int | None = None, num_beams: int | None = None, **gen_kwargs):
        self._gen_kwargs = {**self._generation_kwargs(max_length, num_beams), **gen_kwargs}
        return super().evaluate(eval_dataset, ignore_keys, metric_key_prefix)

    def predict(self, test_dataset, ignore_keys=None, metric_key_prefix: str = "test",
                max_length: int | None = None, num_beams: int | None = None, **gen_kwargs):
        self._gen_kwargs = {**self._generation_kwargs(max_length, num_beams), **gen_kwargs}
        return super().predict(test_dataset, ignore_keys, metric_key_prefix)
