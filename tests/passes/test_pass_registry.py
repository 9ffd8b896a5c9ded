"""The pass registry and pipelines as data and text: each target's default pipeline, the text a
pipeline prints and reads back, ``ccxml generate --passes`` (and its one-line errors), and adding
a pass with one new module and one registration line."""
from __future__ import annotations

import importlib
import sys
from dataclasses import FrozenInstanceError, dataclass

import pytest
from in_process import ccxml

from ccxml.passes import Pass, PipelineError, parse_pipeline, pipeline, registry
from ccxml.passes.fusion import FuseReceiveSend
from ccxml.vocab.wire import PROFILES, profile

DEFAULT = "threadblocks,ordering,fusion,splitting,dependencies,numbering,checks"


def test_the_default_pipeline_is_the_registered_passes_that_apply():
    assert str(pipeline(profile("exec"))) == DEFAULT
    assert str(pipeline(profile("legacy"))) == DEFAULT
    assert str(pipeline(profile("rccl"))) == DEFAULT.replace("fusion", "lowering")
    for name, prof in PROFILES.items():
        kept = [cls().name for cls in registry.registered() if cls().applies(prof)]
        assert list(pipeline(prof).names) == kept, name
    assert "ordering" not in pipeline(profile("exec"), sort=False).names
    assert "fusion" not in pipeline(profile("exec"), merge_rcs=False).names


@pytest.mark.parametrize("text", [
    DEFAULT,
    "threadblocks,ordering,fusion{merge_rcs=false},splitting,dependencies,numbering,checks",
    "threadblocks,lowering,splitting,dependencies,numbering,checks",
])
def test_a_pipeline_prints_as_the_text_it_was_read_from(text):
    pipe = parse_pipeline(text)
    assert str(pipe) == text
    assert parse_pipeline(str(pipe)) == pipe


def test_options_are_fields_and_the_text_tolerates_spaces():
    pipe = parse_pipeline(" threadblocks , fusion{ merge_rcs=false } ,checks")
    assert pipe.names == ("threadblocks", "fusion", "checks")
    assert pipe.passes[1] == FuseReceiveSend(merge_rcs=False)
    assert str(pipe) == "threadblocks,fusion{merge_rcs=false},checks"
    assert str(parse_pipeline("fusion{merge_rcs=true}")) == "fusion"     # the default: not printed
    with pytest.raises(FrozenInstanceError):      # a pipeline cannot change behind its text
        pipe.passes[1].merge_rcs = True


@pytest.mark.parametrize("text, says", [
    ("thread", "unknown pass 'thread'; passes: threadblocks, ordering"),
    ("fusion{sort=false}", "pass 'fusion' has no option 'sort' (options: merge_rcs)"),
    ("ordering{merge_rcs=false}", "pass 'ordering' has no option 'merge_rcs' (options: none)"),
    ("fusion{merge_rcs=3}", "fusion{merge_rcs=3}: merge_rcs takes true or false"),
    ("fusion{merge_rcs}", "write each option as key=value"),
    ("fusion{merge_rcs=false merge_rcs=true}", "option 'merge_rcs' is given twice"),
    ("threadblocks checks", "cannot read the pipeline at 'threadblocks checks'"),
    ("threadblocks,", "ends with a comma"),
    ("  ", "the pipeline is empty"),
])
def test_bad_pipeline_text_is_named(text, says):
    with pytest.raises(PipelineError) as e:
        parse_pipeline(text)
    assert says in str(e.value)


def _generate(tmp_path, name, *args):
    out = tmp_path / name
    code, _, err = ccxml("generate", "ring", "--ranks", "6", "-q", "-o", str(out), *args)
    assert code == 0, err
    return out.read_bytes()


def test_generate_passes_gives_the_bytes_of_the_equivalent_switches(tmp_path):
    assert _generate(tmp_path, "a.xml") == _generate(tmp_path, "b.xml", "--passes", DEFAULT)
    no_fuse = DEFAULT.replace("fusion", "fusion{merge_rcs=false}")
    assert (_generate(tmp_path, "c.xml", "--no-fuse")
            == _generate(tmp_path, "d.xml", "--passes", no_fuse))
    assert _generate(tmp_path, "c.xml") != _generate(tmp_path, "a.xml", "--no-fuse")
    rccl = DEFAULT.replace("fusion", "lowering")
    assert (_generate(tmp_path, "e.xml", "--target", "rccl")
            == _generate(tmp_path, "f.xml", "--target", "rccl", "--passes", rccl))


@pytest.mark.parametrize("args, says", [
    (["--passes", "threadblocks,sorting"], "--passes: unknown pass 'sorting'; passes: "),
    (["--passes", "fusion{merge=false}"], "--passes: pass 'fusion' has no option 'merge'"),
    (["--passes", DEFAULT, "--no-fuse"], "write fusion{merge_rcs=false} in --passes instead"),
    (["--passes", "threadblocks,numbering,checks", "--dump-after", "ordering"],
     "--dump-after ordering: that pass does not run for target exec with --passes"),
])
def test_generate_passes_refuses_bad_text_in_one_line(tmp_path, args, says):
    code, out, err = ccxml("generate", "ring", "--ranks", "4", "-o", str(tmp_path / "x.xml"), *args)
    assert code == 2
    assert says in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "x.xml").exists()


def test_time_passes_and_dump_after_follow_the_given_pipeline(tmp_path):
    text = "threadblocks,fusion,splitting,dependencies,numbering,checks"     # no ordering
    code, out, err = ccxml("generate", "ring", "--ranks", "4", "-q", "-o", str(tmp_path / "x.xml"),
                           "--passes", text, "--time-passes", "--dump-after", "fusion")
    assert code == 0, err
    stages = [line.split()[-1] for line in err.splitlines()[2:]]
    assert [s for s in stages if s in registry.pass_names()] == text.split(",")
    assert "after fusion" in out


# ---- adding a pass: one new module + one registration line -------------------------------------
NEW_PASS = '''
from dataclasses import FrozenInstanceError, dataclass
from typing import ClassVar

from ccxml.passes.base import Pass


@dataclass(frozen=True)
class RenameAlgo(Pass):
    """The schedule's name gets ``-SUFFIX`` appended (nothing else changes)."""

    name: ClassVar[str] = "rename"
    suffix: str = "renamed"

    def applies(self, profile) -> bool:
        return False                    # only when a pipeline names it

    def run(self, algo, profile) -> None:
        algo.name = f"{algo.name}-{self.suffix}"
'''


@pytest.fixture
def rename_pass(tmp_path, monkeypatch):
    (tmp_path / "my_rename_pass.py").write_text(NEW_PASS)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("my_rename_pass")
    registry.register(module.RenameAlgo, after="numbering")        # the one registration line
    yield module.RenameAlgo
    registry.unregister("rename")
    sys.modules.pop("my_rename_pass", None)


def test_a_pass_added_from_a_new_module_runs_through_generate_passes(tmp_path, rename_pass):
    assert issubclass(rename_pass, Pass)
    assert registry.pass_names().index("rename") == registry.pass_names().index("numbering") + 1
    assert "rename" not in pipeline(profile("exec")).names          # applies() says no
    text = DEFAULT.replace("numbering", "numbering,rename{suffix=experiment}")
    assert str(parse_pipeline(text)) == text
    out = tmp_path / "x.xml"
    code, _, err = ccxml("generate", "ring", "--ranks", "4", "-q", "-o", str(out), "--passes", text,
                         "--dump-after", "rename")
    assert code == 0, err
    plain = tmp_path / "plain.xml"
    assert ccxml("generate", "ring", "--ranks", "4", "-q", "-o", str(plain))[0] == 0
    name = plain.read_text().split('name="', 1)[1].split('"', 1)[0]
    assert out.read_text() == plain.read_text().replace(f'name="{name}"',
                                                        f'name="{name}-experiment"', 1)

def test_registering_a_second_pass_of_a_known_name_is_refused():
    @dataclass(frozen=True)
    class Other(Pass):
        name = "fusion"
    with pytest.raises(ValueError, match="two passes are named 'fusion'"):
        registry.register(Other)


def test_each_pass_module_defines_its_one_frozen_pass():
    import dataclasses
    import inspect
    for cls in registry.registered():
        module = sys.modules[cls.__module__]
        mine = [c for _, c in inspect.getmembers(module, inspect.isclass)
                if issubclass(c, Pass) and c is not Pass and c.__module__ == module.__name__]
        assert mine == [cls], module.__name__
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
        assert cls.__doc__ and cls.__doc__ != Pass.__doc__
