"""Axial vibration of a fixed-free elastic bar (Bardenhagen 2002;
reference-data.md s.3): L = 25, E = 100, rho = 1, first-mode initial
velocity.  The period is exactly 10 and the centre-of-mass velocity starts
at 2 v0 / pi.  Pass: period within 1 %, energy drift < 1 % per period (APIC)."""
import numpy as np
import mpmtest as T

out = T.outdir("bar_vibration")
T.run_deck("verification/bar_vibration.yaml", 2, out)
h = T.mpmio.history(out)
t, v = h["t"], h["momentum_x"] / h["mass"]
E = h["kinetic_energy"] + h["elastic_energy"]

# zero crossings of the centre-of-mass velocity, linearly interpolated
i = np.nonzero(np.sign(v[1:]) != np.sign(v[:-1]))[0]
tz = t[i] - v[i] * (t[i + 1] - t[i]) / (v[i + 1] - v[i])
periods = 2 * np.diff(tz)
n_periods = t[-1] / 10.0

c = T.Checks("bar vibration: %d zero crossings at %s" % (len(tz), np.round(tz, 3)))
c.true("at least 5 zero crossings", len(tz) >= 5)
c.close("initial centre-of-mass velocity [m/s]", v[0], 2 * 0.1 / np.pi, rtol=1e-3)
c.close("mean period [s]", periods.mean(), 10.0, rtol=0.01)
c.close("first crossing = quarter period [s]", tz[0], 2.5, rtol=0.01)
c.close("energy drift per period (relative)", abs(E[-1] - E[0]) / E[0] / n_periods, 0.0, atol=0.01)
c.close("max energy deviation (relative)", np.abs(E - E[0]).max() / E[0], 0.0, atol=0.01)
c.done()
