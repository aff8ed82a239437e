"""Block on a 30 degree incline with Coulomb friction (reference-data.md s.4),
gravity rotated so the floor stays grid-aligned.  mu = 0.2 slides:
x(t) = 0.5 g (sin 30 - mu cos 30) t^2, x(1 s) = 1.603 m, pass within 2 %.
mu = tan 30 + 0.02 sticks: movement under one cell."""
import numpy as np
import mpmtest as T


def com_x(f):
    return (f["position"][:, 0] * f["mass"]).sum() / f["mass"].sum()


g, th = 9.81, np.radians(30.0)
c = T.Checks("block on an incline")
for mu, ranks in ((0.2, 2), (np.tan(th) + 0.02, 1)):
    out = T.outdir("incline_mu%.3f" % mu)
    T.run_deck("verification/incline.yaml", ranks, out, "-bc_ylo_friction", mu)
    frames = [T.mpmio.read_frame(f) for f in T.mpmio.frame_files(out)]
    x0 = com_x(frames[0])
    a = g * (np.sin(th) - mu * np.cos(th))
    for f in frames[1:]:
        d = com_x(f) - x0
        if a > 0:
            c.close("mu=%.3f t=%.2f displacement [m]" % (mu, f["t"]), d, 0.5 * a * f["t"] ** 2, rtol=0.02)
        else:
            c.within("mu=%.3f t=%.2f displacement / dx (sticks)" % (mu, f["t"]), abs(d) / 0.02, 0.0, 1.0)
c.done()
