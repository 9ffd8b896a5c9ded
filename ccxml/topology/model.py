"""Cluster topology: how ranks are grouped into servers, and what each kind of link costs.

A :class:`Topology` names the grouping of ranks and the α-β-γ (Hockney) parameters of each link
level, for the hierarchical generators and the cost simulator:

* **grouping** — uniform (``servers × ranks_per_server``) or asymmetric ``groups``
  (``[2, 3]`` = ranks {0, 1} and {2, 3, 4}; groups are contiguous rank ranges in order). With no
  grouping the topology is *flat*: one server holding however many ranks the schedule has.
* **levels** — ``intra`` (both ends in the same group) and ``inter`` (different groups), each a
  :class:`LinkLevel` with ``alpha`` (s per transfer), ``beta`` (s per byte) and ``gamma`` (s per byte
  reduced). ``inter`` defaults to ``intra``.

Sources: the Python API (:meth:`Topology.flat`, :meth:`Topology.uniform`, :meth:`Topology.from_groups`,
:meth:`Topology.from_dict`), a JSON or TOML file (:func:`load_topology`), and the extra ``<algo>``
attributes a generated file carries (:meth:`Topology.to_attrs` / :meth:`Topology.from_attrs`; the
runtimes skip unknown attributes, msccl-runtime.md §2.13). File format (JSON keys are the same)::

    servers = 2                # or: groups = [2, 3]   or: groups = "4x8"
    ranks_per_server = 8
    [intra]                    # alpha in s, beta and gamma in s/byte
    alpha = 1e-6
    beta = 5e-12
    gamma = 1e-12
    [inter]
    alpha = 5e-6
    beta = 4e-11

Top-level ``alpha``/``beta``/``gamma`` are shorthand for an ``intra`` level. An optional ``ranks``
must equal the sum of the group sizes. Every error is a :class:`TopologyError` with one line.
"""
from __future__ import annotations

import json
import math
import os
import tomllib
from typing import Any, Iterable

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from ccxml.vocab.errors import TopologyError

INTRA = "intra"
INTER = "inter"
LEVELS = (INTRA, INTER)

#: names of the ``<algo>`` attributes :meth:`Topology.to_attrs` writes
ATTR_GROUPS = "topology"
ATTR_LINKS = "topology_links"


class LinkLevel(BaseModel):
    """α-β-γ parameters of one link level: a transfer of b bytes costs ``alpha + b·beta``, a
    reduction of b bytes costs ``b·gamma``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    alpha: float = 0.0
    beta: float = 0.0
    gamma: float = 0.0

    @field_validator("alpha", "beta", "gamma")
    @classmethod
    def _non_negative(cls, v: float, info) -> float:
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"must be a finite number >= 0, got {v!r}")
        return float(v)

    def transfer(self, nbytes: float) -> float:
        """Seconds to move ``nbytes`` over one link of this level."""
        return self.alpha + nbytes * self.beta

    def reduce(self, nbytes: float) -> float:
        """Seconds to reduce ``nbytes`` (one operand folded into another)."""
        return nbytes * self.gamma

    def encode(self) -> str:
        return ",".join(repr(x) for x in (self.alpha, self.beta, self.gamma))


class Topology(BaseModel):
    """Rank grouping plus per-level link costs. Immutable; build with the class methods."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    groups: tuple[int, ...] | None = None
    intra: LinkLevel = LinkLevel()
    inter: LinkLevel | None = None

    # ---- validation of the raw input ----------------------------------------------------
    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        d = dict(data)
        servers = d.pop("servers", None)
        rps = d.pop("ranks_per_server", None)
        ranks = d.pop("ranks", None)
        if servers is not None or rps is not None:
            if d.get("groups") is not None:
                raise ValueError("give either groups or servers/ranks_per_server, not both")
            if servers is None or rps is None:
                raise ValueError("servers and ranks_per_server must be given together")
            s, m = _positive_int(servers, "servers"), _positive_int(rps, "ranks_per_server")
            d["groups"] = (m,) * s
        elif isinstance(d.get("groups"), str):
            d["groups"] = parse_groups(d["groups"])
        flat = {k: d.pop(k) for k in ("alpha", "beta", "gamma") if k in d}
        if flat:
            if "intra" in d:
                raise ValueError("give link parameters either at top level or under [intra], not both")
            d["intra"] = flat
        if ranks is not None:
            total = sum(d["groups"]) if d.get("groups") is not None else None
            p = _positive_int(ranks, "ranks")
            if total is not None and total != p:
                raise ValueError(f"group sizes {_fmt_sizes(d['groups'])} add up to {total}, not ranks={p}")
        return d

    @field_validator("groups", mode="before")
    @classmethod
    def _check_groups(cls, v: Any) -> Any:
        if v is None:
            return v
        if isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
            raise ValueError(f"must be a list of sizes, got {v!r}")
        sizes = list(v)
        if not sizes:
            raise ValueError("must name at least one group")
        out = []
        for i, m in enumerate(sizes):
            if isinstance(m, bool) or not isinstance(m, int):
                raise ValueError(f"group {i} size must be an integer, got {m!r}")
            if m < 1:
                raise ValueError(f"group {i} has size {m}; every group needs at least one rank")
            out.append(m)
        return tuple(out)

    # ---- constructors -------------------------------------------------------------------
    @classmethod
    def flat(cls, alpha: float = 0.0, beta: float = 0.0, gamma: float = 0.0) -> "Topology":
        """One level for every link, any number of ranks."""
        return cls.from_dict({"alpha": alpha, "beta": beta, "gamma": gamma})

    @classmethod
    def uniform(cls, servers: int, ranks_per_server: int, intra: LinkLevel | dict | None = None,
                inter: LinkLevel | dict | None = None) -> "Topology":
        """``servers`` groups of ``ranks_per_server`` consecutive ranks."""
        return cls.from_dict(_drop_none({"servers": servers, "ranks_per_server": ranks_per_server,
                                         "intra": intra, "inter": inter}))

    @classmethod
    def from_groups(cls, sizes: Iterable[int] | str, intra: LinkLevel | dict | None = None,
                    inter: LinkLevel | dict | None = None) -> "Topology":
        """Groups of the given sizes, in rank order (``[2, 3]`` = {0, 1} and {2, 3, 4})."""
        return cls.from_dict(_drop_none({"groups": sizes, "intra": intra, "inter": inter}))

    @classmethod
    def from_dict(cls, data: dict) -> "Topology":
        """Build from a dict (the file format); raise :class:`TopologyError` with one line."""
        if not isinstance(data, dict):
            raise TopologyError(f"a topology must be a table/object, got {type(data).__name__}")
        data = {k: (v.model_dump() if isinstance(v, LinkLevel) else v) for k, v in data.items()}
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            raise TopologyError(_one_line(e)) from None

    # ---- queries ------------------------------------------------------------------------
    @property
    def is_flat(self) -> bool:
        return self.groups is None

    @property
    def nranks(self) -> int | None:
        """Total ranks, or None for a flat topology (fits any rank count)."""
        return None if self.groups is None else sum(self.groups)

    @property
    def is_uniform(self) -> bool:
        return self.groups is None or len(set(self.groups)) == 1

    @property
    def servers(self) -> int:
        return 1 if self.groups is None else len(self.groups)

    @property
    def ranks_per_server(self) -> int | None:
        """Ranks per server for a uniform grouping, None for unequal groups or a flat topology."""
        if self.groups is None or len(set(self.groups)) != 1:
            return None
        return self.groups[0]

    @property
    def inter_level(self) -> LinkLevel:
        return self.inter if self.inter is not None else self.intra

    def check_ranks(self, p: int) -> None:
        """Raise :class:`TopologyError` unless the topology fits ``p`` ranks."""
        if self.groups is not None and sum(self.groups) != p:
            raise TopologyError(f"topology groups {_fmt_sizes(self.groups)} add up to "
                                f"{sum(self.groups)} ranks, but the schedule has {p}")

    def group_starts(self) -> list[int]:
        starts, acc = [], 0
        for m in self.groups or ():
            starts.append(acc)
            acc += m
        return starts

    def group_ranks(self, p: int | None = None) -> list[list[int]]:
        """The ranks of each group (a flat topology needs ``p``: one group of all ranks)."""
        if self.groups is None:
            if p is None:
                raise TopologyError("a flat topology needs the rank count")
            return [list(range(p))]
        return [list(range(s, s + m)) for s, m in zip(self.group_starts(), self.groups)]

    def group_of(self, rank: int) -> int:
        """Index of the group holding ``rank`` (0 for a flat topology)."""
        if self.groups is None:
            return 0
        acc = 0
        for i, m in enumerate(self.groups):
            acc += m
            if rank < acc:
                return i
        raise TopologyError(f"rank {rank} is outside the topology's {acc} ranks")

    def level(self, a: int, b: int) -> str:
        """``"intra"`` if ranks a and b are in the same group, else ``"inter"``."""
        return INTRA if self.group_of(a) == self.group_of(b) else INTER

    def link(self, a: int, b: int) -> LinkLevel:
        """Parameters of the directed link a → b."""
        return self.intra if self.level(a, b) == INTRA else self.inter_level

    def params(self, level: str) -> LinkLevel:
        if level == INTRA:
            return self.intra
        if level == INTER:
            return self.inter_level
        raise TopologyError(f"unknown link level {level!r}; use {' or '.join(LEVELS)}")

    def describe(self) -> str:
        """One line for people, e.g. ``2x8 (intra a=1e-06 b=5e-12 g=0, inter ...)``."""
        shape = "flat" if self.groups is None else encode_groups(self.groups)
        lv = [f"intra a={self.intra.alpha:g} b={self.intra.beta:g} g={self.intra.gamma:g}"]
        if self.inter is not None:
            i = self.inter
            lv.append(f"inter a={i.alpha:g} b={i.beta:g} g={i.gamma:g}")
        return f"{shape} ({', '.join(lv)})"

    def to_dict(self) -> dict:
        """The file format (JSON-serialisable); ``from_dict(to_dict())`` gives an equal topology."""
        d: dict[str, Any] = {}
        if self.groups is not None:
            d["groups"] = list(self.groups)
        d["intra"] = self.intra.model_dump()
        if self.inter is not None:
            d["inter"] = self.inter.model_dump()
        return d

    # ---- XML attributes -----------------------------------------------------------------
    def to_attrs(self) -> dict[str, str]:
        """Extra ``<algo>`` attributes recording this topology (two, to respect the 16-slot limit).

        ``topology="2x8"`` (or ``"2,3"``, ``"3x8,4"``, ``"flat"``) and
        ``topology_links="intra:α,β,γ;inter:α,β,γ"`` (floats in shortest round-trip form).
        """
        links = f"{INTRA}:{self.intra.encode()}"
        if self.inter is not None:
            links += f";{INTER}:{self.inter.encode()}"
        return {ATTR_GROUPS: "flat" if self.groups is None else encode_groups(self.groups),
                ATTR_LINKS: links}

    @classmethod
    def from_attrs(cls, attrs: dict[str, str]) -> "Topology | None":
        """Inverse of :meth:`to_attrs`: None when ``attrs`` records no topology."""
        shape = attrs.get(ATTR_GROUPS)
        links = attrs.get(ATTR_LINKS)
        if shape is None and links is None:
            return None
        data: dict[str, Any] = {}
        if shape is not None and shape.strip() != "flat":
            data["groups"] = parse_groups(shape)
        for part in (links or "").split(";"):
            if not part.strip():
                continue
            name, sep, values = part.partition(":")
            name = name.strip()
            if not sep or name not in LEVELS:
                raise TopologyError(f"{ATTR_LINKS}: expected 'intra:a,b,g;inter:a,b,g', got {links!r}")
            nums = values.split(",")
            if len(nums) != 3:
                raise TopologyError(f"{ATTR_LINKS}: level {name} needs alpha,beta,gamma, got {values!r}")
            try:
                data[name] = dict(zip(("alpha", "beta", "gamma"), (float(x) for x in nums)))
            except ValueError:
                raise TopologyError(f"{ATTR_LINKS}: level {name} has a non-number in {values!r}") from None
        return cls.from_dict(data)


# ---- helpers ------------------------------------------------------------------------------

def parse_groups(text: str) -> tuple[int, ...]:
    """Parse ``"2,3"``, ``"4x8"`` (4 groups of 8) or mixed ``"3x8,4"`` into group sizes."""
    sizes: list[int] = []
    items = [x.strip() for x in str(text).split(",")]
    if not items or any(not x for x in items):
        raise TopologyError(f"groups {text!r}: expected sizes like '2,3' or '4x8'")
    for item in items:
        count, sep, size = item.lower().partition("x")
        try:
            if sep:
                k, m = int(count), int(size)
                if k < 1:
                    raise TopologyError(f"groups {text!r}: repeat count {k} must be >= 1")
                sizes.extend([m] * k)
            else:
                sizes.append(int(item))
        except ValueError:
            raise TopologyError(f"groups {text!r}: {item!r} is not a size or 'COUNTxSIZE'") from None
    for i, m in enumerate(sizes):
        if m < 1:
            raise TopologyError(f"groups {text!r}: group {i} has size {m}; every group needs "
                                f"at least one rank")
    return tuple(sizes)


def encode_groups(sizes: Iterable[int]) -> str:
    """Compact run-length form: ``(8, 8)`` → ``"2x8"``, ``(2, 3)`` → ``"2,3"``."""
    runs: list[list[int]] = []
    for m in sizes:
        if runs and runs[-1][1] == m:
            runs[-1][0] += 1
        else:
            runs.append([1, m])
    return ",".join(f"{k}x{m}" if k > 1 else f"{m}" for k, m in runs)


def load_topology(path: str | os.PathLike) -> Topology:
    """Read a topology from a ``.json`` or ``.toml`` file (other suffixes: JSON, then TOML)."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise TopologyError(f"cannot read topology {path}: {e.strerror or e}") from None
    suffix = os.path.splitext(path)[1].lower()
    data = None
    errors = []
    kinds = ["toml"] if suffix == ".toml" else ["json"] if suffix == ".json" else ["json", "toml"]
    for kind in kinds:
        try:
            text = raw.decode("utf-8")
            data = json.loads(text) if kind == "json" else tomllib.loads(text)
            break
        except (UnicodeDecodeError, json.JSONDecodeError, tomllib.TOMLDecodeError) as e:
            errors.append(f"{kind}: {str(e).splitlines()[0]}")
    if data is None:
        raise TopologyError(f"topology {path} is not valid {' or '.join(kinds).upper()} ({'; '.join(errors)})")
    try:
        return Topology.from_dict(data)
    except TopologyError as e:
        raise TopologyError(f"topology {path}: {e}") from None


def _positive_int(v: Any, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an integer, got {v!r}")
    if v < 1:
        raise ValueError(f"{name} must be >= 1, got {v}")
    return v


def _fmt_sizes(sizes) -> str:
    return "[" + ", ".join(str(m) for m in sizes) + "]"


def _drop_none(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}


def _one_line(e: ValidationError) -> str:
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err.get("loc", ()) if x != "__root__")
    msg = str(err.get("msg", "invalid topology"))
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix):]
    if err.get("type") == "extra_forbidden":
        msg = "unknown key"
    return f"{loc}: {msg}" if loc else msg
