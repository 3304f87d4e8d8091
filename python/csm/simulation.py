"""A csm simulation stepped in this process, through libcsm.so's C API (api/csm.h) and ctypes.

    sim = csm.Simulation("experiments/configs/bunny.yaml", set={"solver.modulus": 2e4})
    sim.step(10)                       # frames; sim.steps(n) for single steps
    sim.x, sim.v                       # (n, 3) views of the library's arrays: no copy
    sim.external_force[:] = f          # N per particle, applied from the next step on
    sim.clusters, sim.diagnostics, sim.time, sim.frame
    state = sim.checkpoint(); sim.restore(state)

The library is found from the environment variable CSM_LIBRARY, then beside this package (pip
install copies it from the build), then in the build folder of the source tree the package sits
in, then on the system's library path.
"""
import ctypes
import ctypes.util
import json
import os
import tempfile

import numpy as np

from ._rows import Memberships

__all__ = ["Simulation", "run", "CsmError", "ConfigError", "SimulationError", "library"]

API_VERSION = 1


class CsmError(Exception):
    """A failure of csm; the message is the one the command line prints."""


class ConfigError(CsmError):
    """Bad input: a config, an override, an argument (the command line's exit status 2)."""


class SimulationError(CsmError):
    """A run that failed: a step went unstable, a log could not be written (exit status 1)."""


def _raise(code, message):
    raise (ConfigError if code == 2 else SimulationError)(message)


class _Options(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("log", ctypes.c_char_p), ("log_config", ctypes.c_int),
                ("force", ctypes.c_int), ("resume", ctypes.c_int), ("threads", ctypes.c_int)]


_P = ctypes.c_void_p
_D, _I32, _I64 = ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_int32), ctypes.c_int64
_SIGNATURES = {
    "csm_api_version": (ctypes.c_int, []),
    "csm_simulation_create": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p),
                                             ctypes.c_int, ctypes.POINTER(_Options), ctypes.POINTER(_P),
                                             ctypes.c_char_p, ctypes.c_size_t]),
    "csm_simulation_finish": (ctypes.c_int, [_P]),
    "csm_simulation_destroy": (ctypes.c_int, [_P]),
    "csm_simulation_error": (ctypes.c_char_p, [_P]),
    "csm_simulation_step": (ctypes.c_int, [_P, _I64]),
    "csm_simulation_frames": (ctypes.c_int, [_P, _I64]),
    "csm_simulation_particle_count": (ctypes.c_int32, [_P]),
    "csm_simulation_time": (ctypes.c_double, [_P]),
    "csm_simulation_frame": (_I64, [_P]),
    "csm_simulation_step_count": (_I64, [_P]),
    "csm_simulation_dt": (ctypes.c_double, [_P]),
    "csm_simulation_frames_wanted": (_I64, [_P]),
    "csm_simulation_log_path": (ctypes.c_char_p, [_P]),
    "csm_simulation_substeps": (ctypes.c_int32, [_P]),
    "csm_simulation_positions": (_D, [_P]),
    "csm_simulation_velocities": (_D, [_P]),
    "csm_simulation_masses": (_D, [_P]),
    "csm_simulation_rest_positions": (_D, [_P]),
    "csm_simulation_external_force": (_D, [_P]),
    "csm_simulation_pin": (ctypes.c_int, [_P, ctypes.c_int32, ctypes.c_int]),
    "csm_simulation_pinned": (ctypes.c_int, [_P, ctypes.c_int32]),
    "csm_simulation_cluster_count": (ctypes.c_int32, [_P]),
    "csm_simulation_membership_count": (ctypes.c_int32, [_P]),
    "csm_simulation_cluster_offsets": (_I32, [_P]),
    "csm_simulation_cluster_members": (_I32, [_P]),
    "csm_simulation_cluster_weights": (_D, [_P]),
    "csm_simulation_cluster_centers": (_D, [_P]),
    "csm_simulation_cluster_rotations": (_D, [_P]),
    "csm_simulation_cluster_plastic": (_D, [_P]),
    "csm_simulation_cluster_states": (_I32, [_P]),
    "csm_simulation_cluster_ids": (_I32, [_P]),
    "csm_diagnostic_count": (ctypes.c_int, []),
    "csm_diagnostic_name": (ctypes.c_char_p, [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]),
    "csm_simulation_diagnostics": (ctypes.c_int, [_P, _D, ctypes.c_int]),
    "csm_simulation_checkpoint": (ctypes.c_int, [_P, ctypes.c_char_p]),
    "csm_simulation_restore": (ctypes.c_int, [_P, ctypes.c_char_p]),
    "csm_simulation_warning": (ctypes.c_char_p, [_P]),
}
_lib = None


def _candidates():
    if os.environ.get("CSM_LIBRARY"):  # when given, the only one
        yield os.path.abspath(os.environ["CSM_LIBRARY"])
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "libcsm.so")
    yield os.path.join(here, "..", "..", "build", "libcsm.so")
    found = ctypes.util.find_library("csm")
    if found:
        yield found


def library():
    """libcsm.so, loaded once (RTLD_GLOBAL: the plugins a config loads resolve csm's functions from
    it), with the argument types of every function this module calls."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in _candidates():
        if not os.path.exists(path) and os.path.sep in path:
            tried.append(path)
            continue
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        for name, (res, args) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        if lib.csm_api_version() != API_VERSION:
            raise CsmError(f"{path}: C API version {lib.csm_api_version()}, this package speaks {API_VERSION}")
        _lib = lib
        return lib
    raise CsmError("libcsm.so not found (tried " + ", ".join(tried) + "): build csm, or set CSM_LIBRARY")


def _overrides(set):
    """--set overrides from a dict (values written as JSON, which YAML reads) or a list of
    "key=value" strings."""
    if set is None:
        return []
    if isinstance(set, dict):
        return [f"{k}={json.dumps(v)}" for k, v in set.items()]
    return [str(s) for s in set]


class _Handle:
    """The C simulation, freed when nothing refers to it any more: neither its Simulation nor a
    view of its arrays (each view's base keeps the handle)."""

    def __init__(self, lib, ptr):
        self.lib, self.ptr = lib, ptr

    def __del__(self):
        if self.ptr:
            self.lib.csm_simulation_destroy(self.ptr)
            self.ptr = None


class Clusters(Memberships):
    """The clusters of the simulation now, copied: k rows of ids (stable over reclustering), state
    (0 active, 1 fading out, 2 fading in), com (k, 3), R (k, 3, 3), Fp (k, 3, 3); per membership
    member (particle ids), weight and cluster; offsets (k + 1) into them; members(c) and
    weights(c) give one cluster's."""

    def __init__(self, lib, s):
        k, m = lib.csm_simulation_cluster_count(s), lib.csm_simulation_membership_count(s)

        def copy(ptr, shape, dtype):
            size = int(np.prod(shape))
            return np.ctypeslib.as_array(ptr, (size,)).astype(dtype).reshape(shape) if size else np.zeros(shape, dtype)
        self.count = k
        self.offsets = copy(lib.csm_simulation_cluster_offsets(s), (k + 1,), np.int64)
        self.member = copy(lib.csm_simulation_cluster_members(s), (m,), np.int32)
        self.weight = copy(lib.csm_simulation_cluster_weights(s), (m,), np.float64)
        self.com = copy(lib.csm_simulation_cluster_centers(s), (k, 3), np.float64)
        self.R = copy(lib.csm_simulation_cluster_rotations(s), (k, 3, 3), np.float64)
        self.Fp = copy(lib.csm_simulation_cluster_plastic(s), (k, 3, 3), np.float64)
        self.state = copy(lib.csm_simulation_cluster_states(s), (k,), np.int32)
        self.ids = copy(lib.csm_simulation_cluster_ids(s), (k,), np.int32)
        self.cluster = np.repeat(np.arange(k), np.diff(self.offsets))


class Simulation:
    """A simulation of a config (a file, or YAML `text` with `config` the name its messages give
    it) with overrides `set` ({"solver.modulus": 2e4} or ["solver.modulus=2e4"]), stepped here.

    log: None writes no log; a path writes the HDF5 log `csm run` writes there (force=True
    replaces an existing one); True writes it at the config's output.path. threads: OpenMP threads
    while it steps (0: the default), as csm run --threads. Bad input raises ConfigError, a failed
    run SimulationError, with the command line's message. Use it in a `with` block or call close();
    garbage collection frees it too."""

    def __init__(self, config=None, set=None, log=None, force=False, threads=0, text=None):
        lib = self._lib = library()
        sets = _overrides(set)
        argv = (ctypes.c_char_p * (len(sets) + 1))(*[s.encode() for s in sets], None)
        opt = _Options(ctypes.sizeof(_Options), None, 0, int(force), 0, int(threads))
        if log is True:
            opt.log_config = 1
        elif log is not None and log is not False:
            opt.log = os.fsencode(log)
        ptr, error = _P(), ctypes.create_string_buffer(4096)
        path = os.fsencode(config) if config is not None else None
        rc = lib.csm_simulation_create(path, text.encode() if text is not None else None, argv, len(sets),
                                       ctypes.byref(opt), ctypes.byref(ptr), error, len(error))
        if rc:
            _raise(rc, error.value.decode(errors="replace"))
        self._handle = _Handle(lib, ptr.value)
        self._s = ptr.value
        self.n = lib.csm_simulation_particle_count(self._s)
        self._x = self._view(lib.csm_simulation_positions(self._s), writable=False)
        self._v = self._view(lib.csm_simulation_velocities(self._s), writable=True)
        self._mass = self._view(lib.csm_simulation_masses(self._s), writable=False, shape=(self.n,))
        self._rest = self._view(lib.csm_simulation_rest_positions(self._s), writable=False)
        self._force = None
        self._names = []
        for k in range(lib.csm_diagnostic_count()):
            width = ctypes.c_int()
            self._names.append((lib.csm_diagnostic_name(k, ctypes.byref(width)).decode(), width.value))
        self._values = (ctypes.c_double * sum(w for _, w in self._names))()

    def _view(self, ptr, writable, shape=None):
        shape = shape or (self.n, 3)
        buf = (ctypes.c_double * int(np.prod(shape))).from_address(ctypes.addressof(ptr.contents))
        buf._csm = self._handle  # the memory lives while a view of it does
        a = np.frombuffer(buf, dtype=np.float64).reshape(shape)
        a.flags.writeable = writable
        return a

    def _live(self):
        if self._s is None:
            raise CsmError("the simulation is closed")
        return self._s

    def _check(self, rc):
        if rc:
            _raise(rc, self._lib.csm_simulation_error(self._s).decode(errors="replace"))

    # ---- stepping ----
    def step(self, frames=1):
        """Advance `frames` frames (time.substeps steps each), as csm run does."""
        self._check(self._lib.csm_simulation_frames(self._live(), int(frames)))

    def steps(self, steps=1):
        """Advance `steps` single steps of dt / substeps."""
        self._check(self._lib.csm_simulation_step(self._live(), int(steps)))

    # ---- the particles: views of the library's arrays ----
    @property
    def x(self):
        """(n, 3) positions, read-only, no copy."""
        self._live()
        return self._x

    @property
    def v(self):
        """(n, 3) velocities, no copy; writable between steps."""
        self._live()
        return self._v

    @property
    def mass(self):
        self._live()
        return self._mass

    @property
    def rest(self):
        """(n, 3) rest positions, read-only."""
        self._live()
        return self._rest

    @property
    def external_force(self):
        """(n, 3) forces (N) applied at every step from the next one on, until changed; no copy.
        Assign in place (sim.external_force[:] = f) or to the attribute; a force that is not finite
        is refused at the next step."""
        self._live()
        if self._force is None:
            ptr = self._lib.csm_simulation_external_force(self._s)
            if not ptr:
                raise SimulationError("out of memory")
            self._force = self._view(ptr, writable=True)
        return self._force

    @external_force.setter
    def external_force(self, f):
        f = np.asarray(f)
        if f.dtype.kind not in "iuf":
            raise TypeError(f"external_force takes real numbers, not {f.dtype}")
        if f.shape not in ((self.n, 3), (3,), ()):
            raise ValueError(f"external_force is ({self.n}, 3): {f.shape} does not fit")
        if not np.all(np.isfinite(f)):
            raise ValueError("external_force must be finite")
        self.external_force[:] = f

    def pin(self, i, pinned=True):
        """Pin particle i where it is (its inverse mass 0) or, with pinned=False, free it."""
        self._check(self._lib.csm_simulation_pin(self._live(), int(i), int(bool(pinned))))

    def pinned(self, i):
        return bool(self._lib.csm_simulation_pinned(self._live(), int(i)))

    # ---- what it is doing ----
    @property
    def time(self):
        return self._lib.csm_simulation_time(self._live())

    @property
    def frame(self):
        return self._lib.csm_simulation_frame(self._live())

    @property
    def step_count(self):
        return self._lib.csm_simulation_step_count(self._live())

    @property
    def dt(self):
        return self._lib.csm_simulation_dt(self._live())

    @property
    def substeps(self):
        return self._lib.csm_simulation_substeps(self._live())

    @property
    def frames(self):
        """The config's time.frames (what csm run would run)."""
        return self._lib.csm_simulation_frames_wanted(self._live())

    @property
    def log_path(self):
        """The log it writes, or None."""
        path = self._lib.csm_simulation_log_path(self._live())
        return os.fsdecode(path) if path else None

    @property
    def warning(self):
        """What the run has done so far that the physics forbids, or None: energy that contact
        or the integrator created (the log's `warning` attribute)."""
        text = self._lib.csm_simulation_warning(self._live()).decode(errors="replace")
        return text or None

    @property
    def clusters(self):
        return Clusters(self._lib, self._live())

    @property
    def diagnostics(self):
        """The /diagnostics of the log for the state now, by name: a float, or an array for the
        vectors (and alpha_c's min, mean and max)."""
        self._check(self._lib.csm_simulation_diagnostics(self._live(), self._values, len(self._values)))
        out, at = {}, 0
        for name, width in self._names:
            out[name] = self._values[at] if width == 1 else np.array(self._values[at:at + width])
            at += width
        return out

    # ---- checkpoints ----
    def checkpoint(self):
        """The whole state, as the bytes of a one-frame log; restore() takes them back."""
        with tempfile.TemporaryDirectory(prefix="csm_") as d:
            path = os.path.join(d, "checkpoint.h5")
            self._check(self._lib.csm_simulation_checkpoint(self._live(), os.fsencode(path)))
            with open(path, "rb") as f:
                return f.read()

    def restore(self, state):
        """Put back a checkpoint (its bytes, or the path of a log of this config)."""
        if isinstance(state, (bytes, bytearray)):
            with tempfile.TemporaryDirectory(prefix="csm_") as d:
                path = os.path.join(d, "checkpoint.h5")
                with open(path, "wb") as f:
                    f.write(state)
                self._check(self._lib.csm_simulation_restore(self._live(), os.fsencode(path)))
        else:
            self._check(self._lib.csm_simulation_restore(self._live(), os.fsencode(state)))

    # ---- lifetime ----
    def close(self):
        """End the log (status ok, or the failure that stopped the run); nothing steps after it.
        The views already taken stay readable."""
        if self._s is None:
            return
        rc = self._lib.csm_simulation_finish(self._s)
        message = self._lib.csm_simulation_error(self._s).decode(errors="replace")
        self._s = None
        self._handle = None
        if rc:
            _raise(rc, message)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - a log that cannot close at exit has said so in its status
            pass

    def __repr__(self):
        if self._s is None:
            return "<csm.Simulation closed>"
        return f"<csm.Simulation {self.n} particles, frame {self.frame}, t = {self.time:g} s>"


def run(config, set=None, frames=None, log=True, force=False, threads=0):
    """Run a config to its last frame (or `frames`) with its log, as `csm run` does, and return the
    log opened (csm.open). log: the log's path, or True for the config's output.path."""
    from . import open as open_log
    sets = _overrides(set) + ([f"time.frames={int(frames)}"] if frames is not None else [])
    with Simulation(config, set=sets, log=log, force=force, threads=threads) as sim:
        sim.step(sim.frames - sim.frame)
        path = sim.log_path
    return open_log(path)
