"""What a compiler pass is: one frozen dataclass per pass module (after xDSL's ``ModulePass``,
``xdsl/passes.py`` in github.com/xdslproject/xdsl).

A pass has a ``name`` (a class variable), its options as dataclass fields with defaults,
``applies(profile)`` (whether the default pipeline of a target runs it), ``run(algo, profile)``
(transform the IR in place), a docstring that states what it guarantees and ``check(algo,
profile)``, which verifies that guarantee on the IR the pass left and returns the first broken
part as one line (None when it holds). ``check`` walks the whole schedule, so compiling never calls
it: the tests do, after every pass, through the pipeline's hook.

A pass is written as text ``name`` or ``name{option=value option=value}`` (:meth:`Pass.spec`,
:meth:`Pass.from_options`), the syntax of xDSL's pass pipelines; values are ``true``/``false``,
integers or words. :mod:`ccxml.passes.registry` lists the passes and reads whole pipelines.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, ClassVar, Iterator, Mapping

from ccxml.ir.nodes import Algo
from ccxml.ir.printer import StepNames
from ccxml.passes import guarantees as g
from ccxml.vocab.errors import CcxmlError
from ccxml.vocab.wire import Profile


class PipelineError(CcxmlError, ValueError):
    """Pipeline text that names an unknown pass or option, or gives a value of the wrong type."""


#: option types a pass may declare, by the name its annotation spells, and how text becomes one
_WORDS = {"true": True, "false": False}


def _as_bool(text: str) -> bool:
    if text not in _WORDS:
        raise ValueError("true or false")
    return _WORDS[text]


def _as_int(text: str) -> int:
    try:
        return int(text, 10)
    except ValueError:
        raise ValueError("an integer") from None


OPTION_TYPES: dict[str, Callable[[str], object]] = {"bool": _as_bool, "int": _as_int, "str": str}


def format_value(value: object) -> str:
    """An option value as pipeline text (``true``, ``3``, ``word``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class Pass:
    """A compiler pass. Subclasses are frozen dataclasses that set ``name``, declare their
    options as fields (``bool``, ``int`` or ``str``, each with a default), state their guarantee in
    their docstring and implement :meth:`run` and :meth:`guarantees` (or :meth:`check`)."""

    name: ClassVar[str] = ""

    def applies(self, profile: Profile) -> bool:
        """Whether the default pipeline of ``profile`` runs this pass (every target's, here)."""
        return True

    def run(self, algo: Algo, profile: Profile) -> None:
        """Transform ``algo`` in place for ``profile``."""
        raise NotImplementedError

    def guarantees(self, algo: Algo, names: StepNames,
                   profile: Profile) -> tuple[Iterator[str], ...]:
        """The checks of :mod:`ccxml.passes.guarantees` that make up this pass's guarantee
        (besides :func:`~ccxml.passes.guarantees.placed`, which every pass keeps)."""
        return ()

    def check(self, algo: Algo, profile: Profile) -> str | None:
        """The first part of this pass's guarantee that ``algo`` breaks, as one line, or None."""
        names = StepNames(algo)
        return g.first_problem(g.placed(algo, names), *self.guarantees(algo, names, profile))

    # ---- options as text ------------------------------------------------------------------
    @classmethod
    def options(cls) -> dict[str, dataclasses.Field]:
        """The pass's options: name -> dataclass field."""
        return {f.name: f for f in dataclasses.fields(cls)}

    @classmethod
    def from_options(cls, text_options: Mapping[str, str]) -> "Pass":
        """The pass with ``text_options`` (option -> value as text) set, the others default;
        PipelineError names an unknown option or a value that is not of the option's type."""
        fields = cls.options()
        values: dict[str, object] = {}
        for key, text in text_options.items():
            field = fields.get(key)
            if field is None:
                known = ", ".join(fields) or "none"
                raise PipelineError(f"pass {cls.name!r} has no option {key!r} (options: {known})")
            kind = field.type if isinstance(field.type, str) else field.type.__name__
            convert = OPTION_TYPES.get(kind, str)
            try:
                values[key] = convert(text)
            except ValueError as e:
                raise PipelineError(f"{cls.name}{{{key}={text}}}: {key} takes {e}") from None
        return cls(**values)

    def spec(self) -> str:
        """This pass as pipeline text: its name, and the options that differ from their default
        in braces (``fusion{merge_rcs=false}``)."""
        changed = [f"{f.name}={format_value(getattr(self, f.name))}"
                   for f in dataclasses.fields(self) if getattr(self, f.name) != f.default]
        return self.name + ("{" + " ".join(changed) + "}" if changed else "")


Hook = Callable[[Pass, Algo], object]
