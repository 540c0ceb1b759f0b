"""The examples of the README and the documentation pages run as written, from a fresh clone.

**The documents** are :data:`test_readme.DOCUMENTS`: the README, then every page of the site but
the changelog. Their examples run in one clone, each command once (a command two documents show
is one example).

**What counts as an example.** The lines of a document's shell blocks (```bash, ```sh,
```console and unlabelled ones; ``$`` prompts and ``# comments`` removed, ``\\`` continuations
joined) and the inline code spans of its prose (read as test_readme.py reads them). Of these, an
example is a ``tjap ...`` or ``python -m ...`` command that

- is not a usage summary: a summary shows choices (``a|b``), elisions (``...``), optional parts
  (``[--opt]``) or a placeholder argument in capitals (``FILE``, ``NAME``, ``S``, ``WINDOW.json``);
- and, in the prose, carries an argument: a bare ``tjap online`` or ``python -m
  benchmarks.sa_speed`` in a sentence names a command (test_readme.py runs its ``--help``);
- and is no retired command (``tjap bench table3``: test_readme.py checks its one-line answer).

A document's ``cp examples/...`` lines are its set-up: they all run first, in the clone, as
written, and a test checks that each document copies the files its own examples read. The other
shell lines (``make``, ``pip``, ``ray start``, ``sbatch``) are not run. A ``> FILE`` after a
command writes its output to FILE. Every ```python block of the README is a complete program and
runs too; the pages' Python blocks run in test_docs.py.

**How they run.** ``git clone`` of the repository's committed HEAD into a temporary folder (the
documents read are HEAD's as well); each command runs with cwd = the clone, ``tjap`` as
``sys.executable -m tjap``, ``python`` as ``sys.executable`` and PYTHONPATH = the clone, so
everything it reads and writes is the clone's. It must exit 0. Where a document quotes output
(``# 29 3 [16, 9, 4]`` after a print, or :data:`QUOTED` for a command), the quoted numbers must
appear in what it prints (to the quoted precision; ``218666.66...`` is a truncation); ``--json``
output must be strict JSON (no NaN or Infinity); ``--out`` / ``--plot`` / ``>`` files must be
written.

**Which run where.** Every example is in exactly one table, and a test checks that the tables
hold exactly the documents' examples, so a new example cannot slip through unclassified:

- :data:`CHEAP`: a few seconds each, run by the default suite (about a minute in all on 2 cores,
  most of it Numba compiling the kernels once in the fresh clone);
- :data:`SLOW`: trainings, long benchmarks and evaluations, run with ``-m slow`` (in document
  order, in one clone of their own: a later command may read what an earlier one wrote), each
  with its reason;
- :data:`ELSEWHERE`: needs what a clone does not have (a live Slurm, root, a Ray cluster, the
  reader's own files), with the reason; never run here.

**Uncommitted changes** are not in a clone. To try the documents of the working tree before
committing, ``TJAP_README_SOURCE=worktree`` copies the working tree's files (tracked and
untracked, not ignored) instead of cloning HEAD. Outside a git checkout the runs skip.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import runpy
import shlex
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from test_readme import (
    DOCUMENTS,
    RETIRED,
    SHELL_LANGUAGES,
    blocks,
    inline_commands,
    subcommands,
)

from tjap.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
WORKTREE = os.environ.get("TJAP_README_SOURCE", "clone") == "worktree"

#: A placeholder argument of a usage summary: a word in capitals, maybe with an extension.
PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_]*(\.\w+)?")
#: A number as printed (``-0.5``, ``218666.6666666667``, ``1e-05``).
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
#: A word in capitals as printed, maybe an enum member (``OPTIMAL``, ``Status.OPTIMAL``).
MEMBER = re.compile(r"\b(?:[A-Z]\w*\.)?[A-Z][A-Z_]{2,}\b")

#: The examples the default suite runs. With the Python blocks they take about 55 s of CPU in a
#: fresh clone, most of it Numba compiling: the batch simulator and trace loader (about 20 s, paid
#: by the first of them) and the tree kernels of "Python in ten lines" (about 14 s); run again,
#: each takes 1-2 s.
CHEAP = (
    "tjap --version",
    "tjap interference fit",
    "tjap topology show topology.conf --nodes",
    "tjap topology show topology.conf",
    "tjap solve window.json --method dp",
    "tjap solve window.json --method slurm-tree",
    "tjap generate windows --topology topology.conf --num-windows 100 --out windows.jsonl",
    "tjap generate windows --topology topology.conf --num-windows 100 --out windows_mine.jsonl",
    "tjap solve windows_mine.jsonl --method auto --json > solved.json",
    "tjap online --topology topology.conf --policy window --num-jobs 200",
    "tjap online --topology topology.conf --policy easy --placement freeform --num-jobs 200",
    "tjap methods --system network",
    "tjap methods --system provision",
    "tjap slurm place --help",
    "python -m benchmarks.slurm_topology --help",
    "tjap topology show blocks.conf",
    "tjap solve blocks-window.json --method dp",
    "tjap solve blocks-window.json --method slurm-block",
    "tjap solve blocks-window.json --method kueue-bestfit",
    "tjap generate windows --topology blocks.conf --constraints mix --num-windows 20 "
    "--out block-windows.jsonl",
    "tjap simulate --trace placement/batch/data/ls6-a100.tsv --nodes 76 --backfill easy --json",
    "tjap simulate --trace placement/batch/data/ls6-a100.tsv --nodes 76 --start 2022-11-01 --warm-start",
    "tjap audit examples/audit/sacct.txt --topology examples/audit/topology.conf --timezone Etc/UTC",
    "tjap audit examples/audit/jobcomp.txt --topology examples/audit/topology.conf --timezone Etc/UTC "
    "--json",
    "tjap audit examples/audit/sacct.txt --topology examples/audit/topology.conf --timezone Etc/UTC "
    "--report audit-report",
)

#: The examples run only with ``-m slow``, each with the reason.
#: The times are CPU seconds on the 2-core development machine. Several are short, but the
#: default suite keeps to about a minute: these cost more than they add to the cheap runs.
SLOW = {
    "tjap bench exact --topology blocks.conf --constraints mix --num-windows 20": "20 constrained windows x dp, SCIP, CP-SAT, the free-form bound and three anchors",
    "python -m benchmarks.blocks --num-windows 100 50 --out benchmarks/out/blocks": "150 windows on 576- and 4,608-node block clusters, SCIP on each (about 6 minutes)",
    "tjap bench exact --topology topology.conf --num-windows 100": "100 windows x dp, SCIP, slurm-tree and the free-form bound (4 s after the cheap runs, 8 s alone in a fresh clone)",
    "tjap bench exact --num-windows 200 --layout paper": "200 windows of the paper's 1000-node stream x dp, SCIP, CP-SAT and the paper's formulation",
    "python -m benchmarks.time_limits --limit 1 5": "a timing benchmark: every method under each limit, on two windows",
    "python -m benchmarks.sa_tables table3 --setting paper": "Table III: Seq and SA on the paper's windows (long benchmark)",
    "python -m benchmarks.sa_tables table4 --setting paper": "Table IV: SCIP with and without a limit, both formulations (long benchmark)",
    "python -m benchmarks.sa_tables nsa --setting paper": "NSA against SA at equal iterations and at equal time (long benchmark)",
    "python -m benchmarks.online": "Fig. 6: the paper's workload replayed under every policy (long benchmark)",
    "tjap network evaluate --topology 8:1-16 --servers 64 --policy tetris": "five 128-request episodes on 64 servers: the network engine's kernels compile in a fresh clone",
    "tjap interference evaluate --policy tetris": "a day of the k = 20 cluster; the interference simulator compiles in a fresh clone",
    "tjap network evaluate --policy gnn --weights learned/weights/network_gnn_imitation.json": "five 128-request episodes on 64 servers with the GNN: torch and the network engine's "
    "kernels compile in a fresh clone (8 s)",
    "tjap interference evaluate --topology fattree --k 20 --arch pcie --arrivals poisson --policy lif --seed 0 --json": "a day of the k = 20 cluster; the interference simulator compiles in a fresh clone (8 s)",
    "tjap simulate --trace placement/batch/data/lublin_256.swf --backfill conservative --plot lublin.png": "conservative backfill on 10,000 jobs plus a figure (8 s after the cheap runs compiled "
    "the simulator)",
    "python -m benchmarks.batch_sim": "a timing benchmark (speed, scaling, warm start: 6 s, timings that a loaded machine spoils)",
    "tjap train nsa --arch cnn3 --boundaries --seed 1 --timesteps 0 --imitation-steps 400000 "
    "--imitation-epochs 20 --imitation-temperature 300 --out learned/weights/nsa_cnn3": "training (400,000 imitation steps, 20 epochs)",
    "tjap network evaluate --topology 8:1-16 --servers 1024 --policy gnn --requests 2048 --seeds 5 --json": "five 2048-request episodes on 1024 servers (about a minute)",
    "tjap train network --imitation-iterations 5 --imitation-episodes 18 --timesteps 230000 "
    "--requests 128 --learning-rate 1e-4 --seed 0 --out learned/weights/my_gnn": "training (DAgger, then 230,000 PPO steps)",
    "tjap train network --imitation-iterations 5 --imitation-episodes 18 --timesteps 0 --seed 0 "
    "--out learned/weights/my_gnn_imitation": "training (DAgger imitation of the exact model)",
    "tjap train network --init learned/weights/my_gnn_imitation.json --envs 7 --time-budget 330 "
    "--seed 0 --out learned/weights/my_gnn": "training (330 s of PPO; reads the weights the command before it writes)",
    "python -m benchmarks.network --seeds 5 --large-requests 2048": "every seed-003 method on the nine topologies at 64 and 1024 servers: long benchmark",
    "python -m benchmarks.interference": "seed 001's benchmark: more than 5 minutes",
    "python -m benchmarks.k8s_stream --nodes 576 --jobs 120 --compress 7200 --seeds 0,1,2,3 "
    "--arms kueue,tjap --offline": "eight streams of 120 jobs on the in-memory twin (about 3 minutes)",
    "tjap provision evaluate --trace placement/batch/data/ls6-a100.tsv --from 2023-03-01 --to 2023-04-01 "
    "--nodes 8 --load medium --policy avg --pairs 20 --json": "20 chained-job episodes replayed on the trace (45 s)",
    "tjap provision evaluate --trace placement/batch/data/ls6-a100.tsv --from 2023-03-01 --to 2023-04-01 "
    "--nodes 8 --load heavy --policy moe_dqn --scheduler mirage --pairs 20 --max-tries 400 --json": "20 heavy-load episodes with a transformer at every decision (2.5 minutes)",
    "python -m benchmarks.provision --trace placement/batch/data/ls6-a100.tsv --pairs 20 --workers 2": "every provisioner, load and size: long benchmark",
    "tjap train provision --trace placement/batch/data/ls6-a100.tsv --out learned/weights --workers 16": "training (records the Nov-Feb episodes, then fits every learned provisioner)",
    "tjap provision calibrate --trace placement/batch/data/ls6-a100.tsv --interruption-weights 1 2 4 8": "re-records 173 held-out episodes (13 minutes on one core)",
    "python -m benchmarks.executor_speedup --workers 2": "a timing benchmark (serial, 2 processes and a local Ray)",
    # the small training runs of how-to/train.md, each followed by the command that runs its weights
    "tjap train nsa --arch cnn3 --timesteps 0 --imitation-steps 2000 --imitation-epochs 2 "
    "--windows 20 --seed 0 --out mine/nsa_try": "training (2,000 imitation steps)",
    "tjap generate windows --num-windows 3 --seed 5 --out windows.jsonl": "writes the windows the next command solves with the weights trained before it",
    "tjap solve windows.jsonl --method nsa --weights mine/nsa_try.json --iterations 200": "reads the weights the training before it writes",
    "tjap train network --topologies 8:1-16 --imitation-iterations 1 --imitation-episodes 2 "
    "--imitation-requests 32 --timesteps 0 --seed 0 --out mine/gnn_try": "training (one DAgger iteration of the exact model)",
    "tjap network evaluate --topology 8:1-16 --servers 64 --policy gnn --weights mine/gnn_try.json "
    "--requests 64 --seeds 2": "reads the weights the training before it writes",
    "tjap train interference --k 4 --intervals 4 --bc-episodes 2 --bc-epochs 2 --seed 0 "
    "--out mine/marl_try": "training (behaviour cloning of the whole rule)",
    "tjap interference evaluate --topology fattree --k 4 --policy marl --weights mine/marl_try.json": "reads the weights the training before it writes",
    "tjap train provision --trace placement/batch/data/ls6-a100.tsv --from 2022-11-01 --to 2022-12-01 "
    "--episodes 20 --budget-s 120 --epochs 1 --experts 2 --dqn-steps 50 --pg-steps 20 "
    "--out mine/prov": "training (records episodes, then fits every learned provisioner: about 4 minutes)",
    "tjap provision evaluate --trace placement/batch/data/ls6-a100.tsv --from 2023-03-01 --to 2023-04-01 "
    "--nodes 8 --policy moe --weights mine/prov/provision_moe.json --pairs 3": "reads the weights the training before it writes",
}

#: The examples that need what a clone does not have, with the reason; never run here.
ELSEWHERE = {
    "tjap k8s advise --kubeconfig ~/.kube/config": "needs the user's Kubernetes (tests/k8s/test_k8s_live.py runs advise on a local control plane, marked k8s)",
    "tjap k8s place --kubeconfig ~/.kube/config --json": "needs the user's Kubernetes (tests/k8s/test_k8s_live.py runs place --once --json on a local one, marked k8s)",
    "tjap k8s place --once": "needs a Kubernetes in $KUBECONFIG (tests/k8s/test_k8s_live.py, marked k8s)",
    "tjap k8s place --leader-elect": "needs a Kubernetes in $KUBECONFIG (tests/k8s/test_k8s_live.py runs two replicas and kills the holder, marked k8s)",
    "tjap k8s place --topology-wait 600": "needs a Kubernetes in $KUBECONFIG (tests/k8s/test_controller.py holds gangs for their floor on the in-memory twin)",
    "tjap k8s place --metrics-address 0.0.0.0:9090": "a long-running controller on a Kubernetes (tests/k8s/test_metrics.py serves a running controller's metrics and health)",
    "tjap k8s cluster up --dir /tmp/k8s --topology examples/blocks.conf": "needs the control plane .ci/build-k8s builds (tests/k8s/test_k8s_live.py::test_the_commands_of_the_how_to, marked k8s)",
    "tjap k8s cluster down --dir /tmp/k8s": "stops the cluster of cluster up (tests/k8s/test_k8s_live.py::test_the_commands_of_the_how_to, marked k8s)",
    "tjap k8s place --system interference": "needs a Kubernetes with DL jobs' pods (tests/k8s/test_interference_controller.py places them on a local control plane, marked k8s)",
    "tjap k8s place --system interference --policy marl --json": "needs a Kubernetes with DL jobs' pods (tests/k8s/test_interference_controller.py, marked k8s)",
    "tjap k8s audit --kubeconfig ~/.kube/config --report kueue-audit": "needs the user's Kueue cluster (tests/k8s/test_kueue_live.py audits a live Kueue on a local control plane, marked k8s)",
    "python -m benchmarks.kueue_live --nodes 144 --jobs 30": "needs the control plane and Kueue's manager (.ci/build-k8s, .ci/build-kueue-manager; tests/k8s/test_kueue_live.py runs a short stream, marked k8s)",
    "python -m benchmarks.kueue_referee --cases 2000": "needs the referee .ci/build-kueue-referee builds (tests/k8s/test_kueue_referee.py compares 300 windows, marked k8s)",
    "tjap topology show nodes.json --kueue-topology topology.yaml": "the user's own node list and Kueue Topology (tests/placement/tree/test_topology_levels.py reads some)",
    "tjap topology show hypernodes.yaml": "the user's own Volcano manifests (tests/placement/tree/test_topology_levels.py runs it on one)",
    "tjap topology show /etc/slurm/topology.conf --nodes": "the site's own topology.conf",
    "tjap topology show /etc/slurm/topology.yaml": "the site's own topology.yaml (tests/placement/tree/test_topology_levels.py reads some)",
    "tjap topology show nodes.json --kueue-topology kueue-topology.yaml --missing skip": "the user's own node list and Kueue Topology",
    "tjap topology show hypernodes.yaml --node-list nodes.json": "the user's own Volcano manifests and node list",
    "tjap topology show tree.json": "a JSON tree of the reader's own (tests/face/test_topology_cli.py reads one)",
    "tjap topology show bad.conf": "shows the one-line error (exit 2) for the bad.conf the printf line before it writes "
    "(tests/face/test_topology_cli.py checks such errors)",
    "tjap slurm place --once": "needs a running Slurm with topology/tree (tests/slurm/test_slurm_service_live.py, marked slurm)",
    "tjap slurm place --partition main --log /var/log/tjap-place.jsonl": "needs a running Slurm, and writes a system log",
    "tjap slurm place --once --dry-run --json": "needs a running Slurm",
    "tjap slurm place --dry-run --once --json": "needs a running Slurm",
    "tjap slurm place --dry-run --once": "needs a running Slurm (test_docs.py runs the getting-started guide's on a local "
    "Slurm, marked slurm)",
    "tjap slurm advise": "needs a running Slurm",
    "python -m benchmarks.slurm_tree_validation --windows 30": "starts throw-away Slurms: needs root and slurm-wlm",
    "tjap audit records.txt --topology /etc/slurm/topology.conf --timezone Europe/Berlin "
    "--report audit-report": "the site's own records and topology (the examples/audit/ commands run on a real run's)",
    "tjap slurm place --partition main --locality-slack 0.5 --locality-wait 600": "needs a running Slurm with a partition main (the holds: tests/slurm/test_slurm_service_live.py)",
    "tjap provision live --local --policy moe --trace placement/batch/data/ls6-a100.tsv "
    "--at 2023-03-02T12:00 --cancel-successor": "starts a localhost Slurm: needs root and slurm-wlm (tests/placement/slurm/test_provision_live_slurm.py, "
    "marked slurm)",
    "tjap provision live --policy avg --pred-job 1234 --compress 1 --json": "needs an existing Slurm running job 1234",
    "tjap network evaluate --seeds 64 --ray HEAD_IP:6379": "needs a Ray cluster at HEAD_IP (`--ray local` is what the tests use)",
}

#: Output the README states for a command elsewhere (a Python block's comment, a table): the
#: numbers and words in capitals that must appear in what the command prints.
QUOTED = {
    "tjap topology show topology.conf --nodes": "29 3 [16, 9, 4]",  # the Python block's print
    "tjap solve window.json --method dp": "OPTIMAL 34666.7",
    "tjap solve window.json --method slurm-tree": "36666.7",
    "tjap generate windows --topology topology.conf --num-windows 100 --out windows.jsonl": "100",
    "tjap bench exact --topology topology.conf --num-windows 100": "14010.2 14340.2",
    "tjap solve blocks-window.json --method dp": "OPTIMAL 38000",
    "tjap online --topology topology.conf --policy window --num-jobs 200": "9243.34 1787.31",
    "tjap online --topology topology.conf --policy easy --placement freeform --num-jobs 200": (
        "10068.47 825.51"
    ),
    "tjap solve blocks-window.json --method slurm-block": "74000",
    "tjap solve blocks-window.json --method kueue-bestfit": "38000",
    "tjap audit examples/audit/sacct.txt --topology examples/audit/topology.conf --timezone Etc/UTC": "120 111 30.3 6.5 6.5 95.5 5",
}

#: The README's Python blocks the default suite runs, by their first line that is not an import;
#: the others run with ``-m slow``. (The pages' blocks run in test_docs.py.)
CHEAP_PYTHON = (
    "tree = tjap.FatTree(k=20, num_nodes=1000)",
    'tree = tjap.Topology.from_slurm("topology.conf")',
)


# -- reading the documents ----------------------------------------------------------------------
def committed() -> bool:
    """Whether the documents under test are HEAD's (what a clone holds)."""
    if WORKTREE:
        return False
    try:
        subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"], check=True, capture_output=True
        )
    except (OSError, subprocess.CalledProcessError):
        return False
    return True


def document_text(path: str) -> str:
    """A document under test: HEAD's (empty if HEAD does not hold it), or the working tree's in
    worktree mode and outside a git checkout."""
    if COMMITTED:
        done = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"HEAD:{path}"], capture_output=True, text=True
        )
        return done.stdout if done.returncode == 0 else ""
    return (ROOT / path).read_text()


def shell_lines(text: str) -> list[str]:
    """The lines of the shell blocks, continuations joined, prompts and comments removed."""
    lines = []
    for block in blocks(text, SHELL_LANGUAGES):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip().removeprefix("$ ")
            line = " ".join(re.split(r"\s#", line, maxsplit=1)[0].split())
            if line and not line.startswith("#"):
                lines.append(line)
    return lines


def is_command(line: str) -> bool:
    return line.startswith(("tjap ", "python -m "))


def is_usage(command: str) -> bool:
    """A usage summary: choices, elisions, optional parts or a placeholder argument."""
    return any(mark in command for mark in ("|", "...", "[")) or any(
        PLACEHOLDER.fullmatch(word) for word in shlex.split(command)
    )


def is_bare(command: str) -> bool:
    """A command path and nothing else (``tjap bench exact``, ``python -m benchmarks.sa_speed``)."""
    words = shlex.split(command)
    if words[0] == "python":
        return len(words) == 3
    parser = build_parser()
    for word in words[1:]:
        choices = subcommands(parser)
        if choices is None or word not in choices:
            return False
        parser = choices[word]
    return True


def is_retired(command: str) -> bool:
    """A command a page names as retired (test_readme.py checks what it answers)."""
    words = shlex.split(command)
    return any(words[1 : len(path) + 1] == list(path) for path in RETIRED)


def examples(text: str) -> list[str]:
    """A document's concrete example commands, in its order, each once."""
    found = [line for line in shell_lines(text) if is_command(line)]
    found += [span for span in inline_commands(text) if not is_bare(span)]
    return list(dict.fromkeys(c for c in found if not is_usage(c) and not is_retired(c)))


def setup_lines(text: str) -> list[str]:
    """A document's set-up lines: ``cp examples/...``."""
    return [line for line in shell_lines(text) if line.startswith("cp examples/")]


def copied(line: str) -> set[str]:
    """The names a set-up line puts in the folder it copies to."""
    return {Path(name).name for name in shlex.split(line)[1:-1]}


def python_blocks(text: str) -> dict[str, str]:
    """The ```python blocks by their first line that is not an import (or blank)."""
    found = {}
    for block in blocks(text, {"python"}):
        key = next(
            line
            for line in block.splitlines()
            if line.strip() and not line.startswith(("import ", "from "))
        )
        found[re.split(r"\s+#", key)[0].strip()] = block
    return found


def uncommitted_note() -> str:
    """A hint for failures when the working tree differs from the HEAD under test."""
    if WORKTREE:
        return ""
    try:
        status = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return ""
    return (
        "\n(the working tree has uncommitted changes, which a clone of HEAD does not hold: "
        "TJAP_README_SOURCE=worktree runs the working tree's documents)"
        if status.strip()
        else ""
    )


COMMITTED = committed()
#: The documents under test, by their path in the repository, and their text.
TEXTS = {
    d.relative_to(ROOT).as_posix(): document_text(d.relative_to(ROOT).as_posix()) for d in DOCUMENTS
}
README = TEXTS["README.md"]
NOTE = uncommitted_note()
#: Each document's examples and set-up lines.
EXAMPLES_OF = {path: examples(text) for path, text in TEXTS.items()}
SETUP_OF = {path: setup_lines(text) for path, text in TEXTS.items()}
EXAMPLES = list(dict.fromkeys(c for found in EXAMPLES_OF.values() for c in found))
SETUP = list(dict.fromkeys(line for found in SETUP_OF.values() for line in found))
PYTHON = python_blocks(README)


# -- checking output ----------------------------------------------------------------------------
def missing_quoted(quoted: str, output: str) -> list[str]:
    """The numbers and words in capitals of ``quoted`` that ``output`` does not print. A quoted
    decimal matches a printed number within one unit of its last digit (``34666.7`` matches
    ``34666.666...``, ``218666.66...`` matches ``218666.6666``); an integer must match exactly."""
    printed = [float(n) for n in NUMBER.findall(output)]
    missing = [m for m in MEMBER.findall(quoted) if m not in output]
    for token in NUMBER.findall(MEMBER.sub("", quoted)):
        value = float(token)
        if "." in token:
            unit = 10.0 ** -len(token.split(".")[1])
            ok = any(abs(p - value) < unit for p in printed)
        else:
            ok = value in printed
        if not ok:
            missing.append(token)
    return missing


def quoted_in_block(block: str) -> str:
    """What a block's ``print(...)  # ...`` comments quote, before any ``:`` of explanation."""
    return " ".join(
        line.split("#", 1)[1].split(":")[0]
        for line in block.splitlines()
        if line.lstrip().startswith("print(") and "#" in line
    )


def strict_json(text: str):
    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def split_redirect(command: str) -> tuple[list[str], str | None]:
    """The command's words, and the file a ``> FILE`` at its end sends its output to."""
    words = shlex.split(command)
    if len(words) > 2 and words[-2] == ">":
        return words[:-2], words[-1]
    return words, None


def written_files(command: str) -> list[str]:
    """The files or file stems the command's ``--out``, ``--plot``, ``--log`` and ``>`` name."""
    words, output = split_redirect(command)
    named = [
        words[i + 1] for i, word in enumerate(words[:-1]) if word in ("--out", "--plot", "--log")
    ]
    return named + ([output] if output else [])


# -- running in a clone -------------------------------------------------------------------------
def make_tree(dest: Path) -> Path:
    """A fresh clone of HEAD at ``dest`` (or, in worktree mode, a copy of the working tree's
    tracked and untracked files), with the README's set-up lines run in it."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip(f"{ROOT} is not a git checkout: nothing to clone")
    if WORKTREE:
        listed = ["git", "-C", str(ROOT), "ls-files", "-z", "-co", "--exclude-standard"]
        names = subprocess.run(listed, check=True, capture_output=True).stdout.decode().split("\0")
        for name in filter(None, names):
            if (ROOT / name).is_file():
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, dest / name)
    else:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(dest)], check=True)
    for line in SETUP:
        run(dest, line, timeout=60)
    return dest


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    return make_tree(tmp_path_factory.mktemp("readme") / "clone")


@pytest.fixture(scope="module")
def slow_clone(tmp_path_factory) -> Path:
    return make_tree(tmp_path_factory.mktemp("readme_slow") / "clone")


def argv(command: str) -> list[str]:
    words, _ = split_redirect(command)
    if words[0] == "tjap":
        return [sys.executable, "-m", "tjap", *words[1:]]
    if words[0] == "python":
        return [sys.executable, *words[1:]]
    return words


def run(tree: Path, command: str, timeout: float | None) -> subprocess.CompletedProcess:
    """Run one example in ``tree``, as written; it must exit 0."""
    env = dict(os.environ, PYTHONPATH=str(tree), MPLBACKEND="Agg")
    done = subprocess.run(
        argv(command), cwd=tree, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, (
        f"example `{command}` ({shown_in(command)}) exited {done.returncode}:\n"
        f"{done.stderr[-3000:]}{NOTE}"
    )
    _, output = split_redirect(command)
    if output:
        (tree / output).write_text(done.stdout)
    return done


def shown_in(command: str) -> str:
    """The documents that show a command."""
    return ", ".join(path for path, found in EXAMPLES_OF.items() if command in found) or "set-up"


def check_example(tree: Path, command: str, timeout: float | None) -> None:
    done = run(tree, command, timeout)
    if command in QUOTED:
        missing = missing_quoted(QUOTED[command], done.stdout)
        assert not missing, (
            f"`{command}` does not print {missing} (README: {QUOTED[command]!r}):\n{done.stdout}"
        )
    if "--json" in shlex.split(command):
        strict_json(done.stdout)
    for name in written_files(command):
        target = tree / name
        assert list(target.parent.glob(target.name + "*")), f"`{command}` wrote no {name}"


def check_block(tree: Path, key: str, timeout: float | None) -> None:
    script = tree.parent / f"readme_block_{list(PYTHON).index(key)}.py"
    script.write_text(PYTHON[key])
    done = run(tree, f"python {shlex.quote(str(script))}", timeout)
    missing = missing_quoted(quoted_in_block(PYTHON[key]), done.stdout)
    assert not missing, f"the README block `{key}` does not print {missing}:\n{done.stdout}"


# -- the tests ----------------------------------------------------------------------------------
def test_the_documents_have_examples_and_set_up():
    assert len(EXAMPLES) > 20 and SETUP and len(PYTHON) >= 2, (EXAMPLES, SETUP, list(PYTHON))
    assert EXAMPLES_OF["README.md"] and SETUP_OF["README.md"], "the README shows no example"


def test_every_example_is_classified_once():
    """CHEAP, SLOW and ELSEWHERE hold exactly the documents' examples, each once."""
    tables = [*CHEAP, *SLOW, *ELSEWHERE]
    assert len(tables) == len(set(tables)), "an example is in two tables"
    unclassified = [f"{c} ({shown_in(c)})" for c in EXAMPLES if c not in tables]
    gone = [c for c in tables if c not in EXAMPLES]
    assert not unclassified, (
        f"examples in no table (add each to CHEAP, SLOW or ELSEWHERE): {unclassified}{NOTE}"
    )
    assert not gone, f"table entries that no document shows (any more): {gone}{NOTE}"
    assert set(ELSEWHERE) == set(EXAMPLES) - set(CHEAP) - set(SLOW)
    assert set(QUOTED) <= set(CHEAP) | set(SLOW)


def test_each_document_copies_what_its_examples_read():
    """A document whose examples read a file of examples/ by its bare name (``topology.conf``)
    copies it itself, with a ``cp examples/...`` line: each page runs as written on its own."""
    names = {name for line in SETUP for name in copied(line)}
    missing = []
    for path, found in EXAMPLES_OF.items():
        own = {name for line in SETUP_OF[path] for name in copied(line)}
        for command in found:
            if command in ELSEWHERE:
                continue
            words, _ = split_redirect(command)
            read = {w.split("=")[-1] for w in words} & names
            missing += [f"{path}: `{command}` reads {n}" for n in sorted(read - own)]
    assert not missing, f"add the cp examples/... line to the page: {missing}"


def test_the_cheap_python_blocks_are_the_readmes():
    assert set(CHEAP_PYTHON) <= set(PYTHON), sorted(set(CHEAP_PYTHON) - set(PYTHON))


@pytest.mark.parametrize("command", [c for c in EXAMPLES if c.startswith("tjap ")])
def test_every_tjap_example_parses(command, capsys):
    """Every ``tjap`` example, the ones not run here included, names options that exist with
    values they accept."""
    try:
        build_parser().parse_args(split_redirect(command)[0][1:])
    except SystemExit as stop:  # --version prints and exits 0
        assert stop.code == 0, f"`{command}`: {capsys.readouterr().err.strip()}"


@pytest.mark.parametrize(
    "command", [c for c in EXAMPLES if c.startswith("python -m ") and len(shlex.split(c)) > 3]
)
def test_every_module_example_names_options_that_exist(command, monkeypatch):
    """Every ``python -m`` example's options are in its module's ``--help``."""
    module = shlex.split(command)[2]
    monkeypatch.setattr(sys, "argv", [f"python -m {module}", "--help"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings(), pytest.raises(SystemExit):
        warnings.filterwarnings("ignore", "'.*' found in sys.modules", RuntimeWarning)
        runpy.run_module(module, run_name="__main__", alter_sys=False)
    options = set(re.findall(r"--[\w-]+", out.getvalue()))
    unknown = [
        w for w in shlex.split(command) if w.startswith("--") and w.split("=")[0] not in options
    ]
    assert not unknown, f"`{command}`: {module} has no {unknown}"


def test_examples_that_run_write_inside_the_clone():
    for command in [*CHEAP, *SLOW]:
        for name in written_files(command):
            assert not Path(name).is_absolute() and ".." not in Path(name).parts, (command, name)


def test_usage_lines_and_bare_names_are_not_examples():
    assert is_usage("tjap solve WINDOW.json --method dp")
    assert is_usage("tjap methods [--system tree|network]")
    assert is_usage("tjap train nsa ...")
    assert not is_usage("tjap network evaluate --seeds 64 --ray HEAD_IP:6379")
    assert is_bare("tjap bench exact") and is_bare("python -m benchmarks.sa_speed")
    assert not is_bare("tjap topology show topology.conf") and not is_bare("tjap --version")


def test_a_redirect_names_the_output_file():
    assert split_redirect("tjap solve w.jsonl --json > solved.json") == (
        ["tjap", "solve", "w.jsonl", "--json"],
        "solved.json",
    )
    assert split_redirect("tjap --version") == (["tjap", "--version"], None)
    assert written_files("tjap generate windows --out w.jsonl --json > r.json") == [
        "w.jsonl",
        "r.json",
    ]


def test_quoted_numbers_are_matched_to_their_precision():
    assert missing_quoted("Status.OPTIMAL 218666.66...", "Status.OPTIMAL 218666.6666666667") == []
    assert missing_quoted("34666.7 36666.7", "34666.666 36666.67") == []
    assert missing_quoted("29 3 [16, 9, 4]", "29 nodes, 3 levels, sizes 4, 9, 16") == []
    assert missing_quoted("29 3", "28 nodes, 3 levels") == ["29"]
    assert missing_quoted("Status.OPTIMAL 1.5", "Status.FEASIBLE 1.6") == ["Status.OPTIMAL", "1.5"]


def test_the_clone_runs_tjap_as_a_module(clone):
    assert (clone / "tjap" / "__main__.py").is_file(), (
        f"python -m tjap needs tjap/__main__.py{NOTE}"
    )
    for line in SETUP:  # the set-up ran: its files are in the clone
        for name in shlex.split(line)[1:-1]:
            assert (clone / shlex.split(line)[-1] / Path(name).name).is_file(), line


@pytest.mark.parametrize("command", CHEAP)
def test_cheap_example_runs(clone, command):
    check_example(clone, command, timeout=300)


@pytest.mark.parametrize("key", CHEAP_PYTHON)
def test_cheap_python_block_runs(clone, key):
    check_block(clone, key, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("command", [c for c in EXAMPLES if c in SLOW])
def test_slow_example_runs(slow_clone, command):
    check_example(slow_clone, command, timeout=None)


@pytest.mark.slow
@pytest.mark.parametrize("key", [k for k in PYTHON if k not in CHEAP_PYTHON])
def test_slow_python_block_runs(slow_clone, key):
    check_block(slow_clone, key, timeout=None)
