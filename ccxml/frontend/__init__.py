"""The front end: what users and algorithm scripts write against.

* :mod:`.chunk` — the Chunk API (:class:`Program`, :class:`Chunk`): chunks moved between ranks
  become IR steps; :meth:`Program.compile` runs the passes and :meth:`Program.to_xml` the writer.
* :mod:`.algorithm` — what every algorithm script shares: :class:`Options`, up-front parameter
  checks, the Program a builder starts from.
* :mod:`.design` — the framework design's ``Algo``/``GPU``/``TB``/``Step``/``Chunk``, as views
  over the IR that issue through the Chunk API (import it from there: it loads the writer).
"""
from __future__ import annotations

from ccxml.frontend.algorithm import Options, check_ranks, check_root, program
from ccxml.frontend.chunk import Chunk, Program
from ccxml.vocab.errors import AlgorithmError, ChunkError

__all__ = ["AlgorithmError", "Chunk", "ChunkError", "Options", "Program", "check_ranks",
           "check_root", "program"]
