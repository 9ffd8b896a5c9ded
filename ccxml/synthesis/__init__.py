"""Schedules derived from the topology graph: packings of spanning trees (:mod:`.forest`).

Between the algorithms (which lay the trees out with the Chunk API) and the topology (routes,
capacities, the exact bound of :mod:`ccxml.topology.flow`). networkx and scipy are imported lazily.
"""
