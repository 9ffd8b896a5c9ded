"""``mpiexec -n P ccxml run FILE.xml``: execute a schedule on P MPI processes and time it.

Every rank loads the file and runs its own ``<gpu>`` (:mod:`ccxml.executor`); rank 0 prints an
nccl-tests style table with, beside the schedule's columns, the same for MPI's own collective.
Exit codes: 0 when every size ran (and matched, with ``--check``); 1 when the schedule fails
(a result that differs from MPI's, a hang, a step that cannot run); 2 for unusable input (a
file that cannot be read, a process count that is not the file's ngpus, no mpi4py). Only rank 0
prints, and every rank exits with the same code.
"""
from __future__ import annotations

import os
import sys

import click

from ccxml.executor.data import DTYPES

#: environment variables in which MPI launchers pass the rank (MPICH/hydra, Open MPI, PMIx, Slurm)
RANK_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID")

DTYPE_HELP = ("Element type. Results are compared exactly, except a reducing collective "
              "(allreduce, reducescatter, reduce) on a float type: |x - mpi| <= 2(p-1)p*eps, the "
              "worst case for summing p inputs in [-1, 1] in two different orders.")


def launch_rank() -> int | None:
    """This process's rank as the MPI launcher announced it, before MPI starts (None: not
    started by a launcher)."""
    for name in RANK_VARIABLES:
        v = os.environ.get(name)
        if v is not None and v.strip().isdigit():
            return int(v)
    return None


#: seconds rank 0 waits after printing before MPI_Abort: hydra's mpiexec drops output it has not
#: forwarded yet when the job is aborted (rank 0's one line was lost in 1 of 25 runs without it)
ABORT_GRACE = 0.2


def _finite_timeout(value: float) -> float:
    """--timeout is a finite number of seconds > 0 (nan or inf would disable hang detection)."""
    import math
    if not math.isfinite(value):
        raise click.BadParameter(f"{value!r} is not a finite number of seconds", param_hint="'--timeout'")
    return value


#: ``ccxml run``'s memory rule (docs/limits.md): a rank needs about
#: MEMORY_FACTOR × (its schedule buffers + its input + its output) bytes (CHECK_MEMORY_FACTOR
#: with --check) + MEMORY_BASE; the ranks of one host together must fit in its MemAvailable.
#: Measured (mpiexec -n 2, ring allreduce, 64M and 256M, maximum RSS less the 58 MB of a 1K run):
#: 6.0x the message size, 9.0x with --check; the rule gives 8x and 10x.
MEMORY_FACTOR = 2.0
CHECK_MEMORY_FACTOR = 2.5
MEMORY_BASE = 64 << 20


def memory_estimate(session, nbytes: int, check: bool) -> int:
    """Bytes one rank of ``session`` needs to run at ``nbytes`` (see MEMORY_FACTOR)."""
    from ccxml.executor.data import chunk_elems
    c = session.collective
    ce = chunk_elems(c, nbytes, session.dtype)
    item = session.dtype.itemsize
    held = (session.plan.nchunks + c.input_chunks(session.rank) + c.output_chunks(session.rank)) * ce * item
    return int(held * (CHECK_MEMORY_FACTOR if check else MEMORY_FACTOR)) + MEMORY_BASE


def mem_available() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (None where there is none)."""
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f.read(1 << 16).decode("ascii", "replace").splitlines():
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _memory_error(MPI, session, sizes, check) -> str | None:
    """Why the largest size will not fit in this host's available memory, or None."""
    from ccxml.vocab.sizes import format_size
    avail = mem_available()
    local = MPI.COMM_WORLD.Split_type(MPI.COMM_TYPE_SHARED).Get_size()
    if avail is None:
        return None
    top = max(sizes)
    need = memory_estimate(session, top, check) * local
    if need <= avail:
        return None
    return (f"size {format_size(top)} needs about {need >> 20} MiB on this host ({local} rank(s) x "
            f"{memory_estimate(session, top, check) >> 20} MiB) but {avail >> 20} MiB are available: "
            f"give a smaller size")


class _Stop(Exception):
    """End the command on every rank with ``code``; rank 0 prints ``message``."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


@click.command("run")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--dtype", type=click.Choice(DTYPES), default="float32", show_default=True, help=DTYPE_HELP)
@click.option("--bytes", "nbytes", default=None, help="One message size (nccl-tests' size), e.g. 8M.")
@click.option("-b", "--minbytes", default=None, help="Sweep start (default 1K).")
@click.option("-e", "--maxbytes", default=None, help="Sweep end (default 1M).")
@click.option("-f", "--stepfactor", type=float, default=2.0, show_default=True,
              help="Sweep multiplication factor.")
@click.option("--iters", type=click.IntRange(min=1), default=5, show_default=True,
              help="Timed iterations per size.")
@click.option("--warmup", "-w", type=click.IntRange(min=0), default=1, show_default=True,
              help="Untimed iterations per size before the timed ones.")
@click.option("--check", is_flag=True,
              help="Compare each size's result with MPI's own collective on the same input; exit 1 on "
                   "a mismatch, naming the rank and the output chunk.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
              callback=lambda ctx, param, v: _finite_timeout(v),
              help="Seconds without progress after which a run counts as hung: every rank stops and "
                   "rank 0 says what each blocked thread block waits for.")
@click.option("--inplace/--outofplace", "inplace", default=None,
              help="Call form (default: out-of-place when the file declares it, else in-place).")
@click.option("--root", type=int, default=None, help="Root of a rooted collective (default: the file's root).")
@click.option("--counts", "counts_path", type=click.Path(dir_okay=False), default=None,
              help="alltoallv: CSV matrix of chunk counts M[i][j] sent from rank i to rank j.")
def run(file, dtype, nbytes, minbytes, maxbytes, stepfactor, iters, warmup, check, timeout, inplace,
        root, counts_path):
    """Execute MSCCL XML FILE on MPI processes, one per rank, and time it beside MPI's collective.

    Start it with one process per rank of the file: mpiexec -n P ccxml run FILE [options]
    (a cluster: mpiexec -f HOSTFILE -n P ...). Sizes are nccl-tests' (allreduce: the buffer;
    allgather: the output; reducescatter: the input; alltoall: the total; gather/scatter: the
    root's whole buffer), rounded down to whole chunks of whole elements; the reduction is a sum.
    """
    from ccxml.cli.options import parse_sizes
    sizes = parse_sizes(nbytes, minbytes, maxbytes, stepfactor, default_max=1 << 20)
    from ccxml.executor.mpi import load_mpi
    from ccxml.vocab.errors import ExecutionError
    try:
        MPI = load_mpi()
    except ExecutionError as e:
        raise click.ClickException(str(e)) from None
    try:
        _run(MPI, file, dtype, sizes, iters, warmup, check, timeout, inplace, root, counts_path)
    except _Stop as e:
        if MPI.COMM_WORLD.Get_rank() == 0:
            click.echo(f"ccxml: {e}", err=True)
        _finish(MPI, e.code)


def _finish(MPI, code: int) -> None:
    """End the process in the ways MPI launchers take well, every rank with ``code`` (called
    while the session, which holds the buffers of requests MPI may still own, is alive).

    Success: finalise MPI and leave through the C library's ``exit`` (hydra's mpiexec killed a
    rank in 2 of 15 runs when ranks left through ``os._exit`` after MPI_Finalize, which the
    command line otherwise uses, and in none of 30 through ``exit``). Failure: requests may be
    pending, so MPI cannot be finalised; once rank 0 has printed, it ends the job with
    ``MPI_Abort(code)`` (ranks leaving one by one with a non-zero code made mpiexec kill the
    rest, and return 9 instead of the code, in 2 of 30 runs)."""
    import ctypes
    import time
    sys.stdout.flush()
    sys.stderr.flush()
    world = MPI.COMM_WORLD
    if code == 0:
        MPI.Finalize()
        ctypes.CDLL(None).exit(0)
    world.Barrier()
    if world.Get_rank() == 0:
        time.sleep(ABORT_GRACE)
        # MPICH prints "application called MPI_Abort(...)" on stderr: the report is out already
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        world.Abort(code)
    time.sleep(60)          # until the launcher ends this rank
    os._exit(code)


def _agree(world, error: str | None, code: int) -> None:
    """Raise _Stop on every rank when any rank has ``error`` (rank 0 prints the first)."""
    errors = world.allgather(error)
    bad = [(r, e) for r, e in enumerate(errors) if e]
    if bad:
        r, e = bad[0]
        same = all(x == e for _, x in bad) and len(bad) == len(errors)
        raise _Stop(code, e if same else f"rank {r}: {e}")


def _prepare(MPI, path, inplace, root, counts_path):
    """Load and lower the file on this rank: (schedule, collective, form, prog, unrunnable
    findings). Raises _Stop(2) on every rank when any rank cannot."""
    world = MPI.COMM_WORLD
    err = loaded = None
    try:
        loaded = _load(path, world.Get_size(), MPI.TAG_UB, inplace, root, counts_path)
    except OSError as e:
        err = f"{e.filename or path}: {e.strerror or e}"
    except ValueError as e:                  # LoadError, ExecutionError, CollectiveError, ...
        err = str(e) if path in str(e) else f"{path}: {e}"     # (a gpu id twice: name the file)
    _agree(world, err, 2)
    return loaded


def _load(path, nprocs, max_tag, inplace, root, counts_path):
    from ccxml.executor.plan import lower_for_run
    from ccxml.interpreter import call_forms, collective_for
    from ccxml.loader.reader import load
    from ccxml.vocab.collectives import read_counts
    from ccxml.vocab.errors import ExecutionError
    from ccxml.vocab.files import input_problem
    problem = input_problem(path)           # a device, FIFO, directory or loop says what it is
    if problem:
        raise ExecutionError(problem)
    problem = None if counts_path is None else input_problem(counts_path)
    if problem:
        raise ExecutionError(f"--counts: {problem}")
    schedule = load(path)
    if schedule.ngpus != nprocs:
        raise ExecutionError(f"{path} is for {schedule.ngpus} ranks but this run has {nprocs} process(es): "
                             f"start it with mpiexec -n {schedule.ngpus} ccxml run {path}")
    counts = None
    if counts_path is not None:
        try:
            counts = read_counts(counts_path)
        except ValueError as e:
            raise ExecutionError(f"--counts {counts_path}: {e}") from None
    collective, why_not = collective_for(schedule, root=root, counts=counts)
    if collective is None:
        raise ExecutionError(f"{path}: {why_not.split(';')[0]}; nothing to run it against")
    form = call_forms(schedule, inplace)
    form = form[-1] if inplace is None else form[0]      # out-of-place when declared
    prog, unrunnable = lower_for_run(schedule, collective, form, max_tag)
    return schedule, collective, form, prog, unrunnable


def _run(MPI, path, dtype, sizes, iters, warmup, check, timeout, inplace, root, counts_path) -> None:
    """Run the sizes and end the process (:func:`_finish`); raises _Stop for unusable input."""
    from ccxml.executor.mpi import library_version
    from ccxml.executor.reference import MPI_NAMES
    from ccxml.executor.session import Session
    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    schedule, collective, form, prog, unrunnable = _prepare(MPI, path, inplace, root, counts_path)
    if unrunnable:
        if rank == 0:
            click.echo(f"FAIL {path}: cannot run it: {len(unrunnable)} thread block(s) or step(s) with no valid "
                       "peer, channel or buffer range:", err=True)
            for f in unrunnable[:20]:
                click.echo(f"  {f}", err=True)
        _finish(MPI, 1)
    session = Session(MPI, prog, collective, dtype, timeout)
    _agree(world, _memory_error(MPI, session, sizes, check), 2)     # before any buffer is made
    ref_name = MPI_NAMES[collective.coll]
    out = (lambda *a, **k: None) if rank else click.echo
    out(_header(path, schedule, collective, form, session, iters, warmup, check, ref_name,
                library_version(MPI), world.Get_size()))
    from ccxml.driver import window_warning
    rows = []
    failure = None
    for n in sizes:
        row, failure = session.measure(n, iters, warmup, check)
        if failure:
            break
        rows.append(row)
        out(_format_row(row, session.dtype.name, check))
        if rank == 0:
            sys.stdout.flush()
    if rank == 0:
        if rows:
            avg = sum(r.schedule.busbw for r in rows) / len(rows)
            mavg = sum(r.mpi.busbw for r in rows) / len(rows)
            out(f"# avg busbw: schedule {avg / 1e9:.3f} GB/s, {ref_name} {mavg / 1e9:.3f} GB/s")
        w = window_warning(schedule, [r.nbytes for r in rows])
        if w:
            out(f"# note: {w}")
        if failure:
            _report(path, failure, ref_name, timeout)
    if not failure:
        session.close()
    _finish(MPI, 1 if failure else 0)


def _header(path, schedule, collective, form, session, iters, warmup, check, ref_name, mpi_version, nprocs):
    c = collective
    root = f", root {c.root}" if c.root is not None else ""
    lines = [f"# ccxml run: {path}: {c.coll.value}{root}, {c.ngpus} ranks, nchunksperloop {c.nchunksperloop}, "
             f"{schedule.nsteps} steps, {'in-place' if form else 'out-of-place'}",
             f"# {session.dtype.name}, sum; {iters} timed iteration(s) after {warmup} warm-up; "
             + (f"checked against {ref_name}" + (f" (|diff| <= {session.tol:.3g})" if session.tol else " (exact)")
                if check else "not checked (--check compares with MPI)"),
             f"# MPI: {mpi_version}, {nprocs} processes; times are the slowest rank's mean per iteration",
             "#",
             f"# {'':>12} {'':>12} {'':>8}  {'ccxml schedule':^36}  {ref_name:^26}",
             f"# {'size':>12} {'count':>12} {'type':>8}  {'time':>10} {'algbw':>8} {'busbw':>8} {'#wrong':>7}"
             f"  {'time':>10} {'algbw':>7} {'busbw':>7}",
             f"# {'(B)':>12} {'(elements)':>12} {'':>8}  {'(us)':>10} {'(GB/s)':>8} {'(GB/s)':>8} {'':>7}"
             f"  {'(us)':>10} {'(GB/s)':>7} {'(GB/s)':>7}"]
    return "\n".join(ln.rstrip() for ln in lines)


def _format_row(r, dtype: str, check: bool) -> str:
    wrong = str(r.wrong) if check else "N/A"
    s, m = r.schedule, r.mpi
    return (f"  {r.nbytes:>12} {r.count:>12} {dtype:>8}  {s.time_s * 1e6:>10.1f} {s.algbw / 1e9:>8.3f} "
            f"{s.busbw / 1e9:>8.3f} {wrong:>7}  {m.time_s * 1e6:>10.1f} {m.algbw / 1e9:>7.3f} {m.busbw / 1e9:>7.3f}")


def _report(path, failure, ref_name, timeout) -> None:
    from ccxml.vocab.sizes import format_size
    at = f"{format_size(failure.nbytes)} ({failure.nbytes} B)"
    if failure.kind == "mismatch":
        head = f"FAIL {path} at {at}: the result differs from {ref_name}:"
    elif failure.kind == "hang":
        head = (f"FAIL {path} at {at}: hangs (no progress for {timeout:g} s); what each blocked thread "
                "block waits for:")
    else:
        head = f"FAIL {path} at {at}: cannot run:"
    lines = list(failure.lines) or ["(no thread block is blocked and no message is pending: a rank stopped early)"]
    click.echo(head, err=True)
    for ln in lines[:20]:
        click.echo(f"  {ln}", err=True)
    if len(lines) > 20:
        click.echo(f"  ... {len(lines) - 20} more", err=True)
