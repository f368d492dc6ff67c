"""What Graphcore's popdist example does, small enough for every test run.

    poprun --mpi-global-args --tag-output --num-replicas 4 --num-instances 2 \
        python batchnorm_cnn.py OUT_DIR

Like tutorials/feature_examples/pytorch/popdist/popdist_training.py (graphcore/examples): a CNN
with BatchNorm trained replicated without broadcastBuffers(False), popdist's options with a
random seed, a DataLoader that gives each instance its share of the data, PopTorch's SGD with
use_combined_accum, a checkpoint per instance, then an inference pass for the accuracy. Unlike
it, the images are torchvision's FakeData (8x8, fixed per index) read in order, so a plain
PyTorch loop can replay exactly what every replica saw (the test's reference).
"""
import sys
from pathlib import Path

import torch
import torchvision

from ipu_tutorials import popdist, poptorch
import ipu_tutorials.popdist.poptorch as popdist_poptorch

BATCH, SAMPLES, EPOCHS, LR, MOMENTUM = 4, 64, 2, 0.05, 0.9


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())
        self.classifier = torch.nn.Linear(8, 10)
        self.loss = torch.nn.NLLLoss()

    def forward(self, x, y=None):
        logits = self.classifier(self.features(x))
        if y is None:
            return logits
        loss = self.loss(torch.nn.functional.log_softmax(logits, dim=1), y)
        return logits, poptorch.identity_loss(loss, reduction="none")


def dataset(train: bool) -> torch.utils.data.Dataset:
    return torchvision.datasets.FakeData(size=SAMPLES, image_size=(3, 8, 8), num_classes=10,
                                         transform=torchvision.transforms.ToTensor(),
                                         random_offset=0 if train else SAMPLES)


def main(out_dir: Path) -> None:
    popdist.init()
    instance = popdist.getInstanceIndex()
    opts = popdist_poptorch.Options()
    opts.randomSeed(0)
    torch.manual_seed(instance)  # each instance draws its own weights; compile shares instance 0's
    model = Net()
    loader = poptorch.DataLoader(opts, dataset(train=True), batch_size=BATCH, shuffle=False,
                                 auto_distributed_partitioning=True)
    optimizer = poptorch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM,
                                   use_combined_accum=True)
    training = poptorch.trainingModel(model, opts, optimizer=optimizer)
    for _ in range(EPOCHS):
        for x, y in loader:
            training(x, y)
    training.destroy()
    torch.save(model.state_dict(), out_dir / f"checkpoint-instance-{instance}.pt")

    model.eval()
    inference = poptorch.inferenceModel(model, opts)
    validation = poptorch.DataLoader(opts, dataset(train=False), batch_size=BATCH)
    correct = sum(int((inference(x).argmax(1) == y).sum()) for x, y in validation)
    print(f"Validation accuracy: {correct / len(validation.dataset):.4f}", flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
