"""-help documents every option with its units and default, for the
instances in the deck, and runs nothing."""
import os
import mpmtest as T

out = T.outdir("help")
p = T.run_deck("ball_into_sand_3d.yaml", 1, out, "-help")
text = p.stdout
c = T.Checks("-help")
for opt, unit in [("-dx", "[m]"), ("-domain_lo", "[m]"), ("-t_end", "[s]"), ("-gravity", "[m/s^2]"), ("-sand_youngs_modulus", "[Pa]"),
                  ("-sand_density", "[kg/m^3]"), ("-sand_friction_angle", "[deg]"), ("-sand_cohesion", "[Pa]"), ("-sand_hardening", "[deg]"),
                  ("-rubber_poisson_ratio", "[-]"), ("-ball_radius", "[m]"), ("-ball_velocity", "[m/s]"), ("-bed_ppc", ""), ("-bc_xlo", ""),
                  ("-bc_friction", "[-]"), ("-cfl", "[-]"), ("-output_dir", ""), ("-kernel", ""), ("-transfer", ""), ("-delete_outside", ""),
                  ("-objects", ""), ("-emitters", ""), ("-slab_axis", ""), ("-balance_threshold", "[-]"), ("-balance_node_cost", "[-]"),
                  ("-checkpoint_interval", ""), ("-checkpoint_wall", "[s]"), ("-restart", "")]:
    line = next((l for l in text.splitlines() if l.strip().startswith((opt + " ", opt + ":"))), "")
    c.true("%s documented %s" % (opt, unit), bool(line) and unit in line and "<" in line, line.strip()[:100])
c.true("nothing was run", not os.path.exists(os.path.join(out, "frames")) and "frame" not in text.split("Options")[0].lower()[-1:])
c.true("exit code 0", p.returncode == 0)
c.done()
