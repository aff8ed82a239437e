"""Two elastic disks collide and rebound (Sulsky et al. 1994; reference-data.md
s.3), FLIP transfers as in the original.  Pass: total momentum stays zero,
total (kinetic + elastic) energy within 5 %, the disks rebound."""
import numpy as np
import mpmtest as T

out = T.outdir("colliding_disks")
T.run_deck("verification/colliding_disks.yaml", 2, out)
h = T.mpmio.history(out)
E = h["kinetic_energy"] + h["elastic_energy"]
p_scale = h["mass"][0] / 2 * 0.1 * np.sqrt(2)  # momentum of one disk
last = T.mpmio.sorted_by_id(T.mpmio.read_frame(T.mpmio.frame_files(out)[-1]))
disk1 = (last["id"] >> 48) == 1
v1 = (last["velocity"][disk1, :2] * last["mass"][disk1, None]).sum(axis=0) / last["mass"][disk1].sum()

c = T.Checks("colliding disks, 2 ranks, t = %.2f s" % h["t"][-1])
c.close("initial kinetic energy vs 2.513 J/m (lattice disk area)", E[0], 2.513, rtol=0.04)
c.close("max |total momentum| / one disk's momentum", np.abs(np.c_[h["momentum_x"], h["momentum_y"]]).max() / p_scale, 0.0, atol=1e-10)
c.close("min total energy / initial", E.min() / E[0], 1.0, atol=0.05)
c.close("max total energy / initial", E.max() / E[0], 1.0, atol=0.05)
c.true("the disks collided (elastic energy peak > 30 % of E0)", h["elastic_energy"].max() > 0.3 * E[0], "peak %.3f J/m" % h["elastic_energy"].max())
c.true("disk 1 rebounds (velocity along (1,1) reversed)", v1.sum() < -0.1, "v1 = (%.4f, %.4f) m/s" % tuple(v1))
c.done()
