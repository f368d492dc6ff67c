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
import os
import sys
import time
import traceback

# torch and the package are imported in the functions that need them, after the arguments
# are parsed: `-h` and a bad argument answer at once instead of after torch's import.
MNIST_EPOCHS, EMBEDDED_EPOCHS = 3, 45  # both about 180,000 training images


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value}")
    return value


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
    parser.add_argument("--seed", type=int, default=42, help="random seed")
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


def load_data(args):
    from ipu_tutorials.tutorial.datasets import load_mnist

    train_set = load_mnist(True, args.dataset, args.data_dir)
    test_set = load_mnist(False, "embedded" if "embedded" in train_set.name else "mnist",
                          args.data_dir)
    note = "" if "embedded" not in train_set.name or args.dataset == "embedded" else \
        " (full MNIST is not on disk and could not be downloaded)"
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
    train_epochs(args, training_model, training_data, epochs)
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
    if len(training_data) == 0:
        raise poptorch.Error(f"one call consumes {training_data.combinedBatchSize} images but the "
                             f"training set has {len(train_set)}: lower --batch-size, "
                             f"--device-iterations or --gradient-accumulation")
    return model, train_opts, training_model, training_data


def train_epochs(args, training_model, training_data, epochs: int) -> None:
    """Compile on the first batch, then train every epoch; the loader stops whatever happens."""
    from ipu_tutorials import tutorial

    progress = not args.no_progress
    try:
        training_model.compile(*next(iter(training_data)))
        if args.debug:
            print(training_model.plan.describe())
        print(f"Training for {epochs} epoch{'s' if epochs != 1 else ''} ({args.strategy}); each epoch is "
              f"{len(training_data)} call(s) of {training_data.combinedBatchSize:,} images")
        tutorial.train(training_model, training_data, epochs, progress=progress,
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


if __name__ == "__main__":
    arguments = parse_args()
    try:
        main(arguments)
    except (RuntimeError, ValueError) as error:  # poptorch.Error is a RuntimeError
        if arguments.debug:
            traceback.print_exc()
        print(f"error: {error}", file=sys.stderr)
        sys.exit(1)
