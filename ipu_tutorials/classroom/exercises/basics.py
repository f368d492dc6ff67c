"""Exercises of lesson 1: porting a model (a frozen branch, the training loop)."""
from __future__ import annotations

import warnings

import torch

from ... import poptorch
from ...tutorial.datasets import embedded_digits
from .base import Exercise, Feedback, Mistake, right, wrong

# --- Exercise 1.1: a data-dependent branch ---------------------------------------------------
STARTING_CODE = '''
class Denoiser(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x):
        y = self.fc(x)
        if y.mean() > 0:      # a Python branch on a tensor's value
            y = torch.relu(y)
        else:
            y = 0.5 * y
        return y
'''
_names: dict = {"torch": torch}
exec(STARTING_CODE, _names)  # the model the learner ports; the lesson prints STARTING_CODE
Denoiser = _names["Denoiser"]
FROZEN = "reads tensor values"  # what the simulator's warning says about a value read
QUIET = poptorch.Options().showCompilationProgressBar(False)


# The batches the check runs, by the mean of their fc output: far from the original's
# threshold (0) on either side, and just either side of it, so that another threshold
# (y.mean() > 0.3, or > -0.3) takes the other branch on one of them.
MEANS = {"positive": 0.5, "negative": -0.5, "just above 0": 1e-3, "just below 0": -1e-3}


def _batches(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Batches of 8 whose fc output has each mean of MEANS.

    All hold elements of either sign, so a per-element condition differs from the original's
    whole-batch one. The mean of fc(x) is linear in x, so a shift along the mean of fc's rows
    moves it to any value.
    """
    generator = torch.Generator().manual_seed(1)
    noise = torch.randn(8, 16, generator=generator)
    direction = model.fc.weight.detach().mean(0)
    direction = direction / direction.norm() ** 2  # moves the mean by exactly 1 per unit
    base = noise - model.fc(noise).mean().detach() * direction  # fc's mean is now 0
    return {name: base + mean * direction for name, mean in MEANS.items()}


def _port(candidate) -> tuple[torch.nn.Module | None, Feedback | None]:
    """The learner's class, built with the starting model's weights."""
    if not (isinstance(candidate, type) and issubclass(candidate, torch.nn.Module)):
        return None, wrong(f"give the class itself (a torch.nn.Module subclass, no parentheses), "
                           f"got {type(candidate).__name__}.")
    torch.manual_seed(0)
    original, ported = Denoiser(), candidate()
    try:
        ported.load_state_dict(original.state_dict())
    except RuntimeError:
        return None, wrong("keep the starting model's layers (self.fc = torch.nn.Linear(16, 16)): "
                           "the check loads the original's weights into your class.")
    return ported, None


def _run_on_ipu(ported: torch.nn.Module, batches: dict) -> tuple[dict, list[str]]:
    """Both batches through one inferenceModel (one compile, as on an IPU), and its warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = poptorch.inferenceModel(ported, QUIET)
        outputs = {name: model(x) for name, x in batches.items()}
    return outputs, [str(w.message) for w in caught if FROZEN in str(w.message)]


def _check_branch(candidate) -> Feedback:
    ported, problem = _port(candidate)
    if problem is not None:
        return problem
    torch.manual_seed(0)
    original = Denoiser()
    batches = _batches(original)
    try:
        outputs, frozen = _run_on_ipu(ported, batches)
    except (poptorch.Error, AssertionError) as error:
        return wrong(f"the simulator refused the model: {error}")
    if frozen:
        return wrong(f"forward still reads a tensor value in Python, so the IPU graph keeps "
                     f"one branch for every input. The simulator says: {frozen[0]}")
    with torch.no_grad():
        y = {name: original.fc(x) for name, x in batches.items()}
    took = {name: _branch_taken(outputs[name], y[name]) for name in batches}
    if all(took[name] == ("relu" if mean > 0 else "half") for name, mean in MEANS.items()):
        return right("no value is read in Python any more, and the IPU model equals the PyTorch "
                     "original on batches that take each branch, also just either side of 0.")
    per_element = {name: torch.where(y[name] > 0, torch.relu(y[name]), 0.5 * y[name])
                   for name in batches}
    if all(torch.allclose(outputs[n], per_element[n], atol=1e-5) for n in batches):
        return wrong("your condition is decided per element (y > 0); the original decides for "
                     "the whole batch (y.mean() > 0): use that scalar condition in torch.where, "
                     "it broadcasts.")
    if None in took.values():
        return wrong("the outputs differ from the original: compute y = fc(x), then select "
                     "relu(y) or 0.5 * y with torch.where(y.mean() > 0, ...).")
    for branch, other in (("relu", "else"), ("half", "if")):
        if set(took.values()) == {branch}:
            return wrong(f"your model gives {'relu(y)' if branch == 'relu' else '0.5 * y'} "
                         f"whatever the batch: the `{other}` branch's result is missing. "
                         f"torch.where(condition, a, b) computes both and selects one.")
    name = next(n for n, mean in MEANS.items() if took[n] != ("relu" if mean > 0 else "half"))
    return wrong(f"on a batch whose mean is {MEANS[name]:+} your model takes the branch the "
                 f"original does not: the original takes relu(y) exactly when y.mean() > 0. "
                 f"Compare the batch mean with 0, not with another threshold.")


def _branch_taken(output: torch.Tensor, y: torch.Tensor) -> str | None:
    """Which of the original's two results `output` is for fc output y, if either."""
    for name, result in (("relu", torch.relu(y)), ("half", 0.5 * y)):
        if output.shape == result.shape and torch.allclose(output, result, atol=1e-5, rtol=1e-5):
            return name
    return None


# A learner's port: the starting class renamed, with `body` after `y = self.fc(x)`.
PORTED = ("\nclass PortedDenoiser(torch.nn.Module):\n    def __init__(self):\n        super().__init__()"
          "\n        self.fc = torch.nn.Linear(16, 16)\n\n    def forward(self, x):\n"
          "        y = self.fc(x)\n        {body}")

fix_the_branch = Exercise(
    "Fix the frozen branch", _check_branch,
    expects='a torch.nn.Module subclass (the class, not an instance)',
    skill='replace a Python branch on a tensor value by torch.where',
    starting_code=STARTING_CODE.replace('class Denoiser', 'class PortedDenoiser'),
    hint="torch.where(condition, a, b) runs on the device: compute both branches and let the "
         "condition y.mean() > 0 (a 0-dimensional tensor) select one, without reading its value "
         "in Python.",
    solution=PORTED.format(body="return torch.where(y.mean() > 0, torch.relu(y), 0.5 * y)"),
    mistakes=(
        Mistake(STARTING_CODE + "\nPortedDenoiser = Denoiser", "still reads a tensor value"),
        Mistake(STARTING_CODE.replace("if y.mean() > 0:", "if y.mean().item() > 0:")
                + "\nPortedDenoiser = Denoiser", "item"),
        Mistake(PORTED.format(body="return torch.where(y > 0, torch.relu(y), 0.5 * y)"),
                "decided per element"),
        Mistake(PORTED.format(body="return torch.relu(y)"), "the `else` branch's result is missing"),
        Mistake(PORTED.format(body="return torch.where(y.mean() > 0.3, torch.relu(y), 0.5 * y)"),
                "a batch whose mean is +0.001"),
    ),
    writes_code=True)


# --- Exercise 1.2: the training loop -------------------------------------------------------------
STEPS, BATCH = 4, 16


class _DigitsWithLoss(torch.nn.Module):
    """A linear digit classifier that computes its loss in forward, as a trainingModel needs."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(784, 10)

    def forward(self, images, labels=None):
        output = self.fc(images.flatten(1))
        if labels is None:
            return output
        return output, torch.nn.functional.cross_entropy(output, labels)


def _digits() -> torch.utils.data.TensorDataset:
    """STEPS + 2 batches of digits in a fixed shuffled order (the embedded set is sorted by
    class): more than `steps`, so a loop that ignores `steps` is seen."""
    digits = embedded_digits(train=True)
    chosen = torch.randperm(len(digits), generator=torch.Generator().manual_seed(0))
    chosen = chosen[:(STEPS + 2) * BATCH]
    return torch.utils.data.TensorDataset(digits.images[chosen], digits.labels[chosen])


def _reference_losses(model: torch.nn.Module, batches: list) -> list[float]:
    """The same steps in plain PyTorch: forward, backward, step."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for images, labels in batches:
        optimizer.zero_grad()
        _, loss = model(images, labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def _as_floats(losses) -> list[float] | None:
    try:
        return [float(loss) for loss in losses]
    except (TypeError, ValueError, RuntimeError):  # e.g. a tuple (output, loss) per step
        return None


def _run_learner_loop(train_steps, model, loader) -> tuple[object, Feedback | None]:
    try:
        return train_steps(model, loader, STEPS), None
    except (poptorch.Error, AssertionError) as error:
        text = str(error)
        if "backward() cannot be called" in text:
            return None, wrong("remove loss.backward() (and any optimizer.step()): calling the "
                               "trainingModel already ran forward, backward and the weight "
                               "update on the device.")
        if "Couldn't find a loss" in text:
            return None, wrong("call the model with the labels too, model(images, labels): the "
                               "loss is computed inside forward, on the device.")
        return None, wrong(f"the simulator refused a step: {text}")


def _check_loop(train_steps) -> Feedback:
    if not callable(train_steps):
        return wrong("give the function itself: train_steps, with no parentheses.")
    torch.manual_seed(0)
    host, reference = _DigitsWithLoss(), _DigitsWithLoss()
    reference.load_state_dict(host.state_dict())
    opts = poptorch.Options().showCompilationProgressBar(False)
    loader = poptorch.DataLoader(opts, _digits(), batch_size=BATCH)
    model = poptorch.trainingModel(host, opts, poptorch.optim.SGD(host.parameters(), lr=0.05))
    losses, problem = _run_learner_loop(train_steps, model, loader)
    if problem is not None:
        return problem
    batches = [batch for _, batch in zip(range(STEPS), loader)]
    expected = _reference_losses(reference, batches)
    got = _as_floats(losses) if isinstance(losses, (list, tuple)) else None
    if got is None:
        listed = isinstance(losses, (list, tuple)) and losses
        items = f" of {type(losses[0]).__name__}" if listed else ""
        return wrong(f"return a list with one loss per step (float(loss) or the 0-d tensor); "
                     f"got a {type(losses).__name__}{items}. The trainingModel returns (output, "
                     f"loss): keep the loss.")
    if len(got) != STEPS:
        return wrong(f"train_steps(model, loader, {STEPS}) returned {len(got)} losses: run "
                     f"exactly `steps` calls, e.g. for _, (images, labels) in "
                     f"zip(range(steps), loader).")
    same_weights = all(torch.allclose(p, q, atol=1e-5) for p, q in
                       zip(host.parameters(), reference.parameters()))
    if not same_weights or any(abs(a - b) > 1e-4 for a, b in zip(got, expected)):
        return wrong("the losses or weights differ from PyTorch doing the same steps: call the "
                     "model once per batch, in the loader's order, and return each call's loss.")
    return right(f"{STEPS} steps, each one call that ran forward, backward and the update; the "
                 f"losses {got[0]:.3f} ... {got[-1]:.3f} and the weights equal plain PyTorch's.")


training_loop = Exercise(
    "The training loop", _check_loop,
    expects='a function train_steps(model, loader, steps) returning the losses',
    skill='write a PopTorch training loop (one call per step, no backward)',
    hint="A trainingModel call returns (output, loss) and has already updated the weights; "
         "there is nothing left to do but record the loss.",
    solution='''
def train_steps(model, loader, steps):
    losses = []
    for _, (images, labels) in zip(range(steps), loader):
        _, loss = model(images, labels)
        losses.append(float(loss))
    return losses''',
    mistakes=(
        Mistake('''
def train_steps(model, loader, steps):
    losses = []
    for _, (images, labels) in zip(range(steps), loader):
        _, loss = model(images, labels)
        loss.backward()
        losses.append(float(loss))
    return losses''', "remove loss.backward()"),
        Mistake('''
def train_steps(model, loader, steps):
    losses = []
    for _, (images, labels) in zip(range(steps), loader):
        losses.append(model(images))
    return losses''', "with the labels too"),
        Mistake('''
def train_steps(model, loader, steps):
    return [model(images, labels) for _, (images, labels) in zip(range(steps), loader)]''',
                "keep the loss"),
        Mistake('''
def train_steps(model, loader, steps):
    return []''', "returned 0 losses"),
    ),
    writes_code=True)


# --- Exercise 1.3: which copy? -------------------------------------------------------------------
SCENARIOS = {
    "trained by trainingModel": "the module was trained by a poptorch.trainingModel; next, its "
                                "inferenceModel runs",
    "trained on the CPU": "the module was trained by a plain torch.optim optimizer on the CPU "
                          "after its inferenceModel was compiled; next, the inferenceModel runs",
    "buffer changed by inference": "the inferenceModel changed a buffer of the module; next, the "
                                   "host reads that buffer",
}
COPIES = (None, "copyWeightsToDevice", "copyWeightsToHost")


class _Tally(torch.nn.Module):
    """A linear layer that also counts its calls in a buffer."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x, labels=None):
        self.calls += 1
        output = self.fc(x)
        if labels is None:
            return output
        return output, torch.nn.functional.mse_loss(output, labels)


def _stale_after(scenario: str) -> bool:
    """Run the scenario in the simulator with no explicit copy: is what comes next stale?"""
    torch.manual_seed(0)
    host, x = _Tally(), torch.ones(2, 4)
    inference = poptorch.inferenceModel(host, QUIET)
    before = inference(x).clone()
    if scenario == "trained by trainingModel":
        training = poptorch.trainingModel(host, QUIET, torch.optim.SGD(host.parameters(), lr=0.5))
        training(x, torch.zeros(2, 2))
        return not torch.allclose(inference(x), host.fc(x))
    if scenario == "trained on the CPU":
        with torch.no_grad():
            host.fc.bias += 1.0  # what an optimizer step on the host does to the weights
        return torch.allclose(inference(x), before)
    return host.calls.item() == 0  # the inference model counted one call on the device


def _check_copies(answer) -> Feedback:
    if not isinstance(answer, dict) or set(answer) != set(SCENARIOS):
        return wrong(f"give a dict with the keys {sorted(SCENARIOS)}, each mapped to None or the "
                     f"name of a PoplarExecutor method.")
    for scenario, given in answer.items():
        if given not in COPIES:
            return wrong(f"{scenario!r}: {given!r} is not one of {COPIES}.")
        stale = _stale_after(scenario)
        needed = None if not stale else ("copyWeightsToHost" if "buffer" in scenario
                                         else "copyWeightsToDevice")
        if given == needed:
            continue
        if needed is None:
            return wrong(f"{scenario!r}: no copy is needed; the simulator ran it, and the "
                         f"inference model already used the trained weights: PopTorch copies a "
                         f"training model's weights to the inference model implicitly.")
        direction = ("from the device to the host" if needed == "copyWeightsToHost" else
                     "from the host to the device")
        return wrong(f"{scenario!r}: the simulator ran it without a copy and the result was "
                     f"stale; the values must go {direction}: which PoplarExecutor method "
                     f"copies that way?")
    return right("each answer matches what the simulator did: training models keep inference "
                 "models current by themselves; host-side changes need copyWeightsToDevice; "
                 "device-side buffer changes of an inference model need copyWeightsToHost.")


which_copy = Exercise(
    "Which copy?", _check_copies,
    expects='a dict from each scenario to None or a PoplarExecutor method name',
    skill='know when host and device weights must be copied',
    hint="Implicit copies only go from a training model, through the host, to the inference "
         "model. Anything else changed on one side stays there until you copy it.",
    solution='''
my_copies = {"trained by trainingModel": None,
             "trained on the CPU": "copyWeightsToDevice",
             "buffer changed by inference": "copyWeightsToHost"}''',
    mistakes=(
        Mistake('''
my_copies = {"trained by trainingModel": "copyWeightsToDevice",
             "trained on the CPU": "copyWeightsToDevice",
             "buffer changed by inference": "copyWeightsToHost"}''', "copies a training model's"),
        Mistake('''
my_copies = {"trained by trainingModel": None,
             "trained on the CPU": None,
             "buffer changed by inference": "copyWeightsToHost"}''',
                "from the host to the device: which PoplarExecutor method"),
        Mistake('''
my_copies = {"trained by trainingModel": None,
             "trained on the CPU": "copyWeightsToDevice",
             "buffer changed by inference": "copyWeightsToDevice"}''',
                "from the device to the host: which PoplarExecutor method"),
        Mistake("my_copies = {}", "give a dict with the keys"),
    ))
