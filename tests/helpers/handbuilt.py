"""Hand-built MSCCL XML for the tests: a few valid schedules and the pieces to break them."""
from __future__ import annotations

STEP = ('<step s="{s}" type="{t}" srcbuf="{sb}" srcoff="{so}" dstbuf="{db}" dstoff="{do}" cnt="{c}" '
        'depid="{d}" deps="{ds}" hasdep="{h}"/>')


def step(s, t, sb="i", so=0, db="o", do=0, c=1, d=-1, ds=-1, h=0):
    return STEP.format(s=s, t=t, sb=sb, so=so, db=db, do=do, c=c, d=d, ds=ds, h=h)


def tb(id, send, recv, chan, *steps):
    steps = [st if st.startswith("<") else st for st in steps]
    body = "\n".join("      " + step(i, *st) if isinstance(st, tuple) else "      " + st
                     for i, st in enumerate(steps))
    return f'    <tb id="{id}" send="{send}" recv="{recv}" chan="{chan}">\n{body}\n    </tb>'


def tbs(id, send, recv, chan, *steps):
    """A TB whose steps are tuples (type, srcbuf, srcoff, dstbuf, dstoff, cnt, depid, deps, hasdep)."""
    lines = [step(i, *st) for i, st in enumerate(steps)]
    body = "\n".join("      " + ln for ln in lines)
    return f'    <tb id="{id}" send="{send}" recv="{recv}" chan="{chan}">\n{body}\n    </tb>'


def algo(coll, ngpus, nchunks, gpus, *, proto="Simple", inplace=0, outofplace=1, max_bytes=0,
         root=None):
    extra = f' root="{root}"' if root is not None else ""
    head = (f'<algo name="t" proto="{proto}" nchannels="2" nchunksperloop="{nchunks}" ngpus="{ngpus}" '
            f'coll="{coll}" inplace="{inplace}" outofplace="{outofplace}" minBytes="0" '
            f'maxBytes="{max_bytes}"{extra}>')
    body = []
    for gid, (i, o, s, blocks) in gpus.items():
        body.append(f'  <gpu id="{gid}" i_chunks="{i}" o_chunks="{o}" s_chunks="{s}">')
        body.extend(blocks)
        body.append("  </gpu>")
    return "\n".join([head, *body, "</algo>"]) + "\n"


def codes(report):
    return {f.code for f in report.findings if f.severity == "error"}


# ---- valid schedules ------------------------------------------------------------------------

def ring_allreduce(p: int) -> str:
    """In-place ring allreduce, one TB per GPU: s, rrcs x (p-1), rcs x (p-2), r."""
    gpus = {}
    for r in range(p):
        blk = lambda k: (r - 1 - k) % p   # noqa: E731
        steps = [("s", "i", blk(0), "i", blk(0), 1, -1, -1, 0)]
        for k in range(1, p):
            steps.append(("rrcs", "i", blk(k), "i", blk(k), 1, -1, -1, 0))
        for m in range(1, p):
            b = (r - m) % p
            steps.append(("rcs" if m < p - 1 else "r", "i", b, "i", b, 1, -1, -1, 0))
        gpus[r] = (p, p, 0, [tbs(0, (r + 1) % p, (r - 1) % p, 0, *steps)])
    return algo("allreduce", p, p, gpus, inplace=1, outofplace=0)


def ring_allgather(p: int) -> str:
    gpus = {}
    for r in range(p):
        steps = [("cpy", "i", 0, "o", r, 1, -1, -1, 0), ("s", "o", r, "o", r, 1, -1, -1, 0)]
        for m in range(1, p):
            b = (r - m) % p
            steps.append(("rcs" if m < p - 1 else "r", "o", b, "o", b, 1, -1, -1, 0))
        gpus[r] = (1, p, 0, [tbs(0, (r + 1) % p, (r - 1) % p, 0, *steps)])
    return algo("allgather", p, p, gpus)


def direct_alltoall(p: int, per: int = 1, proto="Simple", max_bytes=0, recv_first=False) -> str:
    """Each rank has one TB per peer: send its block then receive the peer's (or the reverse)."""
    gpus = {}
    for r in range(p):
        blocks = [tbs(0, -1, -1, 0, ("cpy", "i", r * per, "o", r * per, per, -1, -1, 0))]
        for n, q in enumerate(x for x in range(p) if x != r):
            sends = [("s", "i", q * per + j, "o", r * per + j, 1, -1, -1, 0) for j in range(per)]
            recvs = [("r", "i", r * per + j, "o", q * per + j, 1, -1, -1, 0) for j in range(per)]
            blocks.append(tbs(n + 1, q, q, 0, *(recvs + sends if recv_first else sends + recvs)))
        gpus[r] = (p * per, p * per, 0, blocks)
    return algo("alltoall", p, p * per, gpus, proto=proto, max_bytes=max_bytes)


def pair_allreduce(rank0_recv: str, rank1_step: str) -> str:
    """A 2-rank in-place AllReduce: rank 0 sends then receives with ``rank0_recv``, rank 1 runs
    ``rank1_step`` (valid as ``("r", "rrcs")``)."""
    g0 = [tbs(0, 1, 1, 0, ("s", "i", 0, "i", 0, 1, -1, -1, 0), (rank0_recv, "i", 0, "i", 0, 1, -1, -1, 0))]
    g1 = [tbs(0, 0, 0, 0, (rank1_step, "i", 0, "i", 0, 1, -1, -1, 0))]
    return algo("allreduce", 2, 1, {0: (1, 1, 0, g0), 1: (1, 1, 0, g1)}, inplace=1, outofplace=0)


def split_allgather(dep: bool = True, hasdep: int = 1, late_release: bool = False) -> str:
    """A 2-rank AllGather with two TBs per rank: TB 1 copies the rank's input into its output
    block (publishing it) and receives the peer's block; TB 0 sends the output block once TB 1
    has copied it (``dep=False`` drops that dependency; ``hasdep=0`` leaves the copy unpublished,
    so that TB 0 waits for ever; ``late_release`` copies twice and publishes only the second
    copy: correct, with a dep-released-late warning)."""
    gpus = {}
    for r in range(2):
        q = 1 - r
        d = (1, 0) if dep else (-1, -1)
        sender = tbs(0, q, -1, 0, ("s", "o", r, "o", r, 1, *d, 0))
        copies = [("cpy", "i", 0, "o", r, 1, -1, -1, 0)] if late_release else []
        copier = tbs(1, -1, q, 0, *copies, ("cpy", "i", 0, "o", r, 1, -1, -1, hasdep),
                     ("r", "o", q, "o", q, 1, -1, -1, 0))
        gpus[r] = (1, 2, 0, [sender, copier])
    return algo("allgather", 2, 2, gpus)
