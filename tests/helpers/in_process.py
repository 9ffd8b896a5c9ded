"""Run the ``ccxml`` command line in-process with click's ``CliRunner``.

``ccxml.cli.app.cli`` run as a program formats bad input as one ``ccxml: ...`` line and exit
code 2 itself, so what a user sees is tested without starting a process. The process-wide
settings of :func:`ccxml.cli.app.main` (garbage collector off, malloc that never returns memory)
would outlive the test: the few end-to-end runs of ``python -m ccxml`` use a subprocess.
"""
from __future__ import annotations

from click.testing import CliRunner

from ccxml.cli.app import cli


def ccxml(*args, input: str | None = None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``ccxml ARGS``; an unexpected exception propagates."""
    result = CliRunner().invoke(cli, [str(a) for a in args], input=input, prog_name="ccxml",
                                catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr
