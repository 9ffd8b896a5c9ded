"""The XML writer: a compiled IR to the MSCCL XML text the runtimes load.

* :mod:`.msccl` — the serialisers (streamed text, and an lxml tree as their reference).
* :mod:`.files` — files written to a temporary name and renamed, never half-written.
"""
from __future__ import annotations

from ccxml.writer.files import write_atomic
from ccxml.writer.msccl import gpu_element, save_xml, tb_element, to_element, to_xml, xml_parts

__all__ = ["gpu_element", "save_xml", "tb_element", "to_element", "to_xml", "write_atomic", "xml_parts"]
