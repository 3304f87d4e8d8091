"""Reading csm logs and sweeps from Python (numpy and h5py only).

    import csm
    with csm.open("out/bunny.h5") as log:
        print(log.frames, log.attrs["integrator"], log.config["solver"]["alpha"])
        x = log.positions(-1)                    # (n, 3) at the last logged frame
        ke = log.diagnostic("kinetic_energy")    # (T,)
        cl = log.clusters(-1)                    # the clusters of that frame, no CSR arithmetic
        for c in range(cl.count):
            members, weights = cl.members(c), cl.weights(c)
        print(cl.com.shape, cl.R.shape, cl.Fp.shape, cl.state, cl.ids)
        events = log.events                      # a structured array, one row per removal or addition
    for run in csm.sweep("out/spin_cube"):       # the runs of a csm sweep folder
        print(run.values, run.status)
        with run.open() as log: ...

csm.Simulation steps a simulation in this process through libcsm.so (csm/simulation.py), and
csm.run runs a config to its end and returns its log opened.

Frame numbers count logged frames from 0 (the initial state); negative ones count from the end.
"""
import csv
import os

import h5py
import numpy as np

from ._rows import Memberships

__all__ = ["open", "sweep", "Log", "Clusters", "Run", "Simulation", "run", "CsmError", "ConfigError",
           "SimulationError"]
__version__ = "0.1.0"

_open = open  # the builtin, before csm.open shadows it here


def _text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.ndarray) and value.shape == ():
        return value.item()
    return value


class Clusters(Memberships):
    """The clusters of one logged frame. Per cluster (k rows): ids (stable over reclustering),
    state (0 active, 1 fading out, 2 fading in), com (k, 3), R (k, 3, 3), Fp (k, 3, 3), width,
    stress_alpha. Per membership: member (particle ids), weight, and cluster (which cluster each
    membership belongs to); members(c) and weights(c) give one cluster's. version: the membership
    version the frame uses (frames of one version share their memberships); state_version: the
    version of the slow state (ids, state, Fp, width, stress_alpha), written only when it changes."""

    def __init__(self, f, t):
        fc = f["clusters/frame_cluster"]
        a, b = int(fc[t]), int(fc[t + 1])
        # the memberships are written once per version, when they change
        v = int(f["clusters/membership_version"][t])
        o0, o1 = (int(x) for x in f["clusters/version_offsets"][v:v + 2])
        m0, m1 = (int(x) for x in f["clusters/version_members"][v:v + 2])
        self.version = v
        self.count = b - a
        # the slow state per version (logs before it hold a row per cluster per frame, beside com)
        s0 = a
        self.state_version = None
        if "clusters/cluster_version" in f:
            self.state_version = int(f["clusters/cluster_version"][t])
            s0 = int(f["clusters/version_clusters"][self.state_version])
        s1 = s0 + self.count
        if s1 > f["clusters/Fp"].shape[0]:
            raise ValueError(f"corrupt log: frame {t}'s clusters lie outside /clusters/Fp")
        self.ids = f["clusters/id"][s0:s1]
        self.state = f["clusters/state"][s0:s1]
        self.com = f["clusters/com"][a:b]
        self.R = f["clusters/R"][a:b]
        self.Fp = f["clusters/Fp"][s0:s1]
        self.width = f["clusters/width"][s0:s1]
        self.stress_alpha = f["clusters/stress_alpha"][s0:s1]
        nm = f["clusters/members"].shape[0]
        if not (0 <= o0 <= o1 <= f["clusters/offsets"].shape[0] and 0 <= m0 <= m1 <= nm):
            raise ValueError(f"corrupt log: version {v}'s rows lie outside /clusters/offsets or /clusters/members")
        self.offsets = f["clusters/offsets"][o0:o1]
        if len(self.offsets) and (self.offsets.min() < 0 or self.offsets.max() > m1 - m0 or np.any(np.diff(self.offsets) < 0)):
            raise ValueError(f"corrupt log: /clusters/offsets of version {v} point outside its {m1 - m0} memberships")
        self.member = f["clusters/members"][m0:m1]
        self.weight = f["clusters/weights"][m0:m1]
        self.cluster = np.repeat(np.arange(self.count), np.diff(self.offsets))


class Log:
    """An open csm log (an HDF5 file written by csm run)."""

    def __init__(self, path):
        self.path = path
        try:
            self.file = h5py.File(path, "r")
        except OSError:
            # a log being written, or left by a killed run, is read as it stands
            self.file = h5py.File(path, "r", swmr=True)
        if "frames/time" not in self.file or "config" not in self.file.attrs:
            self.file.close()
            raise ValueError(f"{path}: not a csm log")
        self.attrs = {k: _text(v) for k, v in self.file.attrs.items()}
        self.time = self.file["frames/time"][()]
        self.frames = len(self.time)
        self.particles = self.file["rest/positions"].shape[0]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.file.close()

    def frame(self, t):
        """A frame number, negative ones counted from the end."""
        t = int(t)
        if t < 0:
            t += self.frames
        if not 0 <= t < self.frames:
            raise IndexError(f"{self.path}: frame {t} is outside 0..{self.frames - 1}")
        return t

    @property
    def config(self):
        """The resolved config as a dict (needs PyYAML; without it, config_text is the text)."""
        import yaml

        return yaml.safe_load(self.config_text)

    @property
    def config_text(self):
        return str(self.attrs["config"])

    def positions(self, t=None):
        """(n, 3) at frame t, or (T, n, 3) for every frame."""
        d = self.file["frames/positions"]
        return d[()] if t is None else d[self.frame(t)]

    def velocities(self, t=None):
        d = self.file["frames/velocities"]
        return d[()] if t is None else d[self.frame(t)]

    def rest(self, name="positions"):
        """positions (n, 3), mass (n,) or object (n,) of the rest state."""
        return self.file["rest/" + name][()]

    @property
    def diagnostics(self):
        return sorted(self.file["diagnostics"].keys())

    def diagnostic(self, name):
        """A per-frame diagnostic by name: kinetic_energy, angular_momentum, ..."""
        return self.file["diagnostics/" + name][()]

    @property
    def timings(self):
        """Seconds per logged frame of each stage, by name."""
        return {k: v[()] for k, v in self.file["timings"].items()}

    def clusters(self, t):
        return Clusters(self.file, self.frame(t))

    @property
    def events(self):
        """Reclustering events: a structured array (frame, time, kind, cluster, seed, members, ...)."""
        if "recluster/events" not in self.file:  # a log before events: none, as the rows csm writes
            return np.zeros(0, dtype=[("frame", "<i4"), ("time", "<f8"), ("kind", "S8"), ("cluster", "<i4"),
                                      ("seed", "<i4"), ("members", "<i4")])
        rows = self.file["recluster/events"][()]
        # the rows in order while their frames are at least 1 and do not fall: a write that failed
        # after the dataset grew leaves rows of zeros behind them (a resume cuts them)
        frames = rows["frame"] if len(rows) else np.zeros(0, dtype=np.int64)
        ok = (frames >= 1) & (frames >= np.concatenate(([1], frames[:-1])))
        bad = np.flatnonzero(~ok)
        return rows[: bad[0]] if len(bad) else rows

    def units(self, dataset):
        return _text(self.file[dataset].attrs.get("units", ""))


def open(path):  # noqa: A001 - csm.open, as h5py.File or io.open
    """Open a csm log."""
    return Log(path)


def _value(text):
    """A swept value as the config took it: an integer, a real, true or false, else the text (a
    name, or a list or mapping in YAML's flow form)."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text, text)


class Run:
    """One run of a sweep: its swept values (numbers as numbers), status, frames and log path."""

    def __init__(self, folder, row, keys):
        self.id = row["run"]
        self.values = {k: _value(row[k]) for k in keys}
        self.status = row["status"]
        self.frames = int(row["frames"]) if row.get("frames") else 0
        self.path = os.path.join(folder, row["path"]) if row.get("path") else None

    def open(self):
        if not self.path:
            raise FileNotFoundError(f"run {self.id} has no log ({self.status})")
        return Log(self.path)

    def __repr__(self):
        return f"Run({self.id!r}, {self.values!r}, {self.status!r})"


def sweep(folder):
    """The runs of a folder written by csm sweep, from its index.csv, in the sweep's order."""
    index = os.path.join(folder, "index.csv")
    with _open(index, newline="") as f:
        reader = csv.DictReader(f)
        fixed = {"run", "status", "frames", "wall_s", "path"}
        keys = [k for k in reader.fieldnames if k not in fixed]
        return [Run(folder, row, keys) for row in reader]


from .simulation import ConfigError, CsmError, Simulation, SimulationError, run  # noqa: E402 - after open, which run returns
