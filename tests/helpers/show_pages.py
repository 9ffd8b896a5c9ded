"""Small schedules for the tests of ``ccxml show``: dependencies, peers, a TB with no real step,
and text a hostile file could carry (names and buffers that look like markup)."""
from __future__ import annotations

from handbuilt import algo, tbs

#: an ``<algo name>`` that would break out of HTML or SVG if it were not escaped; the runtime's
#: tokenizer (and so ccxml's loader) reads attribute values raw, markup characters and all
HOSTILE_NAME = "</script><script>window.pwned=1</script><img src=x onerror=window.pwned=2> & ]]> <!--"
HOSTILE_BUF = "<b>&amp;"


def small_xml(name: str = HOSTILE_NAME, buf: str = HOSTILE_BUF) -> str:
    """3 ranks, 5 TBs (one of nops only), 6 steps. Rank 1's tb 1 copies after tb 0's first receive
    (a dependency carried by a nop) and tb 0's rcs waits for that copy: so the rcs (1, 0, 1) has one
    dependency, (1, 1, 1), and two peers, the send (0, 0, 1) it takes data from and the receive
    (2, 0, 0) that takes its data."""
    g0 = [tbs(0, 1, -1, 0, ("s", "i", 0, "o", 0, 1, -1, -1, 0), ("s", "i", 1, buf, 1, 1, -1, -1, 0))]
    g1 = [tbs(0, 2, 0, 0, ("r", "i", 0, "o", 0, 1, -1, -1, 1), ("rcs", "i", 1, "o", 1, 1, 1, 0, 0)),
          tbs(1, -1, -1, 0, ("nop", "i", 0, "o", 0, 0, 0, 0, 0), ("cpy", "o", 0, "o", 2, 1, -1, -1, 1)),
          tbs(2, -1, -1, 0, ("nop", "i", 0, "o", 0, 0, -1, -1, 0))]
    g2 = [tbs(0, -1, 1, 0, ("r", "i", 1, "o", 1, 1, -1, -1, 0))]
    text = algo("allreduce", 3, 3, {0: (3, 3, 0, g0), 1: (3, 3, 0, g1), 2: (3, 3, 0, g2)})
    return text.replace('name="t"', f'name="{name}"', 1)


#: (gpu, tb, step) of the rcs above, its dependency and its two peers
RCS, RCS_DEP, RCS_PEERS = (1, 0, 1), (1, 1, 1), ((0, 0, 1), (2, 0, 0))
