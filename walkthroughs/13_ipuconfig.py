# %% [markdown]
# # Lesson 13: IPUConfig and Hugging Face models
#
# Hugging Face users did not write PopTorch options by hand. optimum-graphcore kept them in an
# `IPUConfig`, a small JSON file next to the model (`ipu_config.json`), and turned it into
# `poptorch.Options` and `poptorch.BeginBlock` placements for BERT, GPT-2, ViT and others.
# `ipu_tutorials.optimum.graphcore` reproduces that API on simulated IPUs: optimum code runs
# with `optimum.graphcore` replaced by `ipu_tutorials.optimum.graphcore`.
#
# **Which release.** optimum-graphcore changed its defaults between releases. This lesson
# follows **v0.7.1**, the last release (tagged July 2023), as the package does: its attributes,
# its defaults (`matmul_proportion` 0.2, `optimizer_state_offchip` False) and its module
# layout.<!-- claim: L13-v071-defaults --> The older releases differ: up to v0.5.0
# `matmul_proportion` defaulted to 0.6, and up to v0.6.0 `optimizer_state_offchip` to
# True.<!-- claim: L13-old-defaults --> From v0.2.1 to v0.6.0 any value could also be given per
# POD type (`for_pod_type`); v0.6.1 removed that in favour of a trainer's `n_ipu`, deprecating
# the trainer's own `pod_type` argument, which v0.7.0 removed.<!-- claim: L13-pod-type --> One
# section below uses that older POD-type API, which the simulator keeps beside v0.7.1's
# ([docs/ipuconfig.md](../docs/ipuconfig.md) lists what it adds).
#
# **What you will learn**
# - what an `IPUConfig` holds and which `poptorch.Options` it stands for;
# - how `layers_per_ipu` and `get_layer_ipu` pipeline a transformers BERT over 4 IPUs;
# - how to read the per-IPU memory and the timeline of a pipelined BERT-Base;
# - how one configuration served a Pod16 and a Pod64 (the POD types of v0.2.1 to v0.6.0),
#   and what `batch_size_factor` computes;
# - how an `IPUConfig` travels as JSON, and how `IPUTrainer` uses it.
#
# **Time:** about 45 minutes.
#
# **Prerequisites:** lessons 3 and 4 (blocks, stages, pipelining) and lesson 8 (memory plans).
# Needs `transformers` (`pip install -e ".[huggingface]"`); every model is built from a small
# configuration with random weights, so nothing is downloaded.
#
# **Coming from GPUs:** an `IPUConfig` is what `accelerate` settings are for a GPU run
# ([the GPU bridge](../docs/coming-from-gpus.md)).

# %%
import json
import tempfile

import matplotlib.pyplot as plt
import torch
import transformers

import ipu_tutorials
from ipu_tutorials import poptorch
from ipu_tutorials.optimum.graphcore import IPUConfig, IPUTrainer, IPUTrainingArguments
from ipu_tutorials.optimum.graphcore.modeling_utils import get_layer_ipu, to_pipelined

_ = torch.manual_seed(0)  # the same numbers on every run
transformers.logging.set_verbosity_error()

# %% [markdown]
# ## A configuration in a few fields
#
# `layers_per_ipu` says how many transformer layers each IPU of a replica takes; its length is
# the number of IPUs per replica. The other fields size the batch (replication, gradient
# accumulation, device iterations) and the memory (matmul proportion, optimizer offload,
# recomputation). Saved, only the values that differ from v0.7.1's defaults are written, and
# a new configuration keeps its optimizer state on chip, v0.7.1's default:

# %%
ipu_config = IPUConfig(layers_per_ipu=[1, 1, 1, 1], gradient_accumulation_steps=16,
                       matmul_proportion=0.25, output_mode="all")
print(ipu_config.to_json_string())
print("ipus_per_replica:", ipu_config.ipus_per_replica,
      "| optimizer_state_offchip:", ipu_config.optimizer_state_offchip)

# %% [markdown]
# ## What it stands for: `to_options`
#
# `to_options()` builds the training options (pipelined) and `to_options(for_inference=True)`
# the inference ones (sharded). Both use `AutoStage.AutoIncrement`, so each block that
# `parallelize()` begins is a stage on the IPU it names.<!-- claim: L13-to-options -->

# %%
for name, opts in [("training", ipu_config.to_options()),
                   ("inference", ipu_config.to_options(for_inference=True))]:
    strategy = type(opts._execution_strategy).__name__  # a private field, in PopTorch too
    print(f"{name}: {strategy}, gradient accumulation {opts.Training.gradient_accumulation}, "
          f"output {poptorch.OutputMode(opts.output_mode).name}")
print("memory proportions:", ipu_config.to_options().available_memory_proportion)
print("optimizer state:", ipu_config.to_options().TensorLocations.location_optimizer)

# %% [markdown]
# ## A BERT pipelined by `layers_per_ipu`
#
# `to_pipelined` turns a transformers model into its pipelined twin (same weights), and
# `parallelize()` places it: the embeddings begin block `Embedding` on IPU 0, encoder layer `i`
# begins `Encoder{i}` on the IPU `get_layer_ipu` names, the classifier goes to the last IPU.
# Both functions live in `optimum.graphcore.modeling_utils`: no release exports them from the
# package itself.<!-- claim: L13-modeling-utils -->

# %%
tiny = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=4,
                               num_attention_heads=2, intermediate_size=64,
                               max_position_embeddings=16, num_labels=2)
model = to_pipelined(transformers.BertForSequenceClassification(tiny), ipu_config).parallelize()
print("get_layer_ipu:", get_layer_ipu(ipu_config, model.bert.encoder.layer))

optimizer = poptorch.optim.AdamW(model.parameters(), lr=1e-3)
training_model = poptorch.trainingModel(model, ipu_config.to_options(), optimizer)
tokens = torch.randint(0, 100, (2 * ipu_config.batch_size_factor(), 8))  # micro-batch 2
labels = (tokens[:, 0] >= 50).long()
for step in range(3):
    losses = training_model(input_ids=tokens, labels=labels).loss
    print(f"step {step}: mean loss {losses.mean():.4f} over {len(losses)} micro-batches")
print(training_model.plan.placement.describe())  # simulator extra; on IPUs: PopVision

# %% [markdown]
# Each encoder layer sits on the IPU `get_layer_ipu` gave it. The math is PyTorch's: the
# tests check these losses and weights against a plain PyTorch loop doing the same gradient
# accumulation, to 1e-5.
#
# ## BERT-Base: memory and timeline per IPU
#
# Compiling needs only shapes, so a real-sized model can be planned on meta tensors. The
# explorer module's `plan_bert` pipelines BERT-Base with a masked-LM head (float16, AdamW,
# micro-batch 4, sequence 128) by an IPUConfig and compiles its training.

# %%
from ipu_tutorials.classroom.explorers.ipuconfig import (BERT_BASE, MICRO_BATCH,
                                                         bert_ipu_config, describe, plan_bert)

even = plan_bert(bert_ipu_config([3, 3, 3, 3]))
print(even.memory.table())
print(describe(even).replace("<b>", "").replace("</b>", ""))
print(f"vocabulary: {transformers.BertConfig(**BERT_BASE).vocab_size:,} tokens")

# %% [markdown]
# The masked-LM head projects onto the whole vocabulary (its size is the cell's last line)
# and shares its weight with the word embedding, so optimum-graphcore keeps it on IPU 0,
# beside the embedding.<!-- claim: L13-mlm-head --> IPU 0 ends up with more memory and more
# work than the others, which the timeline shows:

# %%
from ipu_tutorials.profiling.plots import plot_memory, plot_timeline

# alt: Top: memory on IPUs 0 to 3 for BERT-Base with layers_per_ipu=[3, 3, 3, 3]: IPU 0, which
#   also holds the embedding, uses the most; all are under the 897 MiB capacity line. Bottom:
#   timeline of one training step: pipelined forward and backward passes on IPUs 0 to 3, then
#   streaming of the optimizer state, longest on IPU 0.
fig, (top, bottom) = plt.subplots(2, 1, figsize=(6.9, 6.4), gridspec_kw={"height_ratios": [2, 3]})
plot_memory(even.memory.ipus, ax=top, title="memory per IPU")
plot_timeline(even.plan.timeline.events, 4, ax=bottom, label_micro_batches=False,
              title="one training step, layers_per_ipu=[3, 3, 3, 3]")
plt.tight_layout()
plt.show()

# %% [markdown]
# The long orange boxes at the end of the step are the optimizer state streaming in from
# off-chip memory and back around the weight update: this BERT keeps `optimizer_state_offchip`
# True, as Graphcore's BERT configurations do (v0.7.1's default is False; up to v0.6.0 it was
# True), which saves memory on every IPU and costs this time.
#
# ## One file for a Pod16 and a Pod64 (v0.2.1 to v0.6.0)
#
# From optimum-graphcore v0.2.1 to v0.6.0 any value can be given per POD type, as a dict keyed
# by `"default"` or a POD type (`"pod4"`, `"pod8"`, `"pod16"`, `"pod32"`, `"pod64"` from
# v0.2.3; v0.2.1 and v0.2.2 had `"pod4"`, `"pod16"`, `"pod64"`, `"pod128"`, `"pod256"`).
# `for_pod_type`, `to_options(pod_type=...)` and `batch_size_factor(pod_type=...)` pick the
# values (v0.6.1 replaced them by `IPUTrainingArguments.n_ipu`).<!-- claim: L13-pod-values -->
# With more IPUs the same pipeline is replicated more, and accumulates less. Those releases
# took `ipus_per_replica` as 1 when it was left out (v0.6 derives it from `layers_per_ipu`), so
# their files give it.

# %%
pod_config = bert_ipu_config([3, 3, 3, 3], ipus_per_replica=4,
                             replication_factor={"pod16": 4, "pod64": 16},
                             gradient_accumulation_steps={"pod16": 64, "pod64": 32})
for pod_type, num_ipus in [("pod16", 16), ("pod64", 64)]:
    ipu_tutorials.set_system("ipu2", num_ipus)
    factor = pod_config.batch_size_factor(pod_type=pod_type)
    planned = plan_bert(pod_config.for_pod_type(pod_type))
    print(f"{pod_type}: replication {pod_config.to_options(pod_type=pod_type).replication_factor}, "
          f"batch_size_factor {factor}, combined batch {MICRO_BATCH * factor:,}, "
          f"{planned.plan.samples_per_second:,.0f} sequences/s simulated")
ipu_tutorials.reset_system()

# %% [markdown]
# How far to trust a simulated throughput: on eleven published Graphcore runs it was not
# calibrated on, the simulator lands between 0.80x and 1.56x of the published figure, nine
# of them within 1.25x (docs/cost-model.md, "Validation against runs it was not calibrated on").

# %% [markdown]
# ## The JSON round trip
#
# `save_pretrained(directory)` writes `directory/ipu_config.json`; `from_pretrained` reads a
# directory or a file back (a Hub name such as `"Graphcore/bert-base-ipu"` gets an error saying
# that nothing is downloaded). POD-type dicts survive the trip.

# %%
with tempfile.TemporaryDirectory() as directory:
    pod_config.save_pretrained(directory)
    with open(f"{directory}/ipu_config.json") as handle:
        saved = json.load(handle)
    loaded = IPUConfig.from_pretrained(directory)
print("saved:", saved)
print("loaded == saved config:", loaded == pod_config)
loaded.update_from_string("gradient_accumulation_steps=128,matmul_proportion=[0.2 0.25 0.25 0.25]")
print("after update_from_string:", loaded.gradient_accumulation_steps, loaded.matmul_proportion)

# %% [markdown]
# ## `IPUTrainer`
#
# optimum's example scripts hand the model, the IPUConfig and `IPUTrainingArguments` to an
# `IPUTrainer`. It pipelines the model, batches the data by `per_device_train_batch_size x
# batch_size_factor()`, trains through `poptorch.trainingModel` and evaluates through
# `poptorch.inferenceModel`. Two steps of the tiny BERT:

# %%
class FirstToken(torch.utils.data.Dataset):
    """Label 1 when the first token is in the upper half of the vocabulary."""

    def __len__(self):
        return 128

    def __getitem__(self, i):
        return {"input_ids": tokens[i % len(tokens)], "labels": labels[i % len(labels)]}


args = IPUTrainingArguments(per_device_train_batch_size=2, max_steps=2, fp32=True,
                            learning_rate=1e-3, n_ipu=4, logging_steps=1,
                            output_dir=tempfile.mkdtemp(), save_strategy="no")
trainer = IPUTrainer(transformers.BertForSequenceClassification(tiny), ipu_config, args,
                     train_dataset=FirstToken())
result = trainer.train()
print(f"combined batch {trainer.get_train_dataloader().batch_size}, "
      f"{result.global_step} steps, losses "
      f"{[round(e['loss'], 4) for e in trainer.state.log_history if 'loss' in e]}")

# %% [markdown]
# ## Explore: layers per IPU
#
# Move layers between IPUs and watch the memory bars and the timeline. IPU 3 takes the layers
# the sliders leave, as a `-1` in `layers_per_ipu` would.

# %%
from ipu_tutorials.classroom.explorers.ipuconfig import ipuconfig_explorer

# alt: The IPUConfig explorer for layers_per_ipu=[3, 3, 3, 3]. Top: memory on IPUs 0 to 3, IPU 0
#   the fullest, all under capacity. Bottom: one training step's timeline, in which IPU 0's compute
#   and streaming take longest, so the other IPUs wait for it.
ipuconfig_explorer(first=3, second=3, third=3)

# %% [markdown]
# ## What a real IPU would do, and where the simulator differs
#
# On an IPU system `to_options()` refuses to run ("This requires an IPU Mk2 system to run")
# unless `poptorch.ipuHardwareVersion()` is 2 or 21 or `compile_only=True`; here the IPUs are
# simulated and nothing asks for hardware.<!-- claim: L13-mk2-check --> optimum-graphcore also
# swaps BERT's attention for a fused-QKV version and sets PopART outlining and scheduling
# flags:<!-- claim: L13-fused-qkv --> the flags are recorded in the options but not
# simulated, and the attention is left as transformers wrote it (the same math). Times and
# memory come from the simulator's cost model, so compare configurations with them rather
# than quoting them as hardware figures. On a Bow Pod the same `ipu_config.json` applies
# unchanged: Graphcore sells the Bow-2000 as backwards compatible with the IPU-M2000, "with no
# code changes" (the 21 that `to_options()` also accepts is the C600's `ipu21`, Mk2 with
# FP8);<!-- claim: L12-bow-arch --> the faster Bow clock shortens the compute parts of the
# timeline, not the layer split.
#
# ## Exercises

# %%
from ipu_tutorials.classroom.exercises import ipuconfig as exercises

# %% [markdown]
# ### Exercise 13.1: balance BERT-Base
#
# Write the `layers_per_ipu` (four numbers adding up to 12) that gives this BERT-Base the
# highest simulated throughput. The check compiles your split.

# %% tags=["answer"]
# starting code: exercises.balance_bert.starting_code

# %%
exercises.balance_bert.check(my_layers_per_ipu)

# %% [markdown]
# ### Exercise 13.2: the combined batch on a Pod64
#
# `exercises.POD_CONFIG` gives `replication_factor` and `gradient_accumulation_steps` per POD
# type and `device_iterations=2`. With a micro-batch of 8, how many sequences does one
# training call consume on a Pod64?

# %%
print(exercises.POD_CONFIG.to_json_string())

# %% tags=["answer"]
# starting code: exercises.pod64_batch.starting_code

# %%
exercises.pod64_batch.check(my_pod64_batch)

# %% [markdown]
# ## Summary
#
# - An `IPUConfig` is the PopTorch setup of a Hugging Face model as JSON: `to_options()` gives
#   pipelined training options, `to_options(for_inference=True)` sharded inference ones.
# - `layers_per_ipu` (with `-1` for "share the rest") and `get_layer_ipu` decide which IPU each
#   layer runs on; `parallelize()` applies it with `poptorch.BeginBlock`.
# - Heads that share weights with the embedding stay on IPU 0, so IPU 0 takes fewer layers.
# - Per-POD-type values and `batch_size_factor` size the same model for a Pod16 or a Pod64.
#
# **Next:** lesson 14 (Lightning) trains with PyTorch Lightning on simulated IPUs.
#
# ## References
#
# - optimum-graphcore, `optimum/graphcore/ipu_configuration.py` at tag v0.7.1 (the release this
#   lesson follows) and at v0.2.1 to v0.6.0 (the POD types), `training_args.py` at v0.6.1
#   (`pod_type` deprecated), and `modeling_utils.py` (`get_layer_ipu`, `to_pipelined`, the `-1`
#   wildcard): https://github.com/huggingface/optimum-graphcore
# - optimum-graphcore documentation, "IPUConfig" and "IPUTrainer":
#   https://huggingface.co/docs/optimum/graphcore/index
# - PopTorch user guide (SDK 3.4), "Multi-IPU execution strategies" (`AutoStage`, pipelined
#   and sharded execution):
#   https://docs.graphcore.ai/projects/poptorch-user-guide/en/latest/overview.html
# - J. Devlin et al., "BERT: Pre-training of Deep Bidirectional Transformers for Language
#   Understanding", NAACL 2019 (arXiv:1810.04805), for BERT-Base's sizes.
# - Coming from GPUs: [docs/coming-from-gpus.md](../docs/coming-from-gpus.md).
