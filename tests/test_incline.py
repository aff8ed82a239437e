"""Block on a 30 degree incline with Coulomb friction (reference-data.md s.4),
gravity rotated so the floor stays grid-aligned.  mu = 0.2 and 0.4 slide:
x(t) = 0.5 g (sin 30 - mu cos 30) t^2, x(1 s) = 1.603 m, pass within 2 %.
The sticking case is test_static_friction.py.
Energy budget (history.csv): the energy dissipated equals the friction's
work mu M g cos(30) x (x from the potential energy's drop) within 2 % from
0.5 s on, is never negative, and the walls (which do not move) do no work.
"""
import numpy as np
import mpmtest as T


def com_x(f):
    return (f["position"][:, 0] * f["mass"]).sum() / f["mass"].sum()


g, th = 9.81, np.radians(30.0)
c = T.Checks("block on an incline")
for mu, ranks, ramp in ((0.2, 2, []), (0.4, 1, [])):  # both slide: a = 3.206 and 1.507 m/s^2
    out = T.outdir("incline_mu%.3f" % mu)
    T.run_deck("verification/incline.yaml", ranks, out, "-bc_ylo_friction", mu, *ramp)
    frames = [T.mpmio.read_frame(f) for f in T.mpmio.frame_files(out)]
    x0 = com_x(frames[0])
    a = g * (np.sin(th) - mu * np.cos(th))
    for f in frames[1:]:
        # the first ~0.1 s carry the block's elastic settling (about 1 mm)
        d = com_x(f) - x0
        c.close("mu=%.3f t=%.2f displacement [m]" % (mu, f["t"]), d, 0.5 * a * f["t"] ** 2, rtol=0.02 if f["t"] >= 0.5 else 0.05)
    h = T.mpmio.history(out)
    M = h["mass"][0]
    x = -(h["potential_energy"] - h["potential_energy"][0]) / (M * g * np.sin(th))
    late = h["t"] >= 0.5
    ratio = h["dissipated_energy"][late] / (mu * M * g * np.cos(th) * x[late])
    c.within("mu=%.3f energy budget: dissipated / (mu M g cos x), t >= 0.5 s, worst" % mu, float(np.abs(ratio - 1).max()), 0.0, 0.02)
    c.true("mu=%.3f energy budget: dissipation never negative" % mu, (h["dissipated_energy"] >= -1e-9 * h["kinetic_energy"].max()).all(), str(h["dissipated_energy"].min()))
    c.true("mu=%.3f energy budget: the walls do no work" % mu, np.abs(h["work_objects"]).max() == 0.0)
c.done()
