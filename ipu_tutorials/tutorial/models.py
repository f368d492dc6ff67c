"""The lessons' models: lesson 1's digit classifier, the tutorial's MNIST network in four blocks,
lesson 3's three-block model for the placement rules, a transformer for planning large
models and BERT-Large's pretraining graph (lesson 15's recipe; the calibration plans it too).
Lessons show these classes with `# show:` lines (ipu_tutorials/course/shown_code.py), so what a learner reads is what the package runs."""
from __future__ import annotations

import math

import torch
import torch.nn as nn

from .. import poptorch


class DigitClassifierWithLoss(torch.nn.Module):
    """A two-layer MNIST classifier that returns (output, loss) when given labels."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 128),
                                       torch.nn.ReLU(), torch.nn.Linear(128, 10))

    def forward(self, images, labels=None):  # images: (B, 1, 28, 28)
        output = self.net(images)  # (B, 10)
        if labels is None:
            return output
        return output, torch.nn.functional.cross_entropy(output, labels)


class ConvLayer(nn.Module):
    """Convolution, max-pooling, ReLU."""

    def __init__(self, in_channels: int, num_filters: int, kernel_size: int, pool_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, num_filters, kernel_size=kernel_size)
        self.pool = nn.MaxPool2d(kernel_size=pool_size)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.pool(self.conv(x)))


class Network(nn.Module):
    """The pipelining tutorial's CNN, its four layers in blocks B1..B4."""

    def __init__(self):
        super().__init__()
        self.layer1 = ConvLayer(1, 10, 5, 2)
        self.layer2 = ConvLayer(10, 20, 5, 2)
        self.layer3 = nn.Linear(320, 256)
        self.layer3_act = nn.ReLU()
        self.layer4 = nn.Linear(256, 10)

    def forward(self, x):  # x: (B, 1, 28, 28)
        with poptorch.Block("B1"):
            x = self.layer1(x)  # (B, 10, 12, 12)
        with poptorch.Block("B2"):
            x = self.layer2(x)  # (B, 20, 4, 4)
        with poptorch.Block("B3"):
            x = x.view(-1, 320)
            x = self.layer3_act(self.layer3(x))  # (B, 256)
        with poptorch.Block("B4"):
            x = self.layer4(x)  # (B, 10)
        return x


class TrainingModelWithLoss(nn.Module):
    """The network plus its loss, computed in the last block; returns (output, loss)."""

    def __init__(self, model: nn.Module, block: str = "B4"):
        super().__init__()
        self.model = model
        self.loss = nn.CrossEntropyLoss()
        self.block = block

    def forward(self, args, labels=None):
        output = self.model(args)
        if labels is None:
            return output
        with poptorch.Block(self.block):
            loss = self.loss(output, labels)
        return output, loss


class ThreeBlocks(nn.Module):
    """Three linear layers in blocks "A", "B" and "C", on the IPUs `ipus` names (None: no
    ipu_id); with `share_weights`, C uses A's weight."""

    def __init__(self, ipus, share_weights=False):
        super().__init__()
        self.ipus = ipus
        self.a, self.b, self.c = nn.Linear(16, 16), nn.Linear(16, 16), nn.Linear(16, 16)
        if share_weights:
            self.c.weight = self.a.weight

    def forward(self, x):
        for name, layer, ipu in zip("ABC", (self.a, self.b, self.c), self.ipus):
            with poptorch.Block(name, ipu_id=ipu):
                x = layer(x)
        return x


class WithMSELoss(nn.Module):
    """A regression network with its loss inside forward, as a training model needs it:
    returns (prediction, mean squared error)."""

    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = net

    def forward(self, x, y):
        out = self.net(x)
        return out, nn.functional.mse_loss(out, y)


class Regression(nn.Module):
    """The smallest model PopTorch trains: one linear layer 5 -> 3, returning
    (prediction [batch, 3], MSE loss)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 3)

    def forward(self, x, y):
        out = self.fc(x)
        return out, nn.functional.mse_loss(out, y)


class TransformerLayer(nn.Module):
    """Pre-norm self-attention and MLP (4x), written with plain matmuls."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x):  # x: (B, T, C)
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        attention = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)  # (B, H, T, T)
        x = x + self.proj((attention.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c))
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm2(x))))


class TransformerLM(nn.Module):
    """A decoder-sized language model; returns (logits, loss) when given labels."""

    def __init__(self, vocab: int = 32000, width: int = 2048, depth: int = 20, heads: int = 16,
                 context: int = 128, recompute_checkpoint_every_layer: bool = False):
        super().__init__()
        self.checkpoint_every_layer = recompute_checkpoint_every_layer
        self.embed = nn.Embedding(vocab, width)
        self.position = nn.Parameter(torch.zeros(context, width))
        self.layers = nn.ModuleList(TransformerLayer(width, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.loss = nn.CrossEntropyLoss()

    def forward(self, tokens, labels=None):  # tokens: (B, T)
        x = self.embed(tokens) + self.position[: tokens.shape[1]]
        for layer in self.layers:
            x = layer(x)
            if self.checkpoint_every_layer:  # stash layer outputs, recompute one layer at a time
                x = poptorch.recomputationCheckpoint(x)
        logits = self.head(self.norm(x))  # (B, T, vocab)
        if labels is None:
            return logits
        return logits, self.loss(logits.flatten(0, 1), labels.flatten())


class BertPretraining(nn.Module):
    """BERT-Large's pretraining graph as Graphcore's PyTorch BERT places it."""

    def __init__(self, vocab=30522, width=1024, depth=24, heads=16, context=128,
                 layers_per_ipu=(3, 7, 7, 7), recompute: bool = True):
        super().__init__()
        self.recompute = recompute  # a recomputation checkpoint after every layer
        self.word = nn.Embedding(vocab, width)
        self.position = nn.Embedding(context, width)
        self.embed_norm = nn.LayerNorm(width)
        self.layers = nn.ModuleList(TransformerLayer(width, heads) for _ in range(depth))
        self.ipus = [ipu for ipu, count in enumerate(layers_per_ipu) for _ in range(count)]
        self.pooler = nn.Linear(width, width)
        self.next_sentence = nn.Linear(width, 2)
        self.transform = nn.Linear(width, width)
        self.head_norm = nn.LayerNorm(width)
        self.loss = nn.CrossEntropyLoss()

    def forward(self, tokens, masked_positions, masked_labels):
        with poptorch.Block("embedding", ipu_id=0):
            x = self.embed_norm(self.word(tokens) + self.position.weight[: tokens.shape[1]])
        for index, (layer, ipu) in enumerate(zip(self.layers, self.ipus)):
            with poptorch.Block(f"layer{index}", ipu_id=ipu):
                x = layer(x)
                if self.recompute:
                    x = poptorch.recomputationCheckpoint(x)
        with poptorch.Block("heads", ipu_id=0):  # back on IPU 0, next to the tied embedding
            pooled = torch.tanh(self.pooler(x[:, 0]))
            nsp = self.next_sentence(pooled)
            index = masked_positions.unsqueeze(-1).expand(-1, -1, x.shape[-1])
            masked = torch.gather(x, 1, index)  # only the 20 masked tokens reach the vocabulary
            hidden = self.head_norm(torch.nn.functional.gelu(self.transform(masked)))
            logits = hidden @ self.word.weight.t()
            # one final loss, as poptorch.trainingModel requires: the two losses' sum
            loss = poptorch.identity_loss(
                self.loss(logits.flatten(0, 1), masked_labels.flatten())
                + self.loss(nsp, masked_labels[:, 0] % 2), reduction="none")
        return logits, loss


def split_layers(model: TransformerLM, layers_per_ipu: list[int]) -> TransformerLM:
    """Annotate a TransformerLM with BeginBlock: the embedding joins IPU 0, the head the last IPU.

    layers_per_ipu lists how many transformer layers each IPU takes, e.g. [5, 5, 5, 5].
    """
    if sum(layers_per_ipu) != len(model.layers):
        raise ValueError(f"layers_per_ipu {layers_per_ipu} places {sum(layers_per_ipu)} layers, "
                         f"but the model has {len(model.layers)}")
    poptorch.removeBlocks(model)
    first = 0
    for ipu, count in enumerate(layers_per_ipu):
        if count:
            poptorch.BeginBlock(model.layers[first], f"layers{first}-{first + count - 1}", ipu_id=ipu)
        first += count
    poptorch.BeginBlock(model.norm, "head", ipu_id=len(layers_per_ipu) - 1)
    return model


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def accuracy(predictions: torch.Tensor, labels: torch.Tensor) -> float:
    """Percentage of correct predictions; uses the last labels when fewer predictions came back
    (OutputMode.Final returns only the final micro-batch)."""
    _, index = torch.max(predictions, 1)
    labels = labels[-predictions.size()[0]:]
    return torch.sum(torch.eq(index, labels)).item() / labels.size()[0] * 100.0
