"""Shared test fixtures: paths, the XML schema, the corpus folder."""
from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("CCXML_CORPUS", REPO.parent / "shared" / "xml-corpus"))
#: the real NCCL topology files (../shared/topologies beside the checkout or above a worktree)
TOPOLOGIES = Path(os.environ.get("CCXML_TOPOLOGIES") or next(
    (p / "shared" / "topologies" for p in REPO.parents if (p / "shared" / "topologies").is_dir()),
    REPO.parent / "shared" / "topologies"))


@pytest.fixture(scope="session")
def xsd():
    from lxml import etree
    return etree.XMLSchema(etree.parse(str(REPO / "schemas" / "msccl.xsd")))


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not (CORPUS / "INDEX.md").is_file():
        pytest.skip(f"xml corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture(autouse=True)
def _garbage_collector_left_on():
    """A test must not leave the cyclic garbage collector off for the tests after it (as
    ``ccxml.cli.app.main`` does for its one-shot process: run the CLI with tests/helpers/
    in_process.py instead)."""
    yield
    if not gc.isenabled():
        gc.enable()
        pytest.fail("the test left the garbage collector disabled")
