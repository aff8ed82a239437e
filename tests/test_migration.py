"""Particle migration: a block flying across every slab (3 ranks, slabs
along x; and along y with -slab_axis y) keeps its particle count and ids,
and moves rigidly by v t (free flight, no gravity)."""
import numpy as np
import mpmtest as T

BASE = ["-dim", "2", "-domain_lo", "0,0", "-domain_hi", "1,0.5", "-dx", "0.02", "-gravity", "0,0",
        "-materials", "m", "-m_type", "neo_hookean", "-m_density", "1000", "-m_youngs_modulus", "1e5",
        "-regions", "b", "-b_shape", "box", "-b_ppc", "2", "-b_material", "m", "-t_end", "0.3", "-output_dt", "0.05", "-dt_max", "2e-3"]

c = T.Checks("migration across slabs")
for axis, lo, hi, vel, shift in (("x", "0.05,0.2", "0.15,0.3", "2.5,0", (0.75, 0.0)), ("y", "0.45,0.02", "0.55,0.08", "0,1.2", (0.0, 0.36))):
    out = T.outdir("migration_" + axis)
    T.run(3, BASE + ["-slab_axis", axis, "-b_lo", lo, "-b_hi", hi, "-b_velocity", vel, "-output_dir", out])
    files = T.mpmio.frame_files(out)
    first = T.mpmio.sorted_by_id(T.mpmio.read_frame(files[0]))
    counts = [len(T.mpmio.read_frame(f, ["id"])["id"]) for f in files]
    last = T.mpmio.sorted_by_id(T.mpmio.read_frame(files[-1]))
    c.true("slabs along %s: count constant in every frame" % axis, all(n == counts[0] for n in counts), str(counts))
    c.true("slabs along %s: same ids at start and end" % axis, np.array_equal(first["id"], last["id"]))
    c.true("slabs along %s: ids unique" % axis, len(np.unique(last["id"])) == len(last["id"]))
    d = last["position"][:, :2] - first["position"][:, :2]
    c.close("slabs along %s: max |displacement - v t| [m]" % axis, np.abs(d - np.array(shift)).max(), 0.0, atol=1e-9)
    s = T.mpmio.summary(out)
    c.true("slabs along %s: summary count, none deleted" % axis, s["particles"] == counts[0] and s["particles_deleted"] == 0)
c.done()
