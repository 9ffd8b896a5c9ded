"""The ``msccl-exec``, ``msccl-rccl`` and ``msccl-legacy`` backends of ``ccxml export``
(:mod:`ccxml.export`): a compiled algorithm as the MSCCL XML its runtime profile loads, the text
``ccxml generate --target PROFILE`` writes."""
from __future__ import annotations

from ccxml.ir.nodes import Algo
from ccxml.writer.msccl import xml_parts


def export(algo: Algo, out: str, *, profile: str, **_) -> list[tuple[str, object]]:
    """``[(out, the XML text in parts)]`` for ``algo`` compiled for ``profile``."""
    return [(out, xml_parts(algo, profile))]
