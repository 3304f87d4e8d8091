# Every reproduced figure and table (experiments/README.md): `make figures` runs them all into
# out/figures/ (`./build.sh figures` first installs what a fresh Debian 12 needs). One figure:
# `make out/figures/convergence.md`. Files already made are kept; `make clean-figures` starts over.
# The build itself is CMake (README); this file only drives experiments.

CSM ?= build/csm
PY ?= /usr/bin/python3
OUT ?= out/figures
JOBS ?= $(shell nproc)
A := experiments/analysis
C := experiments/configs
export MPLBACKEND := Agg

FIGURES := $(OUT)/bunny.md $(OUT)/spin_cube.md $(OUT)/stretch_cube.md $(OUT)/drop_cube.md \
           $(OUT)/spring.md $(OUT)/rotation_rectangle.md $(OUT)/table1.md $(OUT)/beams.md \
           $(OUT)/convergence.md $(OUT)/scaling.md $(OUT)/rotation_study.md $(OUT)/integrators.md \
           $(OUT)/contact.md

.PHONY: figures figures-only disk-use build clean-figures movies reference validation
# What the figures' logs will take is said first (experiments/disk_use.sh), then they are made.
figures: disk-use
	@$(MAKE) --no-print-directory figures-only
figures-only: $(FIGURES)
	@echo "figures in $(OUT)/:"; ls $(OUT)/*.md $(OUT)/*.png
	@echo "disk used by $(OUT)/ (logs included; make clean-figures frees it): $$(du -sh $(OUT) | cut -f1)"

# A build folder configured before keeps its settings (./build.sh test turns the tests on);
# a new one is configured as ./build.sh run does, without the tests and their packages.
build:
	if test -f build/CMakeCache.txt; then cmake --build build -j $(JOBS); else ./build.sh build; fi

disk-use: build
	@experiments/disk_use.sh $(CSM) $(OUT)

# Figures need the binary, but do not remake when only its time stamp moved.
$(FIGURES): | build

# Bargteil-Jones 2014 Fig 1: the bunny thrown onto the ground.
$(OUT)/bunny.md:
	data/fetch_meshes.sh
	$(CSM) run $(C)/bunny.yaml -o $(OUT)/bunny/bunny.h5 --force
	$(PY) $(A)/render.py $(OUT)/bunny/bunny.h5 --frames 0,30,60,-1 -o $(OUT)/bunny
	$(PY) $(A)/surface.py $(OUT)/bunny/bunny.h5 --frames 0,30,60,-1 -o $(OUT)/bunny/bunny_surface --png
	$(PY) $(A)/compare.py $(OUT)/bunny/bunny.h5 -q energy -q center_of_mass.y -o $(OUT)/bunny_energy > $@

# Bargteil-Jones 2014 Fig 2: the spinning cube, shape matching against PBD, both rotations.
$(OUT)/spin_cube.md:
	$(CSM) sweep $(C)/spin_cube.yaml -o $(OUT)/spin_cube --jobs $(JOBS) \
	    --set 'sweep={solver.integrator: [shape_matching, pbd], solver.rotation: [polar_apq, polar_f], solver.conserve: [none, angular]}'
	$(PY) $(A)/compare.py $(OUT)/spin_cube --where conserve=none -q kinetic_energy -q angular_momentum.z -o $(OUT)/spin_cube > $@
	$(PY) $(A)/compare.py $(OUT)/spin_cube --where conserve=angular -q kinetic_energy -q angular_momentum.z -o $(OUT)/spin_cube_angular >> $@
	$(PY) $(A)/momenta.py $(OUT)/spin_cube >> $@

# Bargteil-Jones 2014 Sec 3: the cube stretched 50 % and released; 29 clusters or one, shape
# matching or strain limiting.
$(OUT)/stretch_cube.md:
	$(CSM) sweep $(C)/stretch_cube.yaml -o $(OUT)/stretch_cube --jobs $(JOBS) \
	    --set 'sweep={clustering.radius: [0.35, 2], solver.iterations: [0, 5], solver.conserve: [none, angular]}'
	$(PY) $(A)/compare.py $(OUT)/stretch_cube --where radius=0.35 -q kinetic_energy -q max_strain -q angular_momentum.z \
	    --log -o $(OUT)/stretch_cube > $@
	$(PY) $(A)/compare.py $(OUT)/stretch_cube --where radius=2 -q kinetic_energy -q max_strain --until 0.5 -o $(OUT)/stretch_cube_one_cluster >> $@
	$(PY) $(A)/momenta.py $(OUT)/stretch_cube >> $@

# Bargteil-Jones 2014 Sec 3: the cube dropped on the ground, shape matching, strain limiting, PBD.
$(OUT)/drop_cube.md:
	$(CSM) sweep $(C)/drop_cube_strain_limited.yaml -o $(OUT)/drop_cube --jobs $(JOBS) \
	    --set 'sweep={solver.integrator: [shape_matching, strain_limited, pbd], solver.conserve: [none, angular]}'
	$(PY) $(A)/compare.py $(OUT)/drop_cube --where conserve=none -q kinetic_energy -q max_strain -q center_of_mass.y -q center_of_mass.x -o $(OUT)/drop_cube > $@
	$(PY) $(A)/compare.py $(OUT)/drop_cube --where conserve=angular -q kinetic_energy -q max_strain -q center_of_mass.y -q center_of_mass.x -o $(OUT)/drop_cube_angular >> $@
	$(PY) $(A)/momenta.py $(OUT)/drop_cube >> $@

# Bargteil-Jones 2014 Sec 3: the zero-rest-length spring.
$(OUT)/spring.md:
	$(CSM) sweep $(C)/spring.yaml -o $(OUT)/spring --jobs $(JOBS) \
	    --set 'sweep={solver.integrator: [shape_matching, pbd]}'
	$(PY) $(A)/compare.py $(OUT)/spring -q position:1.x -q kinetic_energy -o $(OUT)/spring > $@

# Falkenstein 2017 Sec 3.1: the stretched rectangle, R from A_pq against R from F.
$(OUT)/rotation_rectangle.md:
	$(CSM) sweep $(C)/rotation_rectangle.yaml -o $(OUT)/rotation_rectangle --jobs $(JOBS) \
	    --set 'sweep={solver.rotation: [polar_apq, polar_f], solver.conserve: [none, angular]}'
	$(PY) $(A)/compare.py $(OUT)/rotation_rectangle --where conserve=none -q angular_momentum.z -q kinetic_energy -o $(OUT)/rotation_rectangle > $@
	$(PY) $(A)/summary.py $(OUT)/rotation_rectangle/*.h5 >> $@
	$(PY) $(A)/momenta.py $(OUT)/rotation_rectangle >> $@

# Falkenstein 2017 Table 1 (and the runs of Fig 2 and Fig 4).
$(OUT)/table1.md:
	mkdir -p $(OUT)
	experiments/recluster.sh $(CSM) $(OUT)/recluster > $@.tmp
	mv $@.tmp $@

# Falkenstein 2017 Fig 2 and Fig 4: the final frames, coloured by the closest cluster centre,
# grey where that cluster is one of the initial ones.
$(OUT)/beams.md: $(OUT)/table1.md
	$(PY) $(A)/render.py $(OUT)/recluster/beam_compress_embedded.h5 --frames 120,-1 --color new --view iso -o $(OUT)/fig2_plastic > $@
	$(PY) $(A)/render.py $(OUT)/recluster/beam_compress_elastic_embedded.h5 --frames 120,-1 --color new --view iso -o $(OUT)/fig2_elastic >> $@
	$(PY) $(A)/render.py $(OUT)/recluster/beam_twist.h5 --frames 60,-1 --color new --view iso -o $(OUT)/fig4_twist >> $@
	$(PY) $(A)/render.py $(OUT)/recluster/beam_twist.h5 --frames -1 --color displacement --view iso -o $(OUT)/fig4_twist_set >> $@

# Falkenstein 2017 Fig 3, the cantilever's resting deflection, in three senses:
#  1. the papers' settings (alpha = 1, conserve: none), 10 to 640 fuzzy c-means clusters that
#     shrink as they multiply, both rotations: the beam softens without converging;
#  2. the authors' sense: a fixed cluster radius, more clusters only add overlap: converges;
#  3. refinement with a material modulus: clusters shrinking (then particles refined with them,
#     and the step refined) converges; the fixed alpha beside it follows the step.
# The particle refinement's points, SPACING:CLUSTERS:SUBSTEPS: the spacing halves every two
# points (1/5, 1/7, 1/10, 1/14 m, each dividing the beam's 4 x 1 x 1 m, so every grid spans the
# whole beam and holds the same clamp; 0.141 m spanned 3.95 m), the clusters keep their size in
# particles, and the substeps are what the modulus needs (csm check: 1/14 m asks 24; the alpha = 1
# runs keep beam_convergence's 8).
CONV = $(PY) $(A)/convergence.py --last 2
REFINE_PARTICLES = 0.2:10:20 0.142857142857143:28:20 0.1:80:20 0.0714285714285714:226:24
$(OUT)/convergence.md:
	mkdir -p $(OUT)
	$(CSM) sweep $(C)/beam_convergence.yaml -o $(OUT)/beam_convergence --jobs $(JOBS)
	echo "## 1. alpha = 1, clusters shrinking (the papers' settings): polar_apq, then polar_f" > $@.tmp
	$(CONV) $(OUT)/beam_convergence --where rotation=polar_apq -o $(OUT)/convergence_polar_apq >> $@.tmp
	echo >> $@.tmp
	$(CONV) $(OUT)/beam_convergence --where rotation=polar_f -o $(OUT)/convergence_polar_f >> $@.tmp
	$(CSM) sweep $(C)/beam_convergence_radius.yaml -o $(OUT)/beam_convergence_radius --jobs $(JOBS)
	printf "\n## 2. alpha = 1, a fixed radius of 0.5 m, overlap growing (the authors' sense)\n\n" >> $@.tmp
	$(CONV) $(OUT)/beam_convergence_radius -o $(OUT)/convergence_radius >> $@.tmp
	$(CSM) sweep $(C)/beam_refinement.yaml -o $(OUT)/beam_refinement --jobs $(JOBS)
	printf '\n## 3. modulus 2000 Pa, clusters shrinking\n\n' >> $@.tmp
	$(CONV) $(OUT)/beam_refinement -o $(OUT)/convergence_modulus >> $@.tmp
	mkdir -p $(OUT)/beam_refinement_particles
	echo $(REFINE_PARTICLES) | tr ' ' '\n' | xargs -P $(JOBS) -I@ sh -c 'p=@; s=$${p%%:*}; n=$${p#*:}; k=$${n#*:}; n=$${n%%:*}; \
	    f=$(OUT)/beam_refinement_particles/$$s.h5; \
	    $(CSM) info $$f 2>/dev/null | grep -q "^  status  *ok$$" || $(CSM) run $(C)/beam_refinement.yaml --set "sweep={}" \
	    --set objects.0.sampling.spacing=$$s --set clustering.count=$$n --set time.substeps=$$k -o $$f --force --threads 1 >/dev/null'
	printf '\n## 3. modulus 2000 Pa, particles refined with the clusters\n\n' >> $@.tmp
	$(CONV) $(OUT)/beam_refinement_particles/*.h5 --by particles -o $(OUT)/convergence_particles >> $@.tmp
	mkdir -p $(OUT)/beam_convergence_particles
	echo $(REFINE_PARTICLES) | tr ' ' '\n' | xargs -P $(JOBS) -I@ sh -c 'p=@; s=$${p%%:*}; n=$${p#*:}; n=$${n%%:*}; \
	    f=$(OUT)/beam_convergence_particles/$$s.h5; \
	    $(CSM) info $$f 2>/dev/null | grep -q "^  status  *ok$$" || $(CSM) run $(C)/beam_convergence.yaml --set "sweep={}" \
	    --set solver.rotation=polar_apq --set objects.0.sampling.spacing=$$s --set clustering.count=$$n \
	    -o $$f --force --threads 1 >/dev/null'
	printf "\n## the same with alpha = 1 (the papers' settings, polar_apq)\n\n" >> $@.tmp
	$(CONV) $(OUT)/beam_convergence_particles/*.h5 --by particles -o $(OUT)/convergence_particles_alpha >> $@.tmp
	$(CSM) sweep $(C)/beam_refinement.yaml -o $(OUT)/beam_substeps_modulus --jobs $(JOBS) \
	    --set clustering.count=10 --set 'sweep={time.substeps: [4, 8, 16, 32]}'
	printf '\n## 3. the step: modulus 2000 Pa, 10 clusters, 4, 8, 16 and 32 substeps (csm check: 9 or more)\n\n' >> $@.tmp
	$(CONV) $(OUT)/beam_substeps_modulus --by substeps -o $(OUT)/convergence_substeps_modulus >> $@.tmp
	$(CSM) sweep $(C)/beam_convergence.yaml -o $(OUT)/beam_substeps_alpha --jobs $(JOBS) \
	    --set clustering.count=10 --set solver.rotation=polar_apq --set 'sweep={time.substeps: [4, 8, 16]}'
	printf "\n## the step with alpha = 1 (the papers' settings, polar_apq), 10 clusters, 4, 8 and 16 substeps\n\n" >> $@.tmp
	$(CONV) $(OUT)/beam_substeps_alpha --by substeps -o $(OUT)/convergence_substeps_alpha >> $@.tmp
	$(PY) $(A)/stiffness.py $(OUT)/beam_convergence@rotation=polar_apq $(OUT)/beam_convergence@rotation=polar_f $(OUT)/beam_refinement -o $(OUT)/convergence_stiffness >> $@.tmp
	mv $@.tmp $@

# Muller 2005 Fig 8: ms per frame against particles, rigid, linear and quadratic, on one core.
$(OUT)/scaling.md:
	$(CSM) sweep $(C)/scaling.yaml -o $(OUT)/scaling --jobs 1 --threads 1
	$(PY) $(A)/scaling.py $(OUT)/scaling --group mode -o $(OUT)/scaling > $@

# polar_apq against polar_f with non-isotropic clusters, spinning and stretched.
$(OUT)/rotation_study.md:
	$(CSM) sweep $(C)/rotation_study.yaml -o $(OUT)/rotation_study --jobs $(JOBS)
	$(PY) $(A)/compare.py $(OUT)/rotation_study --where iterations=0 --where conserve=none -q energy -q angular_momentum.z -o $(OUT)/rotation_study_sm > $@.tmp
	$(PY) $(A)/compare.py $(OUT)/rotation_study --where iterations=5 --where conserve=none -q energy -q angular_momentum.z -o $(OUT)/rotation_study_sl >> $@.tmp
	$(PY) $(A)/compare.py $(OUT)/rotation_study --where iterations=5 --where conserve=angular -q energy -q angular_momentum.z -o $(OUT)/rotation_study_sl_angular >> $@.tmp
	$(PY) $(A)/momenta.py $(OUT)/rotation_study >> $@.tmp
	mv $@.tmp $@

# (ours) The five integrators on the same scenes, each scene one material: 15 Pa (30 Pa for the
# stretched cube), with the substeps (5; 6) at which every cluster keeps h^2 k_c <= 1 (csm check:
# up to 0.71; 0.99), so that the explicit runs are not clamped to a softer solid than the implicit
# ones see, and the goals that keep momentum and angular momentum (conserve: angular, the
# default; the configs keep the papers' none, under which the strain limit's clamp pushes the
# body). Then stiffness against iterations (the cantilever at 500 Pa) and the convergence under
# refinement of the implicit two (beam_refinement at 4 substeps, which they need no more of). The
# zero-length spring has two points and no volume, so no modulus: xpbd and projective_dynamics
# cannot run it.
INTEGRATORS := [shape_matching, strain_limited, pbd, xpbd, projective_dynamics]
$(OUT)/integrators.md:
	$(CSM) sweep $(C)/spin_cube.yaml -o $(OUT)/integrators/spin_cube --jobs $(JOBS) --set solver.modulus=15 --set time.substeps=5 --set solver.conserve=angular --set 'sweep={solver.integrator: $(INTEGRATORS)}'
	$(CSM) sweep $(C)/stretch_cube.yaml -o $(OUT)/integrators/stretch_cube --jobs $(JOBS) --set solver.modulus=30 --set time.substeps=6 --set solver.conserve=angular --set 'sweep={solver.integrator: $(INTEGRATORS)}'
	$(CSM) sweep $(C)/drop_cube_strain_limited.yaml -o $(OUT)/integrators/drop_cube --jobs $(JOBS) --set solver.modulus=15 --set time.substeps=5 --set solver.conserve=angular --set 'sweep={solver.integrator: $(INTEGRATORS)}'
	$(PY) $(A)/integrators.py $(OUT)/integrators/spin_cube $(OUT)/integrators/stretch_cube $(OUT)/integrators/drop_cube > $@.tmp
	$(PY) $(A)/compare.py $(OUT)/integrators/spin_cube -q total_energy -q angular_momentum.z -o $(OUT)/integrators_spin_cube >> $@.tmp
	$(PY) $(A)/compare.py $(OUT)/integrators/stretch_cube -q total_energy -q max_strain --log -o $(OUT)/integrators_stretch_cube >> $@.tmp
	$(PY) $(A)/compare.py $(OUT)/integrators/drop_cube -q total_energy -q center_of_mass.y -o $(OUT)/integrators_drop_cube >> $@.tmp
	$(CSM) sweep $(C)/cantilever_iterations.yaml -o $(OUT)/integrators/iterations --jobs $(JOBS)
	$(PY) $(A)/iterations.py $(OUT)/integrators/iterations -o $(OUT)/integrators_iterations >> $@.tmp
	$(CSM) sweep $(C)/beam_refinement.yaml -o $(OUT)/integrators/refinement --jobs $(JOBS) --set time.substeps=4 \
	    --set 'sweep={solver.integrator: [xpbd, projective_dynamics], clustering.count: [10, 40, 160]}'
	$(PY) $(A)/convergence.py $(OUT)/integrators/refinement --where integrator=xpbd --last 2 -o $(OUT)/integrators_refinement_xpbd >> $@.tmp
	$(PY) $(A)/convergence.py $(OUT)/integrators/refinement --where integrator=projective_dynamics --last 2 -o $(OUT)/integrators_refinement_pd >> $@.tmp
	mv $@.tmp $@

# Contact (ours): two bunnies dropped onto each other and the ground, a stack of five cubes, the
# plastic block in a press, a beam folding onto itself and a sheet draped over a mesh collider;
# renders coloured by object, then the overlaps, energies, timings.
$(OUT)/contact.md:
	data/fetch_meshes.sh
	mkdir -p $(OUT)/contact
	$(CSM) run $(C)/two_bunnies.yaml -o $(OUT)/contact/two_bunnies.h5 --force
	$(CSM) run $(C)/stack.yaml -o $(OUT)/contact/stack.h5 --force
	$(CSM) run $(C)/press.yaml -o $(OUT)/contact/press.h5 --force
	$(CSM) run $(C)/fold.yaml -o $(OUT)/contact/fold.h5 --force
	$(CSM) run $(C)/fold.yaml -o $(OUT)/contact/fold_without_self.h5 --force --set contact.self=false
	$(CSM) run $(C)/drape.yaml -o $(OUT)/contact/drape.h5 --force
	$(PY) $(A)/render.py $(OUT)/contact/two_bunnies.h5 --frames 0,30,60,-1 --color object -o $(OUT)/two_bunnies > $@.tmp
	$(PY) $(A)/render.py $(OUT)/contact/stack.h5 --frames 0,20,-1 --color object -o $(OUT)/stack >> $@.tmp
	$(PY) $(A)/render.py $(OUT)/contact/press.h5 --frames 0,75,-1 --color displacement --view iso -o $(OUT)/press >> $@.tmp
	$(PY) $(A)/render.py $(OUT)/contact/fold.h5 --frames 20,35,50,-1 --view xy -o $(OUT)/fold >> $@.tmp
	$(PY) $(A)/render.py $(OUT)/contact/drape.h5 --frames 0,60,-1 --view iso -o $(OUT)/drape >> $@.tmp
	$(PY) $(A)/contact.py $(OUT)/contact/two_bunnies.h5 $(OUT)/contact/stack.h5 >> $@.tmp
	$(PY) $(A)/contact.py $(OUT)/contact/fold.h5 $(OUT)/contact/fold_without_self.h5 --self >> $@.tmp
	$(PY) $(A)/plasticity.py $(OUT)/contact/press.h5 >> $@.tmp
	mv $@.tmp $@
# Movies of the twisted and compressed beams (Debian's ffmpeg, which ./build.sh figures installs).
movies: $(OUT)/table1.md
	$(PY) $(A)/render.py $(OUT)/recluster/beam_twist.h5 --color new --view iso --every 2 --movie $(OUT)/beam_twist.mp4
	$(PY) $(A)/render.py $(OUT)/recluster/beam_compress_elastic_embedded.h5 --color new --view iso --every 2 --movie $(OUT)/beam_compress_elastic.mp4

clean-figures:
	rm -rf $(OUT)

# csm against a finite-element code (CalculiX, Debian's calculix-ccx) and textbook formulas:
# experiments/validation/. The cantilever is refined over VALIDATION_CLUSTERS at spacing 0.1 m and
# over VALIDATION_SPACINGS at 64 clusters (each dividing 0.2 m; 1/15 took 17 min on one core,
# 0.05 took 32, 0.025 would take many hours). VALIDATION_TORSION (SPACING:CLUSTERS,...) refines
# the torsion on the bar's first 2 m: 0.1:32 (the 64 clusters' size, 7 min) and 0.05:268 (the
# 512 clusters', 31 min). VALIDATION_BULGE (SPACING:CLUSTERS,...) refines the bulge rows: 0.1:96
# is the cube in clusters of the bar's size (1/96 m^3, the bar's 0.672/64), six runs of 1,331
# particles, 3 min each on one core; 0.05:512 is six runs of 9,261 particles, 40 to 55 min each.
# The refined runs go JOBS at a time; empty values leave them out (VALIDATION_TORSION=
# VALIDATION_BULGE= for the quick table).
# Finished runs are kept (out/validation/*.h5 with the settings they ran with beside them in
# .args): an interrupted make validation goes on where it stopped; rm -r out/validation starts over.
VALIDATION_CLUSTERS ?= 32,64,128
VALIDATION_SPACINGS ?= 0.1,0.0666666666666667
VALIDATION_TORSION ?= 0.05:268
VALIDATION_BULGE ?= 0.1:96,0.05:512
validation: build
	$(PY) experiments/validation/run.py --csm $(CSM) -o out/validation --clusters $(VALIDATION_CLUSTERS) \
	    --spacings $(VALIDATION_SPACINGS) --torsion "$(VALIDATION_TORSION)" --bulge "$(VALIDATION_BULGE)" --jobs $(JOBS)
	$(PY) experiments/validation/contact.py --csm $(CSM) -o out/validation

# The parameter reference (docs/parameters.md), from the parameter tables (csm list --markdown).
reference: build
	experiments/reference.sh $(CSM) docs/parameters.md
