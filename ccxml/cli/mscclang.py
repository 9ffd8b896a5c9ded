"""``ccxml mscclang SCRIPT.py [ARGS...]``: an msccl-tools (MSCCLang) script, compiled by ccxml."""
from __future__ import annotations

import os
import sys

import click

from ccxml.cli.options import OUTPUT, SIZE, cannot_write
from ccxml.vocab.wire import PROFILES


def _fail(message: str):
    raise click.ClickException(message)


def output_paths(output: str | None, outputs) -> list[str]:
    """Where each program's XML goes: ``-o PATH`` (a second program: PATH-2.xml, ...), else
    out/<program>_<ranks>.xml (a repeated name numbered the same way). A device, FIFO or
    /dev/stdout gets every program, in order."""
    from ccxml.vocab.files import is_stream
    if output and is_stream(output):
        return [output] * len(outputs)
    paths: list[str] = []
    for n, out in enumerate(outputs):
        base = output or os.path.join("out", f"{out.name}_{out.ngpus}.xml")
        if output and n:
            stem, ext = os.path.splitext(output)
            base = f"{stem}-{n + 1}{ext or '.xml'}"
        path, k = base, 1
        while path in paths:
            k += 1
            stem, ext = os.path.splitext(base)
            path = f"{stem}-{k}{ext}"
        paths.append(path)
    return paths


@click.command("mscclang", context_settings={"ignore_unknown_options": True,
                                              "allow_interspersed_args": False})
@click.option("--target", type=click.Choice(list(PROFILES)), default="exec", show_default=True,
              help="Runtime whose rules the files must meet.")
@click.option("--min-bytes", type=SIZE, default=0, show_default=True,
              help="Smallest message size the runtime picks the files for (e.g. 64K).")
@click.option("--max-bytes", type=SIZE, default=0, show_default=True,
              help="Largest message size the runtime picks the files for (e.g. 1M); 0 = unlimited. "
                   "It also bounds message length (ccxml generate --help says how).")
@click.option("-o", "--output", type=OUTPUT, default=None,
              help="Output path, or - for stdout (default out/<program>_<ranks>.xml; a second "
                   "program of the script: PATH-2.xml, ...).")
@click.option("--verify", "do_verify", is_flag=True,
              help="Verify each written file with the interpreter (Check() already does).")
@click.argument("script", type=click.Path(dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def mscclang(target, min_bytes, max_bytes, output, do_verify, script, args):
    """Run an msccl-tools MSCCLang SCRIPT (unchanged) and write the XML of each XML() it calls.

    ccxml's options come before SCRIPT; everything after it goes to the script. For this run
    msccl.language, msccl.language.collectives and msccl.topologies are ccxml's: each program
    compiles through ccxml's passes for --target, and Check() proves it with the interpreter.
    """
    from ccxml.mscclang.program import Session
    from ccxml.mscclang.runner import run_script
    from ccxml.vocab.errors import CcxmlError
    if min_bytes < 0 or max_bytes < 0 or (max_bytes and max_bytes < min_bytes):
        _fail(f"--min-bytes {min_bytes} / --max-bytes {max_bytes}: need 0 <= min <= max (max 0: unlimited)")
    sess = Session(target=target, min_bytes=min_bytes, max_bytes=max_bytes)
    try:
        status = run_script(script, list(args), sess)
    except CcxmlError as e:
        _fail(str(e))
    if status:
        sys.exit(status)
    if sess.failures:
        name, reason = sess.failures[0]
        more = f" (and {len(sess.failures) - 1} more)" if len(sess.failures) > 1 else ""
        click.echo(f"ccxml: Check() failed: {reason}{more}", err=True)
        sys.exit(1)
    if not sess.outputs:
        _fail(f"{script} produced no XML (it never called XML())")
    from ccxml.vocab.files import names_stdout
    from ccxml.writer.files import write_atomic
    paths = output_paths(output, sess.outputs)
    to_stdout = bool(output) and names_stdout(output)
    for path, out in zip(paths, sess.outputs):
        if path == "-":
            sys.stdout.write(out.text)
        else:
            try:
                write_atomic(path, out.text)
            except OSError as e:
                _fail(cannot_write(path, e))
        click.echo(f"wrote {'stdout' if path == '-' else path}: MSCCLang {out.name} ({out.coll}), "
                   f"{out.ngpus} ranks, {out.tbs} TBs, {out.steps} steps, {out.nchannels} "
                   f"channels, bytes {min_bytes}..{max_bytes or 'unlimited'}, target {target}",
                   err=to_stdout)
    if do_verify:
        from ccxml.interpreter import verify
        for path, out in zip(paths, sess.outputs):
            report = verify(out.text, target=target)
            where = "stdout" if path == "-" else path
            if not report.ok:
                click.echo(f"FAIL {where}: {report.first_reason}", err=True)
                sys.exit(1)
            click.echo(f"PASS {where}", err=to_stdout)
