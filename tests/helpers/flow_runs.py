"""Driving a :class:`ccxml.simulator.flows.FlowNetwork` in the tests: to the end, on random flows."""
from __future__ import annotations

import random


def drive(net) -> dict:
    """Run ``net`` to the end: token -> arrival time."""
    out = {}
    while True:
        t = net.next_time()
        if t == float("inf"):
            return out
        for tok in net.advance(t):
            out[tok] = t


def random_flows(seed: int):
    """(link capacities, [(start, links, size, token)]): up to 40 flows on 8 links."""
    rnd = random.Random(seed)
    caps = [rnd.choice([1.0, 2.0, 3.0, 5.0, 8.0]) * 10 ** rnd.randint(0, 2) for _ in range(8)]
    flows = []
    for i in range(rnd.randint(5, 40)):
        links = tuple(sorted(rnd.sample(range(8), rnd.randint(1, 4))))
        flows.append((rnd.choice([0.0, 0.5, 1.0, 2.5, rnd.random() * 5]), links,
                      rnd.choice([0.0, 1.0, 10.0, 100.0, rnd.random() * 1000]), i))
    return caps, flows
