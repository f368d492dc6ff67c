"""A lesson page as the site's search index reads it, and the names each lesson teaches.

A search for a PopTorch name finds every page that uses it: the reference, the guides, and
lessons that use it in passing. The lesson that teaches it ranks first: each lesson carries the
names it teaches as its search tags (Material weighs a tag above a title), decided from the
course map (docs/course.md, "you learn") and each lesson's "What you will learn". A name is
listed under the one lesson that teaches it, not under the later ones that use it (lesson 15's
recipe uses most of them); tests/test_website.py checks that each lesson still names them.
"""
from __future__ import annotations

from bs4 import BeautifulSoup

TAUGHT = {
    "01": ["trainingModel", "inferenceModel", "isRunningOnIpu", "copyWeightsToHost",
           "copyWeightsToDevice", "detachFromDevice", "compileAndExport"],
    "02": ["deviceIterations", "OutputMode", "DataLoaderMode", "AsynchronousDataAccessor"],
    "03": ["Block", "BlockFunction", "BeginBlock", "Stage", "AutoStage"],
    "04": ["PipelinedExecution", "gradientAccumulation"],
    "05": ["ShardedExecution", "ipu_print_tensor"],
    "06": ["SerialPhasedExecution", "ParallelPhasedExecution", "Phase", "Liveness"],
    "07": ["recomputationCheckpoint", "setAvailableMemoryProportion", "serializedMatMul"],
    "08": ["TensorLocations", "setOptimizerLocation", "useReplicatedTensorSharding"],
    "09": ["setPartialsType", "accum_type"],
    "10": ["replicationFactor", "ReductionType", "popdist", "poprun"],
    "11": ["setLogLevel", "anchorTensor", "getAnchoredTensor", "enableFloatingPointExceptions"],
    "12": ["identity_loss", "custom_op", "MultiConv", "for_loop"],
    "13": ["IPUConfig", "layers_per_ipu", "IPUTrainer"],
    "14": ["IPUStrategy"],
    "15": ["useOfflineIpuTarget"],
    "16": ["ScheduleGPipe", "Schedule1F1B", "ZeroRedundancyOptimizer", "fully_shard",
           "GradScaler", "DistributedDataParallel"],
}
# Parts of a notebook page that a search must not find: the copy button ("Copied!"), the
# hidden copy of each cell's code that it copies, and the "¶" of each heading (else every
# section's title in the results ends in it).
NOT_SEARCHED = ["clipboard-copy", ".clipboard-copy-txt", ".anchor-link", "[data-search-exclude]"]


def taught(lesson: str) -> list[str]:
    """The names a lesson ("04_pipelining") teaches."""
    return TAUGHT.get(lesson.split("_")[0], [])


def for_search(html: str) -> str:
    """The page as the search index should read it: the same text, without what search skips,
    and with every heading beside the cells after it, not inside its own cell's <div>.

    Material's indexer ends a section where its heading's element ends: on a notebook page,
    at the end of the heading's Markdown cell, so the code and outputs under each heading went
    to an untitled first section and a search for a name in them found the lesson, not the
    section. The page starts at its title, so that its first section is the page's own entry,
    as on every other page.
    """
    soup = BeautifulSoup(html, "html.parser")
    for element in soup.select(", ".join(NOT_SEARCHED)):
        element.decompose()
    for div in soup.find_all("div"):
        div.unwrap()
    title = soup.find("h1")
    return "".join(map(str, [title, *title.next_siblings])) if title else str(soup)
