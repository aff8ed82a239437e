"""Wet sand: cohesion from the water saturation (-<m>_wet_cohesion;
Tampubolon et al. 2017, s. 3.4 and 4.3.3; inputs/wet_sand_column_2d.yaml
at dx = 1 cm; docs/validation.md "Wet sand").

A sand column 0.2 m high, porosity 0.4, its pores 40 % full of water:
1. the saturation the mixture interpolates to the sand particles is the
   pores' water content, 0.4 within 2 %;
2. with the peak cohesion at that saturation, c = 1500 Pa, the column is
   a third of Rankine's critical height H_c = 4 c / gamma tan(45 + phi/2)
   and stands (top within 1 % after 0.5 s);
3. at c = 250 Pa (twice H_c), dry (no water: no cohesion) and saturated
   (S = 1: no cohesion) it slumps (top below 70 %).
"""
import os

import mpmtest as T

c = T.Checks("wet sand column")
DECK = T.deck("wet_sand_column_2d.yaml")
deck = open(DECK).read()
dry = os.path.join(T.OUTPUT, "wet_sand_column_dry.yaml")  # the deck without its water region (the last one)
with open(dry, "w") as f:
    f.write(deck[:deck.index("\ncolumn_water:\n")].replace("regions: column,column_water", "regions: column") + "\n")


def run(name, deck_path, *extra):
    o = T.outdir("wet_sand_" + name)
    T.run(1, ["-options_file_yaml", deck_path, "-output_dir", o, "-dx", "0.01"] + list(extra))
    files = T.mpmio.frame_files(o)
    s0, s = T.mpmio.read_frame(files[0]), T.mpmio.read_frame(files[-1])
    return s, s["position"][:, 1].max() / s0["position"][:, 1].max()


s, top = run("wet", DECK)
x = s["position"]
inner = (x[:, 1] > 0.03) & (x[:, 1] < 0.17)
c.close("wet: saturation at the sand particles against the pores' water content 0.16 / 0.4", s["saturation"][inner].mean(), 0.4, rtol=0.02)
c.within("wet, c = 1500 Pa (H = H_c / 3): top after 0.5 s / initial", top, 0.99, 1.01)
c.true("wet: no particle lost", len(s["id"]) == 800, str(len(s["id"])))
for name, path, extra in (("weak", DECK, ["-sand_wet_cohesion", "250"]), ("dry", dry, []), ("saturated", DECK, ["-pore_water_porosity", "0.4"])):
    s, top = run(name, path, *extra)
    c.within("%s%s: top after 0.5 s / initial (slumps)" % (name, " (c = 250 Pa, H = 2 H_c)" if name == "weak" else ""), top, 0.0, 0.7)
c.done()
