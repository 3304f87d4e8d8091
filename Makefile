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
           $(OUT)/convergence.md $(OUT)/scaling.md $(OUT)/rotation_study.md

.PHONY: figures build clean-figures movies
figures: $(FIGURES)
	@echo "figures in $(OUT)/:"; ls $(OUT)/*.md $(OUT)/*.png

# A build folder configured before keeps its settings (./build.sh test turns the tests on);
# a new one is configured as ./build.sh run does, without the tests and their packages.
build:
	test -f build/CMakeCache.txt || cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF >/dev/null
	cmake --build build -j $(JOBS)

# Figures need the binary, but do not remake when only its time stamp moved.
$(FIGURES): | build

# Bargteil-Jones 2014 Fig 1: the bunny thrown onto the ground.
$(OUT)/bunny.md:
	data/fetch_meshes.sh
	$(CSM) run $(C)/bunny.yaml -o $(OUT)/bunny/bunny.h5 --force
	$(PY) $(A)/render.py $(OUT)/bunny/bunny.h5 --frames 0,30,60,-1 -o $(OUT)/bunny
	$(PY) $(A)/compare.py $(OUT)/bunny/bunny.h5 -q energy -q center_of_mass.y -o $(OUT)/bunny_energy > $@

# Bargteil-Jones 2014 Fig 2: the spinning cube, shape matching against PBD, both rotations.
$(OUT)/spin_cube.md:
	$(CSM) sweep $(C)/spin_cube.yaml -o $(OUT)/spin_cube --jobs $(JOBS) \
	    --set 'sweep={solver.integrator: [shape_matching, pbd], solver.rotation: [polar_apq, polar_f]}'
	$(PY) $(A)/compare.py $(OUT)/spin_cube -q kinetic_energy -q angular_momentum.z -o $(OUT)/spin_cube > $@

# Bargteil-Jones 2014 Sec 3: the cube stretched 50 % and released; 29 clusters or one, shape
# matching or strain limiting.
$(OUT)/stretch_cube.md:
	$(CSM) sweep $(C)/stretch_cube.yaml -o $(OUT)/stretch_cube --jobs $(JOBS) \
	    --set 'sweep={clustering.radius: [0.35, 2], solver.iterations: [0, 5]}'
	$(PY) $(A)/compare.py $(OUT)/stretch_cube -q kinetic_energy -q max_strain --log -o $(OUT)/stretch_cube > $@

# Bargteil-Jones 2014 Sec 3: the cube dropped on the ground, shape matching, strain limiting, PBD.
$(OUT)/drop_cube.md:
	$(CSM) sweep $(C)/drop_cube_strain_limited.yaml -o $(OUT)/drop_cube --jobs $(JOBS) \
	    --set 'sweep={solver.integrator: [shape_matching, strain_limited, pbd]}'
	$(PY) $(A)/compare.py $(OUT)/drop_cube -q kinetic_energy -q max_strain -q center_of_mass.y -o $(OUT)/drop_cube > $@

# Bargteil-Jones 2014 Sec 3: the zero-rest-length spring.
$(OUT)/spring.md:
	$(CSM) sweep $(C)/spring.yaml -o $(OUT)/spring --jobs $(JOBS) \
	    --set 'sweep={solver.integrator: [shape_matching, pbd]}'
	$(PY) $(A)/compare.py $(OUT)/spring -q position:1.x -q kinetic_energy -o $(OUT)/spring > $@

# Falkenstein 2017 Sec 3.1: the stretched rectangle, R from A_pq against R from F.
$(OUT)/rotation_rectangle.md:
	$(CSM) sweep $(C)/rotation_rectangle.yaml -o $(OUT)/rotation_rectangle --jobs $(JOBS) \
	    --set 'sweep={solver.rotation: [polar_apq, polar_f]}'
	$(PY) $(A)/compare.py $(OUT)/rotation_rectangle -q angular_momentum.z -q kinetic_energy -o $(OUT)/rotation_rectangle > $@
	$(PY) $(A)/summary.py $(OUT)/rotation_rectangle/*.h5 >> $@

# Falkenstein 2017 Table 1 (and the runs of Fig 2 and Fig 4).
$(OUT)/table1.md:
	mkdir -p $(OUT)
	experiments/recluster.sh $(CSM) > $@.tmp
	mkdir -p $(OUT)/recluster && cp out/recluster/*.h5 out/recluster/*.xmf $(OUT)/recluster/
	mv $@.tmp $@

# Falkenstein 2017 Fig 2 and Fig 4: the final frames, coloured by the closest cluster centre,
# grey where that cluster is one of the initial ones.
$(OUT)/beams.md: $(OUT)/table1.md
	$(PY) $(A)/render.py $(OUT)/recluster/beam_compress_embedded.h5 --frames 120,-1 --color new --view iso -o $(OUT)/fig2_plastic > $@
	$(PY) $(A)/render.py $(OUT)/recluster/beam_compress_elastic_embedded.h5 --frames 120,-1 --color new --view iso -o $(OUT)/fig2_elastic >> $@
	$(PY) $(A)/render.py $(OUT)/recluster/beam_twist.h5 --frames 60,-1 --color new --view iso -o $(OUT)/fig4_twist >> $@
	$(PY) $(A)/render.py $(OUT)/recluster/beam_twist.h5 --frames -1 --color displacement --view iso -o $(OUT)/fig4_twist_set >> $@

# Falkenstein 2017 Fig 3: the cantilever with 10 to 640 clusters, both rotations.
$(OUT)/convergence.md:
	$(CSM) sweep $(C)/beam_convergence.yaml -o $(OUT)/beam_convergence --jobs $(JOBS)
	$(PY) $(A)/convergence.py $(OUT)/beam_convergence --where rotation=polar_apq --last 2 -o $(OUT)/convergence_polar_apq > $@.tmp
	echo >> $@.tmp
	$(PY) $(A)/convergence.py $(OUT)/beam_convergence --where rotation=polar_f --last 2 -o $(OUT)/convergence_polar_f >> $@.tmp
	mv $@.tmp $@

# Muller 2005 Fig 8: ms per frame against particles, rigid, linear and quadratic, on one core.
$(OUT)/scaling.md:
	$(CSM) sweep $(C)/scaling.yaml -o $(OUT)/scaling --jobs 1 --threads 1
	$(PY) $(A)/scaling.py $(OUT)/scaling --group mode -o $(OUT)/scaling > $@

# polar_apq against polar_f with non-isotropic clusters, spinning and stretched.
$(OUT)/rotation_study.md:
	$(CSM) sweep $(C)/rotation_study.yaml -o $(OUT)/rotation_study --jobs $(JOBS)
	$(PY) $(A)/compare.py $(OUT)/rotation_study --where iterations=0 -q energy -q angular_momentum.z -o $(OUT)/rotation_study_sm > $@.tmp
	$(PY) $(A)/compare.py $(OUT)/rotation_study --where iterations=5 -q energy -q angular_momentum.z -o $(OUT)/rotation_study_sl >> $@.tmp
	mv $@.tmp $@

# Movies of the twisted and compressed beams (needs Debian's ffmpeg).
movies: $(OUT)/table1.md
	$(PY) $(A)/render.py $(OUT)/recluster/beam_twist.h5 --color new --view iso --every 2 --movie $(OUT)/beam_twist.mp4
	$(PY) $(A)/render.py $(OUT)/recluster/beam_compress_elastic_embedded.h5 --color new --view iso --every 2 --movie $(OUT)/beam_compress_elastic.mp4

clean-figures:
	rm -rf $(OUT)
