"""optimum-graphcore's README fine-tuning example (IPUTrainer text classification), unchanged but
for the import, on a tiny random BERT with a local tokenizer, IPUConfig and dataset: no download."""
import numpy as np
import pytest

transformers = pytest.importorskip("transformers")
datasets = pytest.importorskip("datasets")

# The README's import line with `optimum.graphcore` changed to `ipu_tutorials.optimum.graphcore`.
from ipu_tutorials.optimum.graphcore import IPUConfig, IPUTrainer, IPUTrainingArguments  # noqa: E402

WORDS = ["good", "great", "fine", "nice", "bad", "awful", "poor", "sad", "the", "film", "was",
         "a", "plot", "and", "very", "not"]


def sentences(count: int, seed: int) -> dict:
    """Filler words around one sentiment word; the label says whether that word is positive."""
    rng = np.random.default_rng(seed)
    text, labels = [], []
    for _ in range(count):
        words = list(rng.choice(WORDS[8:], size=rng.integers(2, 6)))
        label = int(rng.integers(0, 2))
        words.insert(int(rng.integers(0, len(words) + 1)), rng.choice(WORDS[:4] if label else WORDS[4:8]))
        text.append(" ".join(words))
        labels.append(label)
    return {"sentence": text, "label": labels}


@pytest.fixture
def local_hub(tmp_path):
    """A local "checkpoint": tokenizer and tiny random BERT, and an IPUConfig directory."""
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    tokenizer = transformers.BertTokenizerFast(vocab={word: i for i, word in enumerate(vocab)})
    config = transformers.BertConfig(vocab_size=len(WORDS) + 5, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=64,
                                     max_position_embeddings=16, num_labels=2)
    transformers.set_seed(0)
    model = transformers.BertForSequenceClassification(config)
    IPUConfig(layers_per_ipu=[1, 1], gradient_accumulation_steps=4,
              device_iterations=2).save_pretrained(tmp_path / "ipu_config")
    return tokenizer, model, str(tmp_path / "ipu_config"), tmp_path


def test_the_readme_fine_tuning_example_trains_a_tiny_bert(local_hub):
    tokenizer, model, ipu_config_dir, tmp_path = local_hub
    tokenize = lambda batch: tokenizer(batch["sentence"], padding="max_length", max_length=10)  # noqa: E731
    train_dataset = datasets.Dataset.from_dict(sentences(256, 0)).map(tokenize, batched=True)
    eval_dataset = datasets.Dataset.from_dict(sentences(64, 1)).map(tokenize, batched=True)

    # --- the README's snippet, as written there (ipu_config_name is a local directory) -------
    training_args = IPUTrainingArguments(
        per_device_train_batch_size=4,
        learning_rate=1e-4 * 20,  # the README's 1e-4 is for bert-base; a tiny model wants more
        # Any IPUConfig on the Hub or stored locally
        ipu_config_name=ipu_config_dir,
        output_dir=str(tmp_path / "out"), num_train_epochs=4, fp32=True, do_train=True,
    )
    ipu_config = IPUConfig.from_pretrained(training_args.ipu_config_name)
    trainer = IPUTrainer(
        model=model,
        ipu_config=ipu_config,
        args=training_args,
        train_dataset=train_dataset if training_args.do_train else None,
        eval_dataset=eval_dataset,
        tokenizer=tokenizer,
        compute_metrics=lambda p: {"accuracy": float((p.predictions.argmax(-1) == p.label_ids).mean())},
    )
    # -------------------------------------------------------------------------------------------
    result = trainer.train()
    assert result.global_step == 4 * (256 // (4 * 4 * 2))  # epochs x samples / (micro x A x D)
    assert trainer.get_train_dataloader().batch_size == 4 * ipu_config.batch_size_factor() == 32
    metrics = trainer.evaluate()
    assert metrics["eval_accuracy"] > 0.8, metrics
    trainer.save_model()
    reloaded = IPUConfig.from_pretrained(tmp_path / "out")
    assert reloaded.layers_per_ipu == [1, 1] and reloaded.gradient_accumulation_steps == 4
