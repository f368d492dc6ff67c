"""Chrome Trace Event JSON (opens in Perfetto and chrome://tracing) to and from timeline events."""
from __future__ import annotations

from ..simulator.schedule import HOST_DATA_TRACK, HOST_TRACK, Event

PROCESS_ID = 1
HOST_THREAD = 1000  # Perfetto sorts tracks by thread id: the host goes last
DATA_THREAD = 1001  # then the host's data preparation
_THREADS = {HOST_TRACK: HOST_THREAD, HOST_DATA_TRACK: DATA_THREAD}
_TRACKS = {thread: track for track, thread in _THREADS.items()}
_LABELS = {HOST_TRACK: "Host", HOST_DATA_TRACK: "Host data preparation"}


def _thread(ipu: int) -> int:
    return _THREADS.get(ipu, ipu)


def _name(event: Event) -> str:
    if event.kind in ("F", "B"):
        return f"{event.kind}{event.micro_batch} (stage {event.stage})"
    return event.kind


def to_trace(events: list[Event], num_ipus: int, memory: list[dict], title: str) -> dict:
    """Events in seconds -> trace events in microseconds, one track per IPU plus the host."""
    trace = [{"name": "process_name", "ph": "M", "pid": PROCESS_ID, "tid": 0,
              "args": {"name": title}}]
    for ipu in list(range(num_ipus)) + [HOST_TRACK, HOST_DATA_TRACK]:
        label = _LABELS.get(ipu, f"IPU {ipu}")
        trace.append({"name": "thread_name", "ph": "M", "pid": PROCESS_ID, "tid": _thread(ipu),
                      "args": {"name": label}})
    for e in events:
        trace.append({"name": _name(e), "cat": e.kind, "ph": "X", "pid": PROCESS_ID,
                      "tid": _thread(e.ipu), "ts": e.start * 1e6, "dur": e.duration * 1e6,
                      "args": {"micro_batch": e.micro_batch, "stage": e.stage, "step": e.step,
                               "cycle": e.cycle}})
    for row in memory:  # one counter sample per IPU: the memory plan as a stacked bar
        trace.append({"name": f"IPU {row['ipu']} memory (bytes)", "ph": "C", "pid": PROCESS_ID,
                      "ts": 0, "args": {k: v for k, v in row.items()
                                        if isinstance(v, int) and k not in ("ipu", "capacity", "total")}})
    return {"traceEvents": trace, "displayTimeUnit": "ns"}


def from_trace(trace: dict) -> list[Event]:
    """The inverse of to_trace for the duration events."""
    events = []
    for item in trace["traceEvents"]:
        if item.get("ph") != "X":
            continue
        args = item.get("args", {})
        ipu = _TRACKS.get(item["tid"], item["tid"])
        events.append(Event(ipu, item["ts"] / 1e6, item["dur"] / 1e6, item["cat"],
                            args.get("micro_batch"), args.get("stage"), args.get("step"),
                            args.get("cycle")))
    return events
