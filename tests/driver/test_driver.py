"""The driver (ccxml/driver): an algorithm as data, one recipe from it to a loaded schedule, one
topology-option parser, SOURCE — without the command line."""
from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from ccxml.driver import (
    AlgorithmSpec,
    OptionError,
    TopologyOptions,
    build,
    compile,
    export,
    load_source,
    resolve_topology,
    schedule,
    schedules,
    text,
)

ROOT = Path(__file__).resolve().parents[2]


def test_a_spec_is_a_value():
    spec = AlgorithmSpec("ring", "allreduce", 8, options={"channels": 2})
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.ranks = 4
    with pytest.raises(TypeError):
        spec.options["channels"] = 3                # a read-only copy
    assert spec.with_options(max_bytes=1 << 20).options == {"channels": 2, "max_bytes": 1 << 20}
    assert spec.options == {"channels": 2}


def test_the_recipe_steps_compose_to_text_and_schedule():
    spec = AlgorithmSpec("ring", "allreduce", 4, options={"channels": 2})
    xml = export(compile(build(spec), "rccl"), "rccl")
    assert xml == text(spec, "rccl")
    sch = schedule(spec)
    assert (sch.coll, sch.ngpus, sch.attrs["nchannels"]) == ("allreduce", 4, "2")
    # the same bytes as ccxml generate writes for it
    from in_process import ccxml
    code, out, err = ccxml("generate", "ring", "-n", "4", "--channels", "2", "--target", "rccl", "-o", "-")
    assert code == 0 and out == xml


def test_schedules_share_a_build_between_sizes_of_one_message_size():
    spec = AlgorithmSpec("ring", "allgather", 4)
    got = schedules(spec, [1 << 10, 1 << 11, 1 << 30])
    assert got[0] is got[1]                         # the same primitive-call size: one build
    assert got[2].max_bytes == 1 << 30 and got[0].max_bytes == 1 << 10   # built for the first size of its count


def test_a_variant_entry_and_a_strict_spec_read_the_name_differently():
    sch = schedule(AlgorithmSpec("mesh:one-shot", "allreduce", 4))
    assert sch.ngpus == 4
    with pytest.raises(ValueError, match="unknown algorithm"):
        build(AlgorithmSpec("mesh:one-shot", "allreduce", 4, strict=True))


def test_a_topology_goes_to_builders_that_take_one_unless_strict():
    topo, _ = resolve_topology(TopologyOptions(servers=2, ranks_per_server=2))
    assert schedule(AlgorithmSpec("ring", "allreduce", 4, topology=topo)).ngpus == 4
    assert schedule(AlgorithmSpec("2d-torus", "allreduce", 4, topology=topo)).ngpus == 4
    with pytest.raises(ValueError, match="takes no topology"):
        build(AlgorithmSpec("ring", "allreduce", 4, topology=topo, strict=True))


@pytest.mark.parametrize("options, ranks, words", [
    (TopologyOptions(preset="pcie", topology_file="x.json"), None, "give either --topology or --preset, not both"),
    (TopologyOptions(groups="2,2", servers=2, ranks_per_server=2), None,
     "give either --servers/--ranks-per-server or --groups, not both"),
    (TopologyOptions(preset="pcie", alpha=1e-6, topology_file="x.json"), None, "give only one of"),
    (TopologyOptions(nodes=2), None, "--nodes needs --preset or --topology"),
    (TopologyOptions(preset="pcie", gpu="h100"), None, "--gpu goes with"),
    (TopologyOptions(servers=3), 8, "--ranks 8 is not divisible by --servers 3"),
    (TopologyOptions(ranks_per_server=4), None, "give both --servers and --ranks-per-server"),
])
def test_one_parser_refuses_combinations_in_the_options_words(options, ranks, words):
    with pytest.raises(OptionError, match=words.replace("-", r"\-").replace("(", r"\(")):
        resolve_topology(options, ranks=ranks)


def test_one_parser_reads_every_kind_of_topology():
    assert resolve_topology(TopologyOptions(preset="dgx-h100", nodes=2))[0].nranks == 16
    assert resolve_topology(TopologyOptions(groups="2,3"))[0].groups == (2, 3)
    assert resolve_topology(TopologyOptions(servers=2), ranks=8)[0].groups == (4, 4)
    flat, notes = resolve_topology(TopologyOptions(alpha=2e-6))
    assert flat.intra.alpha == 2e-6 and not flat.is_network
    from ccxml.simulator import DEFAULT_TOPOLOGY
    assert resolve_topology(TopologyOptions(), default=DEFAULT_TOPOLOGY)[0] is DEFAULT_TOPOLOGY


def test_load_source_builds_an_algorithm_and_refuses_a_bad_shape(tmp_path):
    src = load_source("ring", [1 << 10, 1 << 20], ranks=4, coll="allreduce")
    assert not src.is_file and len(src.schedules) == 2 and src.label == "ring allreduce"
    with pytest.raises(OptionError, match="is not a file"):
        load_source("ring", [1 << 10])
    path = tmp_path / "r.xml"
    path.write_text(text(AlgorithmSpec("ring", "allreduce", 4)))
    src = load_source(str(path), [1 << 10, 1 << 20])
    assert src.is_file and src.schedules[0] is src.schedules[1]
    with pytest.raises(OptionError, match="does not match the file's ngpus=4"):
        load_source(str(path), [1 << 10], ranks=8)


def test_the_driver_runs_without_the_command_line():
    """Importing the driver and building a schedule loads no module of ccxml.cli, ccxml.tuning or
    click (the layer contract says so statically; this says so at run time)."""
    code = ("import sys; from ccxml.driver import AlgorithmSpec, load_source, rank_algorithms, schedule; "
            "schedule(AlgorithmSpec('ring', 'allreduce', 4)); load_source('ring', [1024], ranks=4, coll='allreduce'); "
            "bad = [m for m in sys.modules if m.startswith(('ccxml.cli', 'ccxml.tuning', 'click'))]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_one_topology_parser():
    """Presets, topology files and shapes are read in ccxml/driver/topology.py only: no command
    parses them itself (issue 26: generate and topology each had a parser)."""
    readers = {"load_preset", "load_topology", "load_nccl_topology", "from_groups", "uniform"}
    found = []
    for path in sorted((ROOT / "ccxml" / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                if name in readers:
                    found.append(f"{path.name}:{node.lineno}: {name}")
    assert not found, found
