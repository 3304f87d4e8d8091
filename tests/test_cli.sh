#!/usr/bin/env bash
# The command line: exit codes and one-line messages for bad input, csm list and csm check.
source "$(dirname "$0")/lib.sh" "$@"


printf 'objects:\n  - shape: {type: box}\nsolver: {alpha: 3}\n' >"$tmp/bad.yaml"
printf 'objects:\n  - shape: {type: box, size: [0.2, 0.2, 0.2]}\n    sampling: {spacing: 0.1}\ntime: {frames: 3}\n' >"$tmp/ok.yaml"
# a thin torus whose grid points all fall in its hole or outside its tube
printf 'objects:\n  - shape: {type: torus, major: 0.5, minor: 0.01}\n    sampling: {spacing: 0.45}\n' >"$tmp/empty.yaml"

expect 2 "usage" -- "$csm"
expect 2 "unknown command 'frobnicate'" -- "$csm" frobnicate
expect 0 "integrator \(solver.integrator\)" -- "$csm" list
for plugin in shape_matching polar_apq polar_f random_radius gravity plane none; do
    expect 0 "^  $plugin — " -- "$csm" list
done
expect 0 "alpha +real +default 0.5 in \[0, 1\]" -- "$csm" list
expect 2 "bad.yaml:3: solver.alpha = 3 is outside \[0, 1\]" -- "$csm" check "$tmp/bad.yaml"
expect 2 "bad.yaml:3: solver.alpha = 3 is outside" -- "$csm" run "$tmp/bad.yaml" -o "$tmp/bad.h5"
[ ! -e "$tmp/bad.h5" ] && pass_ || { fail_ "a log was left for a bad config"; }
expect 2 "no particle inside the shape" -- "$csm" check "$tmp/empty.yaml"
# solver.modulus: check reports the gains, and a step too coarse for the modulus
expect 0 "solver.modulus = 500 Pa: h\\^2 k_c up to 0\\.[0-9]+ \\(mean 0\\.[0-9]+, at most 1 for a stable step\\) at h = [0-9.]+ s; alpha_c 0.2[0-9]* \.\. 0.2" -- "$csm" check "$root/tests/configs/cantilever.yaml"
expect 0 "16 of 16 clusters are clamped to 1 .*too coarse for the modulus \(time.substeps: [0-9]+ or more\)" -- \
    "$csm" check "$root/tests/configs/cantilever.yaml" --set time.substeps=1 --set time.dt=0.05
# --threads is bounded (libgomp aborts on 1000 threads and crashes on 65536)
expect 2 "^csm: --threads 65536: expected an integer from 1 to [0-9]+" -- "$csm" run "$tmp/ok.yaml" --threads 65536 -o "$tmp/t.h5"
expect 2 "^csm: --threads 1000: expected an integer from 1 to [0-9]+" -- "$csm" sweep "$tmp/ok.yaml" --threads 1000 -o "$tmp/sw"
expect 2 "--threads 4096: expected integers from 1 to [0-9]+" -- "$csm" bench bunny --threads 4096
# the run's line gives the median ms/frame and the threads it ran on; OMP_NUM_THREADS decides
# when --threads is not given
expect 0 "ms/frame \(median, 2 threads\)" -- "$csm" run "$tmp/ok.yaml" --threads 2 -o "$tmp/t.h5" --force
expect 0 "ms/frame \(median, 1 thread\)" -- env OMP_NUM_THREADS=1 "$csm" run "$tmp/ok.yaml" -o "$tmp/t.h5" --force
# a sweep over integrators whose stiffness comes from different keys compares different materials
expect 2 "sweep solver.integrator compares different materials: shape_matching \(run 0\) takes its stiffness from solver.alpha = 0.5, xpbd \(run 1\) from solver.modulus = 10000 Pa" -- \
    "$csm" sweep "$tmp/ok.yaml" -o "$tmp/mat" --set 'sweep={solver.integrator: [shape_matching, xpbd]}'
[ ! -e "$tmp/mat" ] && pass_ || { fail_ "the refused sweep left a folder"; }
expect 0 "is valid" -- "$csm" check "$tmp/ok.yaml" --set solver.modulus=100 --set 'sweep={solver.integrator: [shape_matching, pbd, xpbd, projective_dynamics]}'
# help: csm --help lists --resume; COMMAND --help is that command's usage and exit 0
expect 0 "csm run --resume LOG.h5" -- "$csm" --help
expect 0 "csm run --resume LOG.h5" -- "$csm" run --help
expect 0 "csm sweep CONFIG" -- "$csm" sweep -h
expect 0 "csm info OUT.h5" -- "$csm" info --help
# a note about an unused key is said once, not once per run of a sweep
printf 'name: notes\ntime: {frames: 2}\nobjects:\n  - shape: {type: box, size: [0.3, 0.3, 0.3]}\n    sampling: {spacing: 0.1}\nsolver: {integrator: pbd, alpha: 0.3}\nsweep:\n  solver.iterations: [1, 2, 3]\n' >"$tmp/notes.yaml"
notes=$("$csm" sweep "$tmp/notes.yaml" -o "$tmp/notes" --jobs 1 2>&1 | grep -c "alpha is not used by pbd")
[ "$notes" = 1 ] && pass_ || { fail_ "the sweep said the unused-key note $notes times"; }
# a failed run names its status's kind after the full message, not a message cut at 60 characters
printf 'name: fast\ntime: {frames: 3, max_speed: 0.001}\nobjects:\n  - shape: {type: box, size: [0.3, 0.3, 0.3]}\n    sampling: {spacing: 0.1}\n    velocity: [1, 0, 0]\n' >"$tmp/fast.yaml"
expect 1 "log \(status 'failed'\)" -- "$csm" run "$tmp/fast.yaml" -o "$tmp/fast.h5"
# -o takes any path: a quote and a backslash in it are the file's name, not YAML
expect 0 "sidecar: .*/q\"uo\\\\te.xmf" -- "$csm" run "$tmp/ok.yaml" -o "$tmp/q\"uo\\te.h5"
[ -s "$tmp/q\"uo\\te.h5" ] && pass_ || { fail_ "the log with a quote in its name is missing"; }
# csm info on an HDF5 file that is not a csm log
/usr/bin/python3 -c "import h5py; h5py.File('$tmp/plain.h5', 'w')['x'] = [1, 2, 3]"
expect 2 "plain.h5: an HDF5 file, but not a csm log" -- "$csm" info "$tmp/plain.h5"
expect 0 "bunny.yaml:[0-9]+: solver.alpha is not used when solver.modulus is set" -- \
    "$csm" check "$root/experiments/configs/bunny.yaml" --set solver.modulus=100
expect 0 "solver.material is not used with solver.energy: goals" -- \
    "$csm" check "$root/experiments/validation/bulge.yaml" --set solver.material=neo_hookean --set solver.energy=goals
expect 0 "solver.material is not used without a modulus" -- \
    "$csm" check "$root/experiments/configs/bunny.yaml" --set solver.material=neo_hookean
expect 0 "conserve +none\|linear\|angular +default angular" -- "$csm" list
expect 0 "modulus +real +default 0" -- "$csm" list
expect 2 "cannot open the config" -- "$csm" check "$tmp/missing.yaml"
expect 2 "is a folder, not a config file" -- "$csm" run "$tmp"
# only regular files of bounded size are read: a device, a pipe (which would block) and a large file
expect 2 "/dev/zero: is a device or socket, not a config file" -- "$csm" check /dev/zero
mkfifo "$tmp/pipe.yaml"
expect 2 "pipe.yaml: is a pipe, not a config file" -- timeout 10 "$csm" check "$tmp/pipe.yaml"
head -c 17000000 /dev/zero | tr '\0' '#' >"$tmp/huge.yaml"
expect 2 "huge.yaml: 17000000 bytes, more than a config may have \(16 MiB\)" -- "$csm" check "$tmp/huge.yaml"
printf 'objects:\n  - shape: {type: mesh, path: /dev/zero}\n' >"$tmp/zero_mesh.yaml"
expect 2 "/dev/zero: is a device or socket, not a mesh file" -- timeout 10 "$csm" check "$tmp/zero_mesh.yaml"
expect 2 "unknown or incomplete option '--fast'" -- "$csm" run "$tmp/ok.yaml" --fast
expect 2 "--threads x: expected an integer from 1 to" -- "$csm" run "$tmp/ok.yaml" --threads x
expect 0 "substeps: 1" -- "$csm" check "$tmp/ok.yaml"
expect 0 "alpha: 0.25" -- "$csm" check "$tmp/ok.yaml" --set solver.alpha=0.25
expect 0 "log: +$tmp/sub/dir/ok.h5" -- "$csm" run "$tmp/ok.yaml" -o "$tmp/sub/dir/ok.h5"
expect 2 "already exists \(use --force" -- "$csm" run "$tmp/ok.yaml" -o "$tmp/sub/dir/ok.h5"
expect 0 "sidecar: $tmp/sub/dir/ok.xmf" -- "$csm" run "$tmp/ok.yaml" -o "$tmp/sub/dir/ok.h5" --force
expect 0 "status +ok" -- "$csm" info "$tmp/sub/dir/ok.h5"
expect 0 "frames +4 " -- "$csm" info "$tmp/sub/dir/ok.h5"
expect 2 "not an HDF5 file" -- "$csm" info "$tmp/ok.yaml"
# energy_error beyond 1 % of the energy given names its known sources: the papers' goals on the
# spinning cube (+1.9 %), none with the default goals (+0 %)
"$csm" run "$root/experiments/configs/spin_cube.yaml" -o "$tmp/spin.h5" --set time.frames=60 >/dev/null 2>&1
expect 0 "known sources: the papers' goals \(conserve none, rotation polar_f\) are no energy's gradient" -- \
    "$csm" info "$tmp/spin.h5"
"$csm" run "$root/experiments/configs/spin_cube.yaml" -o "$tmp/spin.h5" --force --set time.frames=60 \
    --set solver.conserve=angular --set solver.rotation=polar_apq >/dev/null 2>&1
check "no known sources where energy_error is within 1 %" sh -c '! "$1" info "$2" | grep -q "known sources"' sh "$csm" "$tmp/spin.h5"
# projective dynamics stopped short of its tolerance (2 iterations): +71 % created
"$csm" run "$root/experiments/configs/spin_cube.yaml" -o "$tmp/spin.h5" --force --set time.frames=60 \
    --set solver.conserve=angular --set solver.rotation=polar_apq --set solver.integrator=projective_dynamics \
    --set solver.modulus=1000 --set solver.iterations=2 >/dev/null 2>&1
expect 0 "known sources: projective_dynamics' iterations stopped short of the tolerance \(/diagnostics/iteration_residual up to" -- \
    "$csm" info "$tmp/spin.h5"
# a body at rest all run holds round-off, which is given as joules, not as a share of nothing
"$csm" run "$root/experiments/configs/rotation_study.yaml" -o "$tmp/rest.h5" --set time.frames=10 >/dev/null 2>&1
expect 0 "energy budget +the bodies held and were given no energy \(" -- "$csm" info "$tmp/rest.h5"
expect 2 "nothing.h5: no such file" -- "$csm" info "$tmp/nothing.h5"
expect 2 ": a folder, not a log" -- "$csm" info "$tmp"
expect 2 "nothing.h5: no such file" -- "$csm" run --resume "$tmp/nothing.h5"
# every shipped config validates (test_config checks that their resolved configs load again)
for c in "$root"/experiments/configs/*.yaml; do
    expect 0 "is valid" -- "$csm" check "$c"
done

# meshes and particle lists
printf 'OFF\n4 2 0\n0 0 0\n1 0 0\n0 1 0\n1 1 0\n3 0 1 2\n3 0 2 1\n' >"$tmp/flat.off"
printf 'OFF\n4 4 0\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 2 1\n3 0 1 3\n3 0 3 2\n' >"$tmp/cut.off"
printf 'OFF\n4 4 0\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 2 1\n3 0 1 3\n3 0 3 2\n3 1 2 3\n' >"$tmp/tet.off"
mesh_cfg() { printf 'objects:\n  - shape: {type: mesh, path: %s}\n    sampling: {spacing: %s}\n' "$1" "$2" >"$tmp/mesh.yaml"; }
mesh_cfg "$tmp/flat.off" 0.1
expect 2 "flat.off: the mesh encloses no volume" -- "$csm" check "$tmp/mesh.yaml"
mesh_cfg "$tmp/cut.off" 0.1
expect 2 "cut.off:9: truncated: the header promises 4 faces" -- "$csm" check "$tmp/mesh.yaml"
mesh_cfg "$tmp" 0.1
expect 2 "is a folder, not a mesh file" -- "$csm" check "$tmp/mesh.yaml"
mesh_cfg "$tmp/tet.off" 2
expect 2 "mesh.yaml:2: objects\[0\]: no particle inside the shape" -- "$csm" check "$tmp/mesh.yaml"
printf 'objects:\n  - shape: {type: points, positions: [[0, 0, 0], [1, 0]]}\n' >"$tmp/pts.yaml"
expect 2 "pts.yaml:2: objects\[0\].shape.positions\[1\] must be a point" -- "$csm" check "$tmp/pts.yaml"
printf 'objects:\n  - shape: {type: points, positions: [[0, 0, 0], [1, .nan, 0]]}\n' >"$tmp/pts.yaml"
expect 2 "pts.yaml:2: objects\[0\].shape.positions = .nan is not a finite number" -- "$csm" check "$tmp/pts.yaml"
printf 'objects:\n  - shape: {type: points, positions: []}\n' >"$tmp/pts.yaml"
expect 2 "positions must be a non-empty list of points" -- "$csm" check "$tmp/pts.yaml"
expect 2 "--set #1: time.max_speed = -1 is outside" -- "$csm" check "$tmp/ok.yaml" --set time.max_speed=-1

# output paths that cannot be written
expect 2 "cannot create folder .*: Not a directory" -- "$csm" run "$tmp/ok.yaml" -o "$tmp/ok.yaml/sub/out.h5"
expect 2 "sub exists and is not an HDF5 log; --force overwrites only logs" -- "$csm" run "$tmp/ok.yaml" -o "$tmp/sub" --force
# -o naming the config itself: --force never overwrites a config with a log
cp "$tmp/ok.yaml" "$tmp/self.yaml"
expect 2 "self.yaml exists and is not an HDF5 log" -- "$csm" run "$tmp/self.yaml" -o "$tmp/self.yaml" --force
cmp -s "$tmp/ok.yaml" "$tmp/self.yaml" && pass_ || { fail_ "-o self.yaml --force changed the config"; }
# an empty file where the log goes (what a log's failed creation leaves) is replaced by --force
: >"$tmp/empty.h5"
"$csm" run "$tmp/ok.yaml" -o "$tmp/empty.h5" --force >/dev/null 2>&1 && [ -s "$tmp/empty.h5" ] && pass_ ||
    fail_ "--force did not replace an empty file"
# name: is a file name
printf 'name: ../../x\nobjects:\n  - shape: {type: box, size: [0.2, 0.2, 0.2]}\n    sampling: {spacing: 0.1}\n' >"$tmp/climb.yaml"
expect 2 "climb.yaml:1: name = '../../x': a run's name becomes a file name" -- "$csm" run "$tmp/climb.yaml"
expect 2 "--set #1: name = 'a.b c'" -- "$csm" check "$tmp/ok.yaml" --set "name=a.b c"
# a spacing that asks for too many grid points names the file and line
printf 'objects:\n  - shape: {type: box, size: [1, 1, 1]}\n    sampling: {spacing: 1e-6}\n' >"$tmp/dense.yaml"
expect 2 "dense.yaml:3: objects\[0\].sampling: spacing 1e-06 gives about 1e\+18 grid points" -- "$csm" check "$tmp/dense.yaml"
expect 2 "cannot create the log's lock /sys/csm_out.h5.lock: Permission denied" -- "$csm" run "$tmp/ok.yaml" -o /sys/csm_out.h5 --force

# the parameter reference (docs/parameters.md) is what csm list --markdown prints now
check "docs/parameters.md is current (make reference)" "$root/experiments/reference.sh" "$csm" "$root/docs/parameters.md" --check
expect 0 "^\| \`gamma\` \| real \| \`0.2\` \| \[0, 1e\+06\] \|" -- "$csm" list --markdown
expect 2 "usage: csm list \[--markdown\]" -- "$csm" list --json

# messages that lost their reason: a loop of symbolic links, a PLY mesh, a path that is not
# UTF-8 (it was blamed on "--set #2"), and a path too long (it made 2,047 folders first)
msg=$(mktemp -d)
ln -s b.off "$msg/a.off" && ln -s a.off "$msg/b.off"
printf 'name: m\nobjects:\n  - shape: {type: mesh, path: a.off}\n' >"$msg/loop.yaml"
expect 2 "loop.yaml:3: objects\[0\].shape.path: mesh .*a.off: Too many levels of symbolic links" -- "$csm" run "$msg/loop.yaml" -o "$msg/l.h5"
printf 'ply\nformat ascii 1.0\nelement vertex 3\nend_header\n0 0 0\n1 0 0\n0 1 0\n' >"$msg/m.ply"
printf 'name: m\nobjects:\n  - shape: {type: mesh, path: m.ply}\n' >"$msg/ply.yaml"
expect 2 "m.ply:1: a PLY file; meshes are read from OFF or OBJ text" -- "$csm" run "$msg/ply.yaml" -o "$msg/p.h5"
printf 'name: c\nobjects:\n  - shape: {type: box, size: [0.2, 0.2, 0.2]}\n    sampling: {spacing: 0.1}\n' >"$msg/c.yaml"
expect 2 "^csm: -o: the path is not UTF-8 text \(byte 0xff\)" -- "$csm" run "$msg/c.yaml" -o "$msg/$(printf 'bad\377').h5" --frames 1
deep="$msg/deep/$(printf 'a/%.0s' $(seq 3000))x.h5"
expect 2 "the path is 60[0-9][0-9] bytes long, more than 4095" -- "$csm" run "$msg/c.yaml" -o "$deep" --frames 1
check "... and no folder made" [ ! -e "$msg/deep" ]
# a message too long for its buffer keeps its head and its reason (it was cut at 1024 bytes)
long="$msg/$(printf 'b%.0s' $(seq 200))"
for _ in 1 2 3 4 5 6 7 8 9 10; do long="$long/$(printf 'b%.0s' $(seq 200))"; done
expect 2 "^csm: $msg/[b/]+ \.\.\. [b/]+/x.yaml: cannot open the config: No such file or directory$" -- "$csm" run "$long/x.yaml"
# two parts facing opposite ways enclose no net volume: said so, not "flat or a single point"
"$py" -c 'import sys
V, F = [], []
for ox, flip in ((0, False), (3, True)):
    b = len(V)
    V += [(x + ox, y, z) for x in (0, 1) for y in (0, 1) for z in (0, 1)]
    for q in ((0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)):
        for t in ((q[0], q[1], q[2]), (q[0], q[2], q[3])):
            F.append(tuple(b + i for i in (t[::-1] if flip else t)))
with open(sys.argv[1], "w") as f:
    f.write("OFF\n%d %d 0\n" % (len(V), len(F)) + "".join("%g %g %g\n" % v for v in V) + "".join("3 %d %d %d\n" % t for t in F))' "$msg/two.off"
printf 'name: m\nobjects:\n  - shape: {type: mesh, path: two.off}\n' >"$msg/two.yaml"
expect 2 "two.off: the mesh's faces enclose no net volume .*parts of it face opposite ways" -- "$csm" run "$msg/two.yaml" -o "$msg/t.h5"
# a log whose stored config no longer parses: named as the log's, without the parser's address
"$csm" run "$msg/c.yaml" -o "$msg/bc.h5" --frames 2 >/dev/null 2>&1
"$py" -c 'import h5py, sys
f = h5py.File(sys.argv[1], "r+")
f.attrs["config"] = f.attrs["config"].replace("name: c", "name: [c")' "$msg/bc.h5"
expect 2 "^csm: .*bc.h5 \(the config it stores, from .*c.yaml\):[0-9]+:[0-9]+: error: " -- "$csm" run --resume "$msg/bc.h5" --frames 4
check "... without <memory-@" sh -c '! "$1" run --resume "$2" --frames 4 2>&1 | grep -q "<memory-@"' sh "$csm" "$msg/bc.h5"
rm -rf "$msg"

finish
