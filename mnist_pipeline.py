"""Train the pipelining tutorial's CNN on MNIST over 4 simulated IPUs, then test it.

    python mnist_pipeline.py --strategy sharded
    python mnist_pipeline.py --profile --profile-dir pipeline_profile
    python mnist_pipeline.py --offload-optimiser --debug
    python mnist_pipeline.py --replication-factor 2 --device-iterations 2
    poprun --num-instances 2 --num-replicas 2 python mnist_pipeline.py --device-iterations 2

The model is split into blocks B1..B4, one per IPU, and run with PipelinedExecution (the
default) or ShardedExecution. The numerics are real PyTorch on the CPU; time, placement and
memory come from the simulated IPUs.
"""
import argparse
import math
import os
import sys
import time
import traceback

# torch and the package are imported in the functions that need them, after the arguments
# are parsed: `-h` and a bad argument answer at once instead of after torch's import.
# both about 120,000 training images: on the embedded digits, 96.1% test accuracy (45 epochs
# reach 96.9% in 40% more time; docs/example-script.md)
MNIST_EPOCHS, EMBEDDED_EPOCHS = 2, 30
# A test image costs the host about 0.6 of a training image (forward only, in micro-batches of
# 8): measured with cProfile over the default run, 5 epochs, 2026-11-25.
TEST_IMAGE_COST = 0.6


def _checked(text: str, convert, ok, rule: str):
    """`text` converted, when it converts and obeys the rule; else argparse's error (exit 2)."""
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {rule}, got {text!r}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"expected {rule}, got {value}")
    return value


def positive_int(text: str) -> int:
    return _checked(text, int, lambda v: v >= 1, "a positive integer")


def positive_float(text: str) -> float:
    # nan and inf would train to NaN weights
    return _checked(text, float, lambda v: v > 0 and math.isfinite(v), "a positive finite number")


def seed(text: str) -> int:
    """A random seed torch accepts: 0 <= seed < 2**63."""
    return _checked(text, int, lambda v: 0 <= v < 2**63, "an integer from 0 to 2**63 - 1")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="PopTorch pipelining tutorial: MNIST on 4 simulated IPUs.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--batch-size", type=positive_int, default=40,
                        help="micro-batch size for training")
    parser.add_argument("--device-iterations", type=positive_int, default=10,
                        help="device iterations (weight updates) per call when training")
    parser.add_argument("--gradient-accumulation", type=positive_int, default=10,
                        help="micro-batches accumulated per weight update (pipelining needs >= 7)")
    parser.add_argument("--test-batch-size", type=positive_int, default=8,
                        help="micro-batch size for inference")
    parser.add_argument("--epochs", type=positive_int, default=argparse.SUPPRESS,
                        help=f"epochs to train (default: {MNIST_EPOCHS} on MNIST, "
                             f"{EMBEDDED_EPOCHS} on the 4,000 embedded digits)")
    parser.add_argument("--learning-rate", type=positive_float, default=0.001,
                        help="AdamW learning rate")
    parser.add_argument("--replication-factor", type=positive_int, default=1,
                        help="data-parallel replicas of the 4-IPU pipeline (under poprun, "
                             "--num-replicas decides instead)")
    parser.add_argument("--strategy", choices=("pipelined", "sharded"), default="pipelined",
                        help="execution strategy over the 4 IPUs")
    parser.add_argument("--offload-optimiser", action="store_true",
                        help="keep AdamW's state in streaming memory instead of on chip")
    parser.add_argument("--half", action="store_true",
                        help="float16 weights and inputs, with loss scaling 1024")
    parser.add_argument("--dataset", choices=("auto", "mnist", "embedded"), default="auto",
                        help="MNIST via torchvision, the embedded digits (offline), or MNIST when "
                             "available and the embedded digits otherwise")
    parser.add_argument("--data-dir", default="mnist_data", help="where torchvision keeps MNIST")
    parser.add_argument("--profile", action="store_true",
                        help="write profiling reports (summary.json + trace.json for Perfetto)")
    parser.add_argument("--profile-dir", default="./profile", help="where --profile writes")
    parser.add_argument("--seed", type=seed, default=42, help="random seed")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    parser.add_argument("--debug", action="store_true",
                        help="print the placement, memory plan and schedule; full tracebacks")
    args = parser.parse_args(argv)
    args.epochs = getattr(args, "epochs", None)
    if args.profile:
        problem = profile_dir_problem(args.profile_dir)
        if problem:
            parser.error(f"argument --profile-dir: {problem}")
    return args


def profile_dir_problem(path: str) -> str | None:
    """Why --profile could not write into `path` (None when it can), checked before compiling."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        return f"cannot create {path!r} ({error.strerror}); choose a directory you can write to"
    if not os.access(path, os.W_OK | os.X_OK):
        return f"cannot write into {path!r}; choose a directory you can write to"
    return None


class EstimatingModel:
    """The training model, timing its first call to tell, at the start, how long the run takes.

    The first call includes the async loader's first fetch, so the estimate errs long."""

    def __init__(self, model, calls: int, images_per_call: int, test_images: int):
        self.model, self.calls, self.images_per_call = model, calls, images_per_call
        self.test_images, self.told = test_images, False

    def __getattr__(self, name):
        return getattr(self.model, name)

    def __call__(self, *batch):
        from tqdm.auto import tqdm  # writes above the progress bar instead of through it

        started = time.perf_counter()
        result = self.model(*batch)
        if not self.told:
            self.told = True
            tqdm.write(estimate_line(time.perf_counter() - started, self.calls,
                                     self.images_per_call, self.test_images), file=sys.stdout)
        return result


def estimate_line(first_call: float, calls: int, images_per_call: int, test_images: int) -> str:
    """How long the rest of the run takes, from the first training call's host time."""
    per_image = first_call / images_per_call
    rest = first_call * (calls - 1) + per_image * TEST_IMAGE_COST * test_images
    return (f"Estimated time to finish: {rest:.0f} s (the first of {calls} training calls took "
            f"{first_call:.2f} s for {images_per_call:,} images; then {test_images:,} test images)")


def load_data(args):
    from ipu_tutorials.tutorial.datasets import load_mnist

    train_set = load_mnist(True, args.dataset, args.data_dir)
    test_set = load_mnist(False, "embedded" if "embedded" in train_set.name else "mnist",
                          args.data_dir)
    note = ("" if "embedded" not in train_set.name or args.dataset == "embedded" else
            " (full MNIST is not on disk and could not be downloaded)")
    print(f"Data: {train_set.name.split(',')[0]}: {len(train_set):,} training and "
          f"{len(test_set):,} test images{note}")
    if args.half:
        train_set.images, test_set.images = train_set.images.half(), test_set.images.half()
    return train_set, test_set


def replicate(opts, args) -> None:
    """Replicas in this process (opts: poptorch.Options); under poprun, this instance's share
    of poprun's replicas."""
    from ipu_tutorials import popdist

    if not popdist.isPopdistEnvSet():
        opts.replicationFactor(args.replication_factor)
        return
    if args.replication_factor not in (1, popdist.getNumLocalReplicas()):
        print(f"Note: poprun decides the replicas: {popdist.getNumLocalReplicas()} in this "
              f"instance, {popdist.getNumTotalReplicas()} in all; --replication-factor ignored")
    opts.replicationFactor(popdist.getNumLocalReplicas())
    opts.Distributed.configureProcessId(popdist.getInstanceIndex(), popdist.getNumInstances())
    opts.randomSeed(args.seed)  # every instance must shuffle the dataset the same way


def main(args) -> float:
    import torch

    torch.manual_seed(args.seed)
    train_set, test_set = load_data(args)
    epochs = args.epochs or (EMBEDDED_EPOCHS if "embedded" in train_set.name else MNIST_EPOCHS)
    model, train_opts, training_model, training_data = build_training(args, train_set)
    started = time.perf_counter()
    train_epochs(args, training_model, training_data, epochs, len(test_set))
    test_accuracy, inference_model = evaluate(args, model, train_opts, test_set)
    print(f"Accuracy on test set: {test_accuracy:0.2f}%")
    print()
    report(args, training_model, inference_model, started)
    return test_accuracy


def build_training(args, train_set):
    """The network, its training options and model, and the training DataLoader.

    Raises:
        poptorch.Error: one call needs more images than the training set holds.
    """
    from ipu_tutorials import poptorch, tutorial
    from ipu_tutorials.tutorial.models import Network, TrainingModelWithLoss

    train_opts = tutorial.training_options(args.strategy, args.device_iterations,
                                           args.gradient_accumulation, args.offload_optimiser)
    replicate(train_opts, args)
    train_opts.showCompilationProgressBar(not args.no_progress)
    if args.profile:
        train_opts.enableProfiling(args.profile_dir)
    model = Network().half() if args.half else Network()
    optimizer = poptorch.optim.AdamW(model.parameters(), lr=args.learning_rate,
                                     loss_scaling=1024.0 if args.half else 1.0)
    training_model = poptorch.trainingModel(TrainingModelWithLoss(model), train_opts, optimizer)
    training_data = poptorch.DataLoader(train_opts, train_set, batch_size=args.batch_size,
                                        shuffle=True, mode=poptorch.DataLoaderMode.Async)
    tutorial.loops.check_one_call_fits(training_data.combinedBatchSize, len(train_set) // (
        train_opts.Distributed.numProcesses), "--batch-size, --device-iterations or "
        "--gradient-accumulation")
    return model, train_opts, training_model, training_data


def train_epochs(args, training_model, training_data, epochs: int, test_images: int) -> None:
    """Compile on the first batch, then train every epoch; the loader stops whatever happens."""
    from ipu_tutorials import tutorial

    progress = not args.no_progress
    try:
        training_model.compile(*next(iter(training_data)))
        if args.debug:
            print(training_model.plan.describe())
        print(f"Training for {epochs} epoch{'s' if epochs != 1 else ''} ({args.strategy}); each epoch is "
              f"{len(training_data)} call(s) of {training_data.combinedBatchSize:,} images")
        clock = EstimatingModel(training_model, epochs * len(training_data),
                                training_data.combinedBatchSize, test_images)
        tutorial.train(clock, training_data, epochs, progress=progress,
                       log=print if progress or args.debug else None)
    finally:
        training_data.terminate()  # stop the background loader before anything else happens


def evaluate(args, model, train_opts, test_set):
    """The test set's accuracy through an inference model; returns it and the model."""
    from ipu_tutorials import poptorch, tutorial

    # a pipelined inference model needs a micro-batch per stage in flight
    least = len(tutorial.BLOCKS) if args.strategy == "pipelined" else 1
    # each replica of each instance tests its own share of the test set
    share = len(test_set) // (train_opts.replication_factor * train_opts.Distributed.numProcesses)
    inference_iterations = tutorial.whole_calls(share, args.test_batch_size, least=least)
    inf_opts = tutorial.inference_options(train_opts, inference_iterations)
    inference_model = poptorch.inferenceModel(model, inf_opts)
    test_data = poptorch.DataLoader(inf_opts, test_set, batch_size=args.test_batch_size)
    return tutorial.test(inference_model, test_data, progress=not args.no_progress), inference_model


def report(args, training_model, inference_model, started: float) -> None:
    """The summary table, host and simulated times, and where the profiles went."""
    from ipu_tutorials import tutorial

    print(tutorial.summary_table(training_model))
    print(f"Host wall time: {time.perf_counter() - started:.1f} s "
          f"(simulated IPU time: {training_model.simulated_seconds * 1e3:.1f} ms training, "
          f"{inference_model.simulated_seconds * 1e3:.1f} ms inference)")
    if args.profile:
        print(f"\nProfiles written to {os.path.join(args.profile_dir, 'training')} and "
              f"{os.path.join(args.profile_dir, 'inference')}.\nOpen a trace.json in "
              f"https://ui.perfetto.dev, or in Python: "
              f"ipu_tutorials.profiling.load_report(dir).plot_timeline()")


def run(arguments) -> int:
    """main() with its errors as one line (a traceback too with --debug); the exit status."""
    try:
        main(arguments)
    except KeyboardInterrupt:  # Ctrl-C: the loader thread is already stopped (main's finally)
        print("interrupted", file=sys.stderr)
        return 130
    except (RuntimeError, ValueError, TypeError, MemoryError, OSError) as error:
        if arguments.debug:  # poptorch.Error is a RuntimeError
            traceback.print_exc()
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(run(parse_args()))
