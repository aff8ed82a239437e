"""Bad input stops the run before the first step with exit code 1 and a
message naming the option and the allowed values; no deck crashes the
program (no signal, no stack trace)."""
import concurrent.futures
import os

import mpmtest as T

DECK = "column_collapse_2d.yaml"
CASES = [
    (["-sand_density", "-1800"], "-sand_density must be > 0"),
    (["-sand_friction_angle", "95"], "-sand_friction_angle"),
    (["-sand_friction_angle", "-5"], "outside [0, 90)"),
    (["-sand_poisson_ratio", "0.5"], "-sand_poisson_ratio must be in (-1, 0.5)"),
    (["-sand_youngs_modulus", "0"], "-sand_youngs_modulus must be > 0"),
    (["-sand_type", "clay"], "-sand_type clay is not a known material; allowed: drucker_prager, neo_hookean, hencky_elastic, snow, water, grain"),
    (["-sand_hardening", "35,9,0.2"], "-sand_hardening needs 4 comma-separated values, got 3"),
    (["-sand_cone", "round"], "-sand_cone"),
    (["-column_hi", "0.1,0.5"], "Region 'column'"),
    (["-column_material", "gravel"], "-column_material 'gravel' is not one of the materials listed in -materials (sand)"),
    (["-column_ppc", "0"], "-column_ppc must be in [1, 8]"),
    (["-column_inside_out"], "Region 'column' is unbounded"),
    (["-materials", "sand,gravel"], "-gravel_type is required"),
    (["-regions", "column,blob"], "-blob_lo is required"),
    (["-dim", "4"], "-dim must be 2 or 3"),
    (["-kernel", "quintic"], "-kernel"),
    (["-transfer", "pic"], "-transfer"),
    (["-held_pic_rest", "-1e-4"], "-held_pic_rest must be >= 0"),
    (["-integrator", "leapfrog"], "-integrator leapfrog is not a known integrator; allowed: explicit, implicit, semi_implicit, mixture, nonsmooth, pbd"),
    (["-integrator", "implicit", "-transfer", "flip"], "-transfer flip: -integrator implicit transfers with apic only (allowed: apic; -integrator semi_implicit has apic, flip, aflip)"),
    (["-sand_type", "snow", "-sand_critical_compression", "1.5"], "-sand_critical_compression must be in [0, 1), got 1.5"),
    (["-sand_type", "snow", "-sand_critical_stretch", "-0.1"], "-sand_critical_stretch must be in [0, 1], got -0.1"),
    (["-sand_type", "snow", "-sand_hardening_coefficient", "-1"], "-sand_hardening_coefficient must be in [0, 100], got -1"),
    (["-sand_type", "snow", "-sand_friction_angle", "30"], "-sand_friction_angle (misspelt"),
    (["-sand_type", "water", "-sand_bulk_modulus", "-1"], "-sand_bulk_modulus must be > 0 Pa, got -1"),
    (["-sand_type", "water", "-sand_gamma", "0.5"], "-sand_gamma must be in [1, 20], got 0.5"),
    (["-sand_type", "water", "-sand_max_tension", "-5"], "-sand_max_tension must be >= 0 Pa, got -5"),
    (["-sand_type", "water", "-sand_youngs_modulus", "1e6"], "-sand_youngs_modulus (misspelt"),
    (["-sand_type", "water", "-integrator", "implicit"], "the water's linearization is not implemented"),
    (["-sand_type", "water", "-sand_porosity", "1.5"], "-sand_porosity must be in (0, 1], got 1.5"),
    (["-sand_type", "water", "-sand_porosity", "0.4"], "-sand_porosity below 1 is pore water for -integrator mixture; with -integrator explicit water fills its particles (leave -sand_porosity at 1)"),
    (["-column_water_table", "0.1"], "-column_water_table: region 'column' is of -sand_type drucker_prager; a hydrostatic start needs a fluid (water)"),
    (["-integrator", "mixture"], "-integrator mixture needs a solid and a fluid material in -materials (a fluid is -<m>_type water); got 1 solid and 0 fluid"),
    (["-integrator", "mixture", "-materials", "sand,water", "-water_type", "water", "-mixture_hydraulic_conductivity", "0"], "-mixture_hydraulic_conductivity must be > 0 m/s, got 0"),
    (["-integrator", "mixture", "-materials", "sand,water", "-water_type", "water", "-transfer", "flip"], "-transfer flip is not supported, allowed: apic"),
    (["-integrator", "mixture", "-materials", "sand,water", "-water_type", "water", "-mixture_stress", "semi"], "-mixture_stress"),
    (["-integrator", "mixture", "-materials", "sand,water", "-water_type", "water", "-mixture_pmat", "lu"], "-mixture_pmat"),
    (["-integrator", "mixture", "-materials", "sand,water", "-water_type", "water", "-mixture_max_halvings", "-1"], "-mixture_max_halvings must be in [0, 30], got -1"),
    (["-sand_unilateral"], "-sand_unilateral shapes the elastic energy of -integrator mixture -mixture_stress implicit (plasticity lagged); -integrator explicit does not use it"),
    (["-integrator", "mixture", "-materials", "sand,water", "-water_type", "water", "-sand_unilateral"], "-sand_unilateral shapes the elastic energy of the implicit solve; it needs -mixture_stress implicit (got explicit)"),
    (["-integrator", "mixture", "-materials", "sand,water", "-water_type", "water", "-sand_unilateral_b", "-1"], "-sand_unilateral_b (-1.) must be above -sand_unilateral_a (-0.001)"),
    (["-sand_wet_cohesion", "500"], "-sand_wet_cohesion follows the water saturation of -integrator mixture; with -integrator explicit there is no water in the pores (use -sand_cohesion)"),
    (["-sand_wet_cohesion", "-1"], "-sand_wet_cohesion must be >= 0 Pa, got -1"),
    (["-sand_optimum_saturation", "1"], "-sand_optimum_saturation must be in (0, 1), got 1"),
    (["-integrator", "mixture", "-materials", "sand,water", "-water_type", "water", "-mixture_grain_density", "1000"], "is the sand's dry bulk density and must be below -mixture_grain_density 1000"),
    (["-column_density_variation", "1"], "-column_density_variation must be in [0, 1), got 1"),
    (["-integrator", "nonsmooth", "-nonsmooth_phi_max", "1.5"], "-nonsmooth_phi_max must be in (0, 1], got 1.5"),
    (["-integrator", "nonsmooth", "-nonsmooth_tol", "0"], "-nonsmooth_tol must be in (0, 1), got 0"),
    (["-integrator", "nonsmooth", "-nonsmooth_omega", "2"], "-nonsmooth_omega must be in (0, 2) (projected over-relaxation), got 2"),
    (["-integrator", "nonsmooth", "-nonsmooth_omega", "1.5", "-nonsmooth_solver", "apgd"], "-nonsmooth_omega relaxes the Gauss-Seidel; allowed with -nonsmooth_solver gs, got apgd"),
    (["-integrator", "nonsmooth", "-nonsmooth_solver", "jacobi"], "-nonsmooth_solver"),
    (["-integrator", "nonsmooth", "-sand_cohesion", "100"], "-integrator nonsmooth: material sand (type drucker_prager) is not a Drucker-Prager sand with a friction angle alone"),
    (["-integrator", "nonsmooth", "-transfer", "flip"], "-transfer flip: -integrator nonsmooth transfers with apic only (allowed: apic)"),
    (["-integrator", "nonsmooth", "-nonsmooth_frames", "-nonsmooth_split_ratio", "1"], "-nonsmooth_split_ratio must be in [1.5, 100]"),
    (["-integrator", "nonsmooth", "-nonsmooth_merge_ratio", "3"], "-nonsmooth_split_ratio, -nonsmooth_merge_ratio, -nonsmooth_split_min_volume and -nonsmooth_merge_max_volume act with particle frames only; add -nonsmooth_frames"),
    (["-integrator", "nonsmooth", "-sand_friction_angle_dynamic", "20"], "-sand_friction_angle_dynamic must be in [-sand_friction_angle, 90) deg"),
    (["-sand_friction_angle_dynamic", "40"], "-sand_friction_angle_dynamic: the mu(I) rheology is simulated by -integrator nonsmooth only (allowed with -integrator explicit: 0)"),
    (["-sand_cone", "repose", "-sand_friction_angle", "50"], "-sand_cone repose: the repose angle -sand_friction_angle must be below 45 deg"),
    (["-integrator", "nonsmooth", "-sand_anisotropy", "1"], "-sand_anisotropy must be in [0, 1) (0: isotropic), got 1"),
    (["-integrator", "nonsmooth", "-sand_grain_elongation", "-0.1"], "-sand_grain_elongation must be in [0, 1], got -0.1"),
    (["-integrator", "nonsmooth", "-sand_grain_normals", "flat"], "-sand_grain_normals"),
    (["-integrator", "nonsmooth", "-sand_grain_normals", "aligned", "-sand_grain_normal", "0,0"], "-sand_grain_normal must not be zero"),
    (["-sand_anisotropy", "0.5"], "-sand_anisotropy 0.5: anisotropic grains are simulated by -integrator nonsmooth only (allowed with -integrator explicit: 0)"),
    (["-integrator", "semi_implicit", "-semi_implicit_beta", "1.5"], "-semi_implicit_beta must be in [0, 1] (0 explicit, 0.5 trapezoidal, 1 backward Euler), got 1.5"),
    (["-integrator", "semi_implicit", "-semi_implicit_cfl_elastic", "-1"], "-semi_implicit_cfl_elastic must be >= 0 (0: no limit), got -1"),
    (["-integrator", "semi_implicit", "-flip_blend", "2"], "-flip_blend must be in [0, 1], got 2"),
    (["-integrator", "semi_implicit", "-semi_implicit_pc_type", "lu"], "-semi_implicit_pc_type lu needs an assembled matrix"),
    (["-integrator", "semi_implicit", "-sand_volume_correction", "true"], "-integrator semi_implicit needs the linearized stress dP/dF of every material"),
    (["-integrator", "implicit", "-sand_volume_correction", "true"], "-integrator implicit needs the linearized stress dP/dF of every material, which -sand_type drucker_prager does not provide: not with -sand_volume_correction true"),
    (["-integrator", "implicit", "-implicit_max_halvings", "-1"], "-implicit_max_halvings must be in [0, 30]"),
    (["-integrator", "implicit", "-implicit_pmat", "bogus"], "Unknown option bogus for -implicit_pmat. Available options: diagonal elastic tangent"),
    (["-integrator", "implicit", "-implicit_ksp_type", "cg"], "-implicit_ksp_type cg: the Newton systems of -integrator implicit are not symmetric; allowed: gmres"),
    (["-integrator", "implicit", "-implicit_pc_type", "lu"], "-implicit_pc_type lu needs an assembled matrix: with -implicit_pmat diagonal allowed: jacobi, none"),
    (["-bc_xlo", "glue"], "-bc_xlo"),
    (["-bc_ylo_friction", "-0.1"], "-bc_ylo_friction must be >= 0"),
    (["-dx", "0.007"], "-dx 0.007 does not divide"),
    (["-dx", "abc"], "(option -dx abc)"),
    (["-column_ppc", "2.5"], "(option -column_ppc 2.5)"),
    (["-delete_outside", "maybe"], "(option -delete_outside maybe)"),
    (["-gravity", "0,-9.81,0"], "-gravity needs 2 comma-separated values, got more than 2"),
    (["-gravity", "nan,-9.81"], "-gravity: value 1 (nan"),
    (["-column_velocity", "1,0,5"], "-column_velocity needs 2"),
    (["-dt", "1e-3"], "-dt 0.001 s exceeds the elastic stability limit"),
    (["-bc_friction", "-1"], "-bc_friction must be >= 0"),
    (["-sand_hardening", "35,9,0.2,10"], "-sand_friction_angle and -sand_hardening exclude each other"),
    (["-regions", "column,tiny", "-tiny_shape", "sphere", "-tiny_center", "0.3,0.1", "-tiny_radius", "0.0005"], "Region 'tiny' received no particles"),
    (["-objects", "column", "-column_mode", "slip"], "The name 'column' is used twice"),
    (["-emitters", "e", "-e_center", "0.3,0.2", "-e_direction", "0,-1", "-e_speed", "1", "-e_radius", "0.01", "-e_start", "-1"], "-e_start must be >= 0 s"),
    (["-dx", "1e-10"], "too many"),
    (["-domain_hi", "0.6"], "-domain_hi needs 2"),
    (["-cfl", "2"], "-cfl must be in (0, 1]"),
    (["-balance_threshold", "0.9"], "-balance_threshold must be 0 (off) or > 1"),
    (["-balance_node_cost", "-1"], "-balance_node_cost must be in [0, 100]"),
    (["-t_end", "-1"], "-t_end must be > 0"),
    (["-output_dt", "0"], "-output_dt must be > 0"),
    (["-sand_youngs_modulus_typo", "1e6"], "Unknown option -sand_youngs_modulus_typo"),
    (["-objects", "box1", "-box1_shape", "sphere", "-box1_center", "0.3,0.1", "-box1_radius", "-1"], "-box1_radius must be > 0"),
    (["-objects", "box1", "-box1_shape", "sphere", "-box1_center", "0.3,0.1", "-box1_radius", "0.05", "-box1_species", "sand"], "-box1_species sand: no such species in this run; allowed: all, default"),
    (["-emitters", "e", "-e_center", "0.3,0.2", "-e_direction", "0,-1", "-e_speed", "0", "-e_radius", "0.01"], "-e_speed must be > 0"),
    (["-emitters", "e", "-e_center", "0.3,0.2", "-e_direction", "0,-1", "-e_speed", "1", "-e_radius", "0.01", "-e_jitter", "1"], "-e_jitter must be in [0, 1)"),
    (["-objects", "w", "-w_shape", "sphere", "-w_center", "0.3,0.2", "-w_radius", "0.02", "-w_dynamic", "-w_density", "1000"], "Dynamic bodies (-<object>_dynamic) are coupled by -integrator nonsmooth and pbd only; the deck uses -integrator explicit"),
    (["-integrator", "nonsmooth", "-objects", "w", "-w_shape", "sphere", "-w_center", "0.3,0.2", "-w_radius", "0.02", "-w_dynamic"], "-w_density must be > 0 kg/m^3 for a dynamic body, got 0"),
    (["-integrator", "nonsmooth", "-objects", "w", "-w_shape", "half_space", "-w_center", "0.3,0.02", "-w_normal", "0,1", "-w_dynamic", "-w_density", "1000"], "-w_dynamic: a dynamic body must be a bounded shape; allowed -w_shape: sphere, box, cylinder"),
    (["-integrator", "nonsmooth", "-objects", "w", "-w_shape", "sphere", "-w_center", "0.3,0.2", "-w_radius", "0.02", "-w_dynamic", "-w_density", "1000", "-w_mode", "sticky"], "-w_mode: a dynamic body needs mode separate"),
    # non-finite and empty values, output directories, runs that could never finish
    (["-sand_density", "inf"], "-sand_density must be a finite number"),
    (["-sand_youngs_modulus", "nan"], "-sand_youngs_modulus must be a finite number"),
    (["-bc_ylo_friction", "1e400"], "-bc_ylo_friction must be a finite number"),
    (["-dx"], "-dx needs a value"),
    (["-kernel"], "-kernel needs a value"),
    (["-column_ppc"], "-column_ppc needs a value"),
    (["-output_dir", ""], "-output_dir is empty"),
    (["-output_dir", "/"], "-output_dir / is the filesystem root"),
    (["-output_dir", "/etc/passwd"], "-output_dir /etc/passwd exists and is not a directory"),
    (["-output_dt", "1e-300"], "frames up to -t_end"),
    (["-sand_youngs_modulus", "1e300"], "The largest stable time step is"),
    (["-dt_max", "1e-300"], "The largest stable time step is"),
    (["-t_end", "1e20"], "more than 1e9"),
    (["-dx", "0.00003125"], "GB are free per rank"),
    (["-sand_type", "grain"], "-sand_radius is required for -sand_type grain: the grain radius, > 0 m"),
    (["-sand_type", "grain", "-sand_radius", "-0.001"], "-sand_radius must be > 0 m, got -0.001"),
    (["-sand_type", "grain", "-sand_radius", "0.001", "-sand_kinetic_friction", "0.9"], "-sand_kinetic_friction must be in [0, -sand_static_friction = 0.6], got 0.9"),
    (["-sand_type", "grain", "-sand_radius", "0.001"], "-sand_type grain: grains are moved by -integrator pbd only"),
    (["-integrator", "pbd"], "-integrator pbd moves grains: -sand_type must be grain, got drucker_prager"),
    (["-integrator", "pbd", "-sand_type", "grain", "-sand_radius", "0.01"], "Region 'column' seeds grains as close as"),
    (["-integrator", "pbd", "-pbd_iterations", "0"], "-pbd_iterations must be in [1, 10000], got 0"),
    (["-integrator", "pbd", "-pbd_relaxation", "3"], "-pbd_relaxation must be in (0, 2], got 3"),
    (["-integrator", "pbd", "-pbd_chebyshev_rho", "1"], "-pbd_chebyshev_rho must be in [0, 1), got 1"),
    (["-integrator", "pbd", "-pbd_stabilization_slop", "0.5"], "-pbd_stabilization_slop must be in [0, 0.5), got 0.5"),
    (["-integrator", "pbd", "-sand_type", "grain", "-sand_radius", "0.001", "-pbd_chebyshev_rho", "0.5", "-objects", "w", "-w_shape", "sphere", "-w_center", "0.3,0.2", "-w_radius", "0.02",
      "-w_dynamic", "-w_density", "1000"], "-pbd_chebyshev_rho 0.5: the Chebyshev acceleration does not move dynamic bodies (-<object>_dynamic); use -pbd_chebyshev_rho 0"),
    (["-integrator", "pbd", "-pbd_friction", "coulomb"], "Unknown option coulomb for -pbd_friction. Available options: seed accumulated"),
    (["-materials", "sand,g", "-g_type", "grain", "-g_radius", "0.001"], "-materials mixes grains (-<m>_type grain, moved by -integrator pbd) with continuum materials"),
]

def refuse(case):
    """Run one bad deck in its own directory: (completed process, frame written?)."""
    k, (extra, expect) = case
    out = T.outdir("bad_deck_%d" % k)
    p = T.run_deck(DECK, 2, out, *extra, check=False)
    return p, os.path.exists(os.path.join(out, "frames", "frame_00000.h5"))


c = T.Checks("bad decks are refused before stepping")
with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:  # the runs are short: mpiexec's start-up (waiting, not computing) dominates
    results = list(pool.map(refuse, enumerate(CASES)))
for (extra, expect), (p, frame) in zip(CASES, results):
    err = p.stderr
    ok = p.returncode == 1 and expect in err and "frame" not in p.stdout and "PETSC ERROR" not in err
    c.true(" ".join(extra)[:48], ok, "exit %d: %s" % (p.returncode, [l for l in err.splitlines() if "error" in l][:1] or err[-300:]))
    c.true("  no output frames written", not frame)
# malformed YAML: file, line and column, no PETSc trace
good = open(T.deck(DECK), "rb").read()
YAML = [
    ("tab", good.replace(b"\n  xlo:", b"\n\txlo:", 1), ":15:1: found character that cannot start any token"),
    ("unclosed bracket", b"dim: [2\ndx: 0.1\n", ":2:3: did not find expected ',' or ']'"),
    ("bad quote", b"dim: 2\nmaterials: 'sand\n", "found unexpected end of stream"),
    ("garbage bytes", bytes(range(128, 256)), "invalid"),
    ("UTF-16", good.decode().encode("utf-16"), "the deck is UTF-16 encoded"),
    ("deep nesting", b"a:\n b:\n  c:\n   d:\n    e:\n     f:\n      g:\n       h:\n        i: 1\n", "nested deeper than 8 levels"),
    ("a list, not a mapping", b"- dim\n- 2\n", "a deck is a mapping of options"),
]
for name, text, expect in YAML:
    out = T.outdir("bad_yaml")
    os.makedirs(out)
    path = os.path.join(out, "deck.yaml")
    with open(path, "wb") as f:
        f.write(text)
    p = T.run(2, ["-options_file_yaml", path, "-output_dir", out], check=False)
    c.true("YAML %s: refused with file:line:column" % name, p.returncode == 1 and expect in p.stderr and path in p.stderr and "PETSC ERROR" not in p.stderr,
           "exit %d: %s" % (p.returncode, p.stderr.strip().splitlines()[0][:160] if p.stderr.strip() else ""))
missing = T.run(1, ["-options_file_yaml", "/nonexistent/deck.yaml"], check=False)
c.true("missing deck file: exit 1 and named", missing.returncode == 1 and "/nonexistent/deck.yaml" in missing.stderr, missing.stderr.strip()[:200])
c.done()
