from ccxml import Coll, Program

p, s = 8, 3                                        # 8 ranks, ring r -> r+3
prog = Program("stride_allgather", Coll.ALLGATHER, p, nchunksperloop=p)
for r in range(p):
    prog.input(r, 0).copy(prog.output(r, r))       # own block
for k in range(p - 1):                             # step k: rank r forwards block r-k*s
    for r in range(p):
        b = (r - k * s) % p
        prog.output(r, b).copy(prog.output((r + s) % p, b))
open("out/stride.xml", "w").write(prog.to_xml("exec"))
