"""Graphcore's PopTorch mixed-precision walkthrough, run offline through the simulator; wall time.

The walkthrough (graphcore/tutorials, tutorials/pytorch/mixed_precision/walkthrough.py) trains
its model (benchmarks/mixed_precision_model.py) for 10 epochs with batch 12, then evaluates with
batch 32, with the switches --execution-half, --optimizer-half, --stochastic-rounding and
--partials-half. It downloads FashionMNIST (60,000 + 10,000 images resized to 128x128); offline,
this script uses the package's embedded MNIST digits (4,000 + 1,000 real images) resized to
128x128 and normalised to [-1, 1] like the walkthrough's transforms, or with --synthetic random
images of FashionMNIST's sizes. It reports the host wall time (target: under 5 minutes for
the default run), the time of each epoch, the machine's load average (a busy machine runs it
slower: compare runs at similar load) and the simulated IPU time.

    python benchmarks/mixed_precision_walkthrough.py --execution-half --optimizer-half
"""
import argparse
import os
import time

import torch
import torch.nn.functional as F

from ipu_tutorials import poptorch
from ipu_tutorials.tutorial.datasets import MEAN, STD, embedded_digits
from mixed_precision_model import (IMAGE, TEST_IMAGES, TRAIN_IMAGES, synthetic_images,
                                   training_model)

TARGET_SECONDS = 300


def digits_128(train: bool, half: bool) -> torch.utils.data.TensorDataset:
    """Embedded MNIST digits as the walkthrough feeds FashionMNIST: 128x128, in [-1, 1]."""
    digits = embedded_digits(train)
    pixels = digits.images * STD + MEAN  # back to [0, 1]
    images = F.interpolate(pixels, size=IMAGE, mode="bilinear", antialias=True) * 2 - 1
    return torch.utils.data.TensorDataset(images.half() if half else images, digits.labels)


def synthetic(train: bool, half: bool) -> torch.utils.data.TensorDataset:
    count = TRAIN_IMAGES if train else TEST_IMAGES
    return torch.utils.data.TensorDataset(*synthetic_images(count, half, seed=int(train)))


def main(args) -> float:
    started, cpu_started = time.perf_counter(), time.process_time()
    dataset = synthetic if args.synthetic else digits_128
    train_set, test_set = dataset(True, args.execution_half), dataset(False, args.execution_half)
    if args.train_images:
        train_set = torch.utils.data.Subset(train_set, range(args.train_images))
    model, opts, poptorch_model = training_model(args.execution_half, args.optimizer_half,
                                                 args.stochastic_rounding, args.partials_half)
    train_data = poptorch.DataLoader(opts, train_set, batch_size=12, shuffle=True)
    epoch_seconds = []
    for epoch in range(args.epochs):
        total_loss, epoch_started, epoch_cpu = 0.0, time.perf_counter(), time.process_time()
        for data, labels in train_data:
            _, loss = poptorch_model(data, labels)
            total_loss += float(loss)
        epoch_seconds.append(time.perf_counter() - epoch_started)
        print(f"epoch {epoch + 1}: mean loss {total_loss / len(train_data):.4f}; "
              f"{epoch_seconds[-1]:.1f} s wall, {time.process_time() - epoch_cpu:.1f} s CPU, "
              f"load average {os.getloadavg()[0]:.1f}", flush=True)
    poptorch_model.detachFromDevice()
    simulated = poptorch_model.simulated_seconds
    model.eval()
    inference = poptorch.inferenceModel(model, options=opts)
    correct = 0
    for data, labels in poptorch.DataLoader(opts, test_set, batch_size=32):
        correct += int((inference(data).float().argmax(1) == labels).sum())
    simulated += inference.simulated_seconds
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    print(f"Eval accuracy on IPU: {100 * correct / len(test_set):.2f}%")
    print(f"training: {sum(epoch_seconds):.0f} s for {args.epochs} epochs, "
          f"{sum(epoch_seconds) / max(len(epoch_seconds), 1):.1f} s per epoch; "
          f"torch threads {torch.get_num_threads()}, load average (1, 5, 15 min) "
          + ", ".join(f"{load:.1f}" for load in os.getloadavg()))
    print(f"host wall time {wall:.0f} s (target < {TARGET_SECONDS} s), process CPU time {cpu:.0f} s;"
          f" simulated IPU time {simulated:.3f} s")
    return wall


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for switch in ("execution-half", "optimizer-half", "stochastic-rounding", "partials-half"):
        parser.add_argument(f"--{switch}", action="store_true")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--train-images", type=int, default=None,
                        help="train on the first N images only (a quick estimate)")
    parser.add_argument("--synthetic", action="store_true",
                        help="random images of FashionMNIST's sizes (60,000 + 10,000)")
    main(parser.parse_args())
