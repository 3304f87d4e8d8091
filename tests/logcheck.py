"""What the Python checks of the shell tests share (tests/lib.sh runs them with `pylog`).

    from logcheck import check, finish, log
    f = log(sys.argv[1])             # an open csm log (h5py.File)
    check(cond, "what it shows")     # prints ok, or records a failure
    finish()                         # exits 1 when any check failed
"""
import sys

import h5py

failed = []


def check(cond, what):
    if cond:
        print("ok:", what)
    else:
        print("FAIL:", what)
        failed.append(what)


def log(path):
    return h5py.File(path, "r")


def datasets(f):
    """Every dataset path of a log."""
    names = []
    f.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
    return names


def finish():
    if failed:
        print(f"{len(failed)} check(s) failed: " + "; ".join(failed))
        sys.exit(1)
