"""Block decomposition (-decomposition blocks): the grid cut along two or
three axes, a DMDA process grid with ghost exchange to up to 8 (2D) or 26
(3D) neighbours, particles migrating to any of them.

1. Rank invariance against 1 rank, compared by id, 1e-9 relative (as
   test_rank_invariance): the 2D sand column as 2 x 1, 3 x 1 (the least
   face area's pick) and 2 x 2 blocks, and as 4 slabs; the 3D ball into a sand bed as
   2 x 1 x 2 blocks; no particle lost, every rank holding particles.  The
   ball's ghost exchange, as PETSc logs it (-log_view), sends the bytes
   postproc/scaling_model.py counts (faces, edges and corners), within 2 %.
2. Migration across a block corner: a free-flying block (no gravity)
   crosses from rank (0, 0) to rank (1, 1) of 2 x 2 blocks diagonally, and
   in 3D from rank 0 to rank 7 of 2 x 2 x 2 blocks: count and ids kept in
   every frame, displaced rigidly by v t.  The 3D PBD block of 8000 grains
   on 2 x 2 x 2 blocks (halos to 26 neighbours) gives the bits of 1 rank.
3. Load balancing on 4 ranks, as 4 slabs and as 2 x 2 blocks (the
   landslide, particles only): the parts move (each cut axis at its work
   quantiles), no particle lost, the same physics as without balancing
   (1e-9) and as each other; a checkpoint taken after the parts moved
   restarts bit for bit; a slab checkpoint restarts on blocks, and the
   2 x 2 blocks' checkpoint on 3 ranks (their particles go to their
   owners), within roundoff of the uninterrupted run,
   and so does one from before blocks existed (no record of its process
   grid) on blocks that cut another axis than its slabs.
4. The particle-only and nonsmooth methods on 2 x 2 blocks: the PBD
   column's grains identical to the bit against 1 rank (halos along two
   axes); the nonsmooth column within the friction solve's tolerance.
5. Bad input: -decomposition_parts with the wrong product, the wrong
   count or without -decomposition blocks fails before stepping, naming
   the option."""
import csv
import os
import h5py
import numpy as np
import mpmtest as T
import scaling_model  # postproc/ (mpmtest puts it on the path)


def final(out):
    return T.mpmio.sorted_by_id(T.mpmio.read_frame(T.mpmio.frame_files(out)[-1]))


def compare(c, label, ref, other, tol=1e-9, fields=("position", "velocity")):
    same = np.array_equal(ref["id"], other["id"])
    c.true("%s: same ids, none lost" % label, same, "(%d vs %d particles)" % (len(ref["id"]), len(other["id"])))
    if not same:
        return
    for f in fields:
        scale = np.abs(ref[f]).max() or 1.0
        c.close("%s: %s max |diff| / max |value|" % (label, f), np.abs(ref[f] - other[f]).max() / scale, 0.0, atol=tol)


def blocks_of(proc):
    """The 'blocks P x Q x R' of the set-up line."""
    for line in proc.stdout.splitlines():
        if line.startswith("granular-mpm") and "blocks" in line:
            return line.split("blocks ")[1].split(",")[0]
    return "?"


c = T.Checks("block decomposition")

# 1. rank invariance
COL = ["-dx", "0.00625", "-max_steps", "100", "-output_dt", "1"]
ref = T.outdir("blocks_col_1")
T.run_deck("column_collapse_2d.yaml", 1, ref, *COL)
r1 = final(ref)
for n, parts, want in ((2, "2,1", "2 x 1 x 1"), (3, None, "3 x 1 x 1"), (4, "2,2", "2 x 2 x 1")):
    out = T.outdir("blocks_col_%d" % n)
    extra = ["-decomposition", "blocks"] + (["-decomposition_parts", parts] if parts else [])
    p = T.run_deck("column_collapse_2d.yaml", n, out, *(COL + extra))
    c.true("column %d ranks: blocks %s" % (n, want), blocks_of(p) == want, blocks_of(p))
    sm = T.mpmio.summary(out)
    c.true("column %d ranks: summary.json records the blocks" % n, sm["decomposition"] == "blocks" and " x ".join(map(str, sm["decomposition_parts"])) == want,
           "%s %s" % (sm["decomposition"], sm["decomposition_parts"]))
    per = sm["particles_per_rank"]
    c.true("column %d ranks: every rank holds particles" % n, len(per) == n and min(per) > 0, str(per))
    compare(c, "column %s blocks vs 1 rank" % want.replace(" x 1", ""), r1, final(out))
out = T.outdir("blocks_col_4_slabs")
T.run_deck("column_collapse_2d.yaml", 4, out, *COL)
compare(c, "column 4 slabs vs 1 rank", r1, final(out))
c.true("column: the state is not trivial (max |v| > 0.05 m/s)", np.abs(r1["velocity"]).max() > 0.05)

BALL = ["-dx", "0.02", "-ball_radius", "0.06", "-max_steps", "100", "-output_dt", "1"]
b1 = T.outdir("blocks_ball_1")
T.run_deck("ball_into_sand_3d.yaml", 1, b1, *BALL)
b4 = T.outdir("blocks_ball_4")
logcsv = os.path.join(T.OUTPUT, "blocks_ball_4_log.csv")
p = T.run_deck("ball_into_sand_3d.yaml", 4, b4, *(BALL + ["-decomposition", "blocks", "-log_view", ":%s:ascii_csv" % logcsv]))
c.true("3D ball: 4 ranks as 2 x 1 x 2 blocks (least face area)", blocks_of(p) == "2 x 1 x 2", blocks_of(p))
compare(c, "3D ball 2 x 1 x 2 vs 1 rank", final(b1), final(b4), fields=("position", "velocity", "pressure"))
# the ghost bytes PETSc logged against the scaling model's count (docs/scaling.md): faces, edges, corners of the box stencil
nodes = [int(v) for v in p.stdout.split(" grid ")[1].split(" nodes")[0].split(" x ")]
sent, exchanges = 0.0, 0
for row in csv.DictReader(open(logcsv)):
    if row["Stage Name"] == "MPM stepping" and row["Event Name"] == "MPMGhostExchange":
        sent += 0.5 * float(row["Message Length"])  # PETSc counts each message sent and received
        exchanges = int(row["Count"])
model = scaling_model.ghost_nodes(nodes, [2, 1, 2]) * 4 * 8  # 4 doubles a node: mass and momentum
c.close("3D ball 2 x 1 x 2: ghost bytes per exchange / the model's", sent / max(exchanges, 1) / model, 1.0, atol=0.02)
c.true("3D ball: the scaling model picks the solver's grid", scaling_model.solver_parts(nodes, 4) == (2, 1, 2), str(scaling_model.solver_parts(nodes, 4)))

# 2. migration across the corner of 2 x 2 blocks
FLY = ["-dim", "2", "-domain_lo", "0,0", "-domain_hi", "1,1", "-dx", "0.02", "-gravity", "0,0", "-materials", "m", "-m_type", "neo_hookean", "-m_density", "1000",
       "-m_youngs_modulus", "1e5", "-regions", "b", "-b_shape", "box", "-b_ppc", "2", "-b_material", "m", "-b_lo", "0.1,0.1", "-b_hi", "0.2,0.2",
       "-b_velocity", "2,2", "-t_end", "0.3", "-output_dt", "0.05", "-dt_max", "2e-3", "-decomposition", "blocks", "-decomposition_parts", "2,2",
       "-balance_threshold", "0"]
out = T.outdir("blocks_fly")
T.run(4, FLY + ["-output_dir", out])
files = T.mpmio.frame_files(out)
first, last = T.mpmio.sorted_by_id(T.mpmio.read_frame(files[0])), final(out)
counts = [len(T.mpmio.read_frame(f, ["id"])["id"]) for f in files]
c.true("diagonal flight: count constant in every frame", all(k == counts[0] for k in counts), str(counts))
c.true("diagonal flight: same ids at start and end", np.array_equal(first["id"], last["id"]))
d = last["position"][:, :2] - first["position"][:, :2]
c.close("diagonal flight: max |displacement - v t| [m]", np.abs(d - 0.6).max(), 0.0, atol=1e-9)
per = T.mpmio.summary(out)["particles_per_rank"]
c.true("diagonal flight: the block ends on the far corner's rank (3)", per[3] == counts[0], str(per))

# ... and across the corner of 2 x 2 x 2 blocks in 3D (26 neighbours), with the PBD grains' halos
FLY3 = ["-dim", "3", "-domain_lo", "0,0,0", "-domain_hi", "0.5,0.5,0.5", "-dx", "0.025", "-gravity", "0,0,0", "-materials", "m", "-m_type", "neo_hookean",
        "-m_density", "1000", "-m_youngs_modulus", "1e5", "-regions", "b", "-b_shape", "box", "-b_ppc", "2", "-b_material", "m", "-b_lo", "0.05,0.05,0.05",
        "-b_hi", "0.1,0.1,0.1", "-b_velocity", "1,1,1", "-t_end", "0.3", "-output_dt", "0.1", "-dt_max", "2e-3", "-decomposition", "blocks",
        "-decomposition_parts", "2,2,2", "-balance_threshold", "0"]
out = T.outdir("blocks_fly3d")
T.run(8, FLY3 + ["-output_dir", out])
files = T.mpmio.frame_files(out)
first, last = T.mpmio.sorted_by_id(T.mpmio.read_frame(files[0])), final(out)
counts = [len(T.mpmio.read_frame(f, ["id"])["id"]) for f in files]
c.true("3D diagonal flight on 2 x 2 x 2: count and ids kept", all(k == counts[0] for k in counts) and np.array_equal(first["id"], last["id"]), str(counts))
c.close("3D diagonal flight: max |displacement - v t| [m]", np.abs(last["position"] - first["position"] - 0.3).max(), 0.0, atol=1e-9)
per = T.mpmio.summary(out)["particles_per_rank"]
c.true("3D diagonal flight: the block ends on the far corner's rank (7)", per[7] == counts[0], str(per))
PBD3 = ["-block_hi", "0.1,0.1,0.1", "-domain_hi", "0.2,0.15,0.2", "-max_steps", 40, "-output_dt", 10]
g1, g8 = T.outdir("blocks_pbd3d_1"), T.outdir("blocks_pbd3d_8")
T.run_deck("pbd_bench_3d.yaml", 1, g1, *PBD3)
T.run_deck("pbd_bench_3d.yaml", 8, g8, *(PBD3 + ["-decomposition", "blocks", "-decomposition_parts", "2,2,2"]))
a, b = final(g1), final(g8)
c.true("PBD 3D block of 8000 grains on 2 x 2 x 2: none lost, the bits of 1 rank", np.array_equal(a["id"], b["id"]) and np.array_equal(a["position"], b["position"])
       and np.array_equal(a["velocity"], b["velocity"]), "%d grains" % len(b["id"]))

# 3. load balancing and restarts on 4 ranks, slabs and 2 x 2 blocks
LS = ["-options_file_yaml", T.deck("landslide_2d.yaml"), "-dx", "0.02", "-output_dt", "0.02", "-history_interval", "10", "-t_end", "0.5",
      "-balance_node_cost", "0", "-balance_initial", "false"]
BLK = ["-decomposition", "blocks", "-decomposition_parts", "2,2"]
finals = {}
for name, cut in (("slabs", []), ("2 x 2 blocks", BLK)):
    tag = name.split()[0]
    on, off = T.outdir("blocks_balance_on_" + tag), T.outdir("blocks_balance_off_" + tag)
    T.run(4, LS + cut + ["-max_steps", "300", "-output_dir", on])
    T.run(4, LS + cut + ["-max_steps", "300", "-output_dir", off, "-balance_threshold", "0"])
    h = T.mpmio.history(on)
    n_reb = T.mpmio.summary(on)["rebalances"]
    c.true("balancing on %s: rebalanced" % name, n_reb >= 1, "%d times" % n_reb)
    c.true("balancing on %s: imbalance fell below its start" % name, h["imbalance"][-1] < h["imbalance"][0], "%.3f -> %.3f" % (h["imbalance"][0], h["imbalance"][-1]))
    c.true("balancing on %s: particle count constant" % name, (h["particles"] == h["particles"][0]).all())
    compare(c, "balanced vs fixed %s" % name, final(off), final(on))
    rs = T.outdir("blocks_restart_" + tag)
    T.run(4, LS + cut + ["-max_steps", "150", "-checkpoint_interval", "150", "-output_dir", rs])
    c.true("restart on %s: the checkpoint was written after the parts moved" % name, T.mpmio.summary(rs)["rebalances"] >= 1)
    T.run(4, LS + cut + ["-max_steps", "300", "-output_dir", rs, "-restart", "latest"])
    fa, fr = final(on), final(rs)
    c.true("restart on %s after rebalancing: bit for bit" % name, np.array_equal(fa["position"], fr["position"]) and np.array_equal(fa["velocity"], fr["velocity"]),
           "max diff %.3g" % np.abs(fa["position"] - fr["position"]).max())
    finals[tag] = fa
compare(c, "landslide: 4 slabs vs 2 x 2 blocks, both balanced", finals["slabs"], finals["2"])
# the 2 x 2 blocks' checkpoint restarted on 3 ranks (blocks again, 3 x 1): the particles go to their owners, placed on their work
ckpt = os.path.join(T.OUTPUT, "blocks_restart_2", "checkpoints", "ckpt_00000150.h5")
r3 = T.outdir("blocks_restart_3ranks")
p = T.run(3, LS + ["-decomposition", "blocks", "-max_steps", "300", "-output_dir", r3, "-restart", ckpt])
c.true("the 2 x 2 checkpoint restarted on 3 ranks: said so", "written on 4 ranks" in p.stdout)
compare(c, "2 x 2 checkpoint restarted on 3 ranks vs 2 x 2 throughout", finals["2"], final(r3))
sl = T.outdir("blocks_from_slabs")
T.run(4, LS + ["-max_steps", "150", "-checkpoint_interval", "150", "-output_dir", sl])
p = T.run(4, LS + BLK + ["-max_steps", "300", "-output_dir", sl, "-restart", "latest"])
c.true("a slab checkpoint restarted on blocks: said so", "the particles go to their owners" in p.stdout)
compare(c, "slab checkpoint restarted on blocks vs blocks throughout", finals["2"], final(sl))

# a checkpoint from before blocks (no decomposition_parts, no part_start: stripped here) restarted on blocks
# that cut another axis than its slabs: the particles go to their owners (the layout is not misread)
old = T.outdir("blocks_old_checkpoint")
COL2 = ["-dx", "0.00625", "-output_dt", "1"]
T.run_deck("column_collapse_2d.yaml", 2, old, *(COL2 + ["-max_steps", "50", "-checkpoint_interval", "50"]))
for f in sorted(os.listdir(os.path.join(old, "checkpoints"))):
    with h5py.File(os.path.join(old, "checkpoints", f), "r+") as h:
        del h.attrs["decomposition_parts"]
        del h["part_start"]
p = T.run_deck("column_collapse_2d.yaml", 2, old, *(COL2 + ["-max_steps", "100", "-restart", "latest", "-decomposition", "blocks", "-decomposition_parts", "1,2"]))
c.true("an old slab checkpoint (x) restarted on 1 x 2 blocks: said so", "written on slabs before blocks existed" in p.stdout)
ref2 = T.outdir("blocks_old_checkpoint_ref")
T.run_deck("column_collapse_2d.yaml", 2, ref2, *(COL2 + ["-max_steps", "100"]))
compare(c, "old slab checkpoint restarted on 1 x 2 blocks vs no restart", final(ref2), final(old))

# 4. PBD (halos along two axes) and the nonsmooth solver on 2 x 2 blocks
pb1, pb4 = T.outdir("blocks_pbd_1"), T.outdir("blocks_pbd_4")
T.run_deck("pbd_column_2d.yaml", 1, pb1, "-max_steps", 200, "-output_dt", 10)
T.run_deck("pbd_column_2d.yaml", 4, pb4, "-max_steps", 200, "-output_dt", 10, *BLK)
a, b = final(pb1), final(pb4)
c.true("PBD column on 2 x 2 blocks: no grain lost", np.array_equal(a["id"], b["id"]), "%d vs %d" % (len(a["id"]), len(b["id"])))
if np.array_equal(a["id"], b["id"]):
    c.true("PBD column on 2 x 2 blocks: the bits of 1 rank", np.array_equal(a["position"], b["position"]) and np.array_equal(a["velocity"], b["velocity"]),
           "max |dx| %g" % np.abs(a["position"] - b["position"]).max())
NS = ["-integrator", "nonsmooth", "-dx", "0.0125", "-max_steps", "30", "-output_dt", "1"]
ns1, ns4 = T.outdir("blocks_ns_1"), T.outdir("blocks_ns_4")
T.run_deck("column_collapse_2d.yaml", 1, ns1, *NS)
T.run_deck("column_collapse_2d.yaml", 4, ns4, *(NS + BLK))
compare(c, "nonsmooth column 2 x 2 blocks vs 1 rank", final(ns1), final(ns4), tol=1e-3)

# 5. bad input
for args, want in ((["-decomposition", "blocks", "-decomposition_parts", "3,1"], "-decomposition_parts gives 3 ranks"),
                   (["-decomposition", "blocks", "-decomposition_parts", "2,1,2"], "-decomposition_parts takes 2 values"),
                   (["-decomposition_parts", "2,1"], "-decomposition_parts needs -decomposition blocks"),
                   (["-decomposition", "cubes"], "-decomposition")):
    p = T.run(2, ["-options_file_yaml", T.deck("column_collapse_2d.yaml"), "-output_dir", T.outdir("blocks_bad")] + args, check=False)
    text = p.stdout + p.stderr
    said = [l for l in text.splitlines() if "error" in l]
    c.true("bad %s: fails naming it" % " ".join(args), p.returncode != 0 and want in text and "step " not in p.stdout, said[0][:110] if said else "")
c.done()
