"""Train the tutorial's CNN with PyTorch Lightning on simulated IPUs, then test it.

    python lightning_mnist.py
    python lightning_mnist.py --devices 2 --half --report-dir lightning_report

The IPU-specific lines are the Trainer's (accelerator="ipu", devices = replicas) and the
IPUStrategy's options, which place blocks B1..B4 on IPUs 0..3 (sharded by default, or as a
pipeline), as in the PopTorch tutorial. Offline, the 5,000 digits shipped in the package are
used (4,000 to train, 1,000 to test).
"""
import argparse
import sys
import tempfile

import lightning.pytorch as pl
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.lightning import IPUStrategy
from ipu_tutorials.tutorial.mnist_lightning import MnistClassifier
from ipu_tutorials.tutorial import loops
from ipu_tutorials.tutorial.datasets import load_mnist
from mnist_pipeline import positive_float, positive_int, seed


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="MNIST with Lightning on simulated IPUs.",
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--devices", type=power_of_two, default=2,
                        help="replicas (a power of two)")
    parser.add_argument("--strategy", choices=("sharded", "pipelined"), default="sharded")
    parser.add_argument("--batch-size", type=positive_int, default=40, help="micro-batch size")
    parser.add_argument("--accumulate-grad-batches", type=positive_int, default=1,
                        help="micro-batches per weight update (pipelining 4 stages needs >= 7)")
    parser.add_argument("--device-iterations", type=positive_int, default=5,
                        help="updates per IPU call")
    parser.add_argument("--epochs", type=positive_int, default=5)
    parser.add_argument("--learning-rate", type=positive_float, default=0.002)
    parser.add_argument("--half", action="store_true", help="precision=16 (mixed)")
    parser.add_argument("--dataset", choices=("auto", "mnist", "embedded"), default="embedded")
    parser.add_argument("--report-dir", default=None, help="write the simulator's reports here")
    parser.add_argument("--seed", type=seed, default=42)
    return parser.parse_args(argv)


def power_of_two(text: str) -> int:
    value = positive_int(text)
    if value & (value - 1):
        raise argparse.ArgumentTypeError(f"expected a power of two (1, 2, 4, ...), got {value}")
    return value


def loaders(args):
    train = load_mnist(train=True, source=args.dataset)
    test = load_mnist(train=False, source=args.dataset)
    return (torch.utils.data.DataLoader(train, batch_size=args.batch_size, shuffle=True),
            torch.utils.data.DataLoader(test, batch_size=50))


def ipu_options(args) -> tuple[poptorch.Options, poptorch.Options]:
    """Training and inference options: what IPUStrategy would build, plus the pipeline."""
    training = loops.training_options(args.strategy, args.device_iterations,
                                      args.accumulate_grad_batches, output_all=False)
    training.replicationFactor(args.devices).randomSeed(args.seed)
    return training, loops.inference_options(training, args.device_iterations)


def main(argv=None) -> float:
    args = parse_args(argv)
    pl.seed_everything(args.seed, verbose=False)
    train_data, test_data = loaders(args)
    loops.check_one_call_fits(args.batch_size * args.device_iterations * args.devices
                              * args.accumulate_grad_batches, len(train_data.dataset),
                              "--batch-size, --device-iterations, --devices or "
                              "--accumulate-grad-batches")
    training_opts, inference_opts = ipu_options(args)
    strategy = IPUStrategy(training_opts=training_opts, inference_opts=inference_opts,
                           autoreport_dir=args.report_dir)
    with tempfile.TemporaryDirectory() as logs:
        trainer = pl.Trainer(accelerator="ipu", devices=args.devices, strategy=strategy,
                             precision="16-mixed" if args.half else "32-true",
                             accumulate_grad_batches=args.accumulate_grad_batches,
                             max_epochs=args.epochs, default_root_dir=logs, logger=False,
                             enable_checkpointing=False, enable_model_summary=False)
        model = MnistClassifier(args.learning_rate)
        trainer.fit(model, train_data)
        (result,) = trainer.test(model, test_data, verbose=False)
    training = strategy.stats["training"]
    print(f"Trained {training.samples:,} images in {training.calls} IPU calls: "
          f"{training.samples_per_second:,.0f} images/s simulated "
          f"({args.devices} replicas x 4 IPUs)")
    print(f"Accuracy on test set: {result['test_accuracy']:.2f}%")
    return result["test_accuracy"]


def run(argv=None) -> int:
    """main() with any error as one line on stderr; the exit status (2: bad flags, as argparse)."""
    try:
        main(argv)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (RuntimeError, ValueError, TypeError, MemoryError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(run())
