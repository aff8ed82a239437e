"""Results do not depend on the number of ranks: the same deck on 1, 2 and 3
ranks gives the same particle state, compared by id, to within 1e-9
relative after 100 steps (2D sand column; 3D ball dropped into a sand bed,
two materials)."""
import numpy as np
import mpmtest as T

FIELDS = ["position", "velocity", "pressure", "dev_stress_norm", "volume", "hardening"]


def final_state(out):
    return T.mpmio.sorted_by_id(T.mpmio.read_frame(T.mpmio.frame_files(out)[-1]))


def compare(c, label, ref, other):
    c.true("%s same ids" % label, np.array_equal(ref["id"], other["id"]), "(%d particles)" % len(ref["id"]))
    if not np.array_equal(ref["id"], other["id"]):
        return
    c.true("%s same step" % label, ref["step"] == other["step"], "step %d" % ref["step"])
    for f in FIELDS:
        scale = np.abs(ref[f]).max() or 1.0
        c.close("%s %s max |diff| / max |value|" % (label, f), np.abs(ref[f] - other[f]).max() / scale, 0.0, atol=1e-9)
    c.true("%s plastic case identical" % label, np.array_equal(ref["plastic_case"], other["plastic_case"]),
           "(%d differ)" % int((ref["plastic_case"] != other["plastic_case"]).sum()))


c = T.Checks("rank invariance after 100 steps")
decks = [
    # slabs along y: the column is tall, so every rank holds part of it
    ("column_collapse_2d.yaml", ["-dx", "0.00625", "-max_steps", "100", "-output_dt", "1", "-slab_axis", "y"], (1, 2, 3)),
    ("ball_into_sand_3d.yaml", ["-dx", "0.02", "-ball_radius", "0.06", "-max_steps", "100", "-output_dt", "1"], (1, 2, 3)),
    ("column_collapse_2d.yaml", ["-dx", "0.00625", "-max_steps", "100", "-output_dt", "1", "-slab_axis", "y", "-transfer", "aflip"], (1, 2, 3)),
]
for deck, extra, ranks in decks:
    label = deck + (" aflip" if "aflip" in extra else "")
    states = {}
    for n in ranks:
        out = T.outdir("rank_invariance_%s_%d" % (label.replace(".yaml", "").replace(" ", "_"), n))
        T.run_deck(deck, n, out, *extra)
        states[n] = final_state(out)
        c.true("%s %d ranks recorded rank count" % (deck, n), states[n]["ranks"] == n)
        per_rank = T.mpmio.summary(out)["particles_per_rank"]
        c.true("%s %d ranks: every rank holds particles" % (deck, n), len(per_rank) == n and min(per_rank) > 0, str(per_rank))
    for n in ranks[1:]:
        compare(c, "%s 1 vs %d ranks" % (label, n), states[ranks[0]], states[n])
    moving = np.abs(states[1]["velocity"]).max()
    c.true("%s the state is not trivial (max |v| > 0.05 m/s)" % deck, moving > 0.05, "max |v| = %.3g m/s" % moving)
c.done()
