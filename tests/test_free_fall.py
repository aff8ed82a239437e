"""Free fall of an elastic block: the centre-of-mass velocity is exactly
-g t (symplectic Euler with uniform gravity has no velocity error) and the
height is y0 - g t^2/2 up to the scheme's offset g t dt/2.  Mass and the
horizontal momentum are conserved; the block stays undeformed (no stress)."""
import numpy as np
import mpmtest as T

out = T.outdir("free_fall")
T.run_deck("verification/free_fall.yaml", 2, out)
h = T.mpmio.history(out)
s = T.mpmio.summary(out)
g, t = 9.81, h["t"]
vy = h["momentum_y"] / h["mass"]
frames = [T.mpmio.read_frame(f) for f in T.mpmio.frame_files(out)]
y0 = (frames[0]["position"][:, 1] * frames[0]["mass"]).sum() / frames[0]["mass"].sum()

c = T.Checks("free fall, 2 ranks, %d history rows" % len(t))
c.close("max |v_com + g t| / (g t_end)", np.abs(vy + g * t).max() / (g * t[-1]), 0.0, atol=1e-12)
c.close("total mass drift (relative)", np.abs(h["mass"] - h["mass"][0]).max() / h["mass"][0], 0.0, atol=1e-14)
c.close("horizontal momentum / (m g t_end)", np.abs(h["momentum_x"]).max() / (h["mass"][0] * g * t[-1]), 0.0, atol=1e-12)
for f in frames[1:]:
    y = (f["position"][:, 1] * f["mass"]).sum() / f["mass"].sum()
    analytic = y0 - 0.5 * g * f["t"] ** 2
    # symplectic Euler falls further by at most g t dt_max / 2
    c.within("t=%.2f: (y_analytic - y) / (g t dt_max / 2)" % f["t"], (analytic - y) / (0.5 * g * f["t"] * s["dt_max"]), 0.0, 1.0 + 1e-9)
    c.close("t=%.2f: max |pressure| [Pa] (no deformation)" % f["t"], np.abs(f["pressure"]).max(), 0.0, atol=1e-6)
c.done()
