"""Block on a 30 degree incline with Coulomb friction (reference-data.md s.4),
gravity rotated so the floor stays grid-aligned.  mu = 0.2 and 0.4 slide:
x(t) = 0.5 g (sin 30 - mu cos 30) t^2, x(1 s) = 1.603 m, pass within 2 %.
The sticking case is test_static_friction.py.
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
c.done()
