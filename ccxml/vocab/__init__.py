"""The vocabulary every layer speaks, at the bottom of the layers (it imports nothing above it).

* :mod:`.wire` — the MSCCL XML wire format: step types, buffers, protocols, collectives, the
  runtimes' limits and target profiles.
* :mod:`.collectives` — buffer sizes, in-place aliasing and the postcondition of each collective.
* :mod:`.errors` — every error class ccxml raises.
* :mod:`.findings` — the one-line findings the loader and the interpreter report.
* :mod:`.sizes` — message sizes as users write them (``8M``) and size sweeps.
"""
