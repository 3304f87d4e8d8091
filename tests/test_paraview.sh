#!/usr/bin/env bash
# The XDMF sidecar opens in Debian's ParaView (pvpython) with every point and time step; skipped
# (exit 77) where ParaView is not installed.
set -eu
csm=$1
root=$2
if ! command -v pvpython >/dev/null; then
    echo "pvpython not found: skipped"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$csm" run "$root/experiments/configs/drop_cube.yaml" -o "$tmp/drop.h5" --frames 12 >/dev/null
cat >"$tmp/open.py" <<'PY'
import sys
from paraview.simple import OpenDataFile
reader = OpenDataFile(sys.argv[1])
reader.UpdatePipelineInformation()
steps = list(reader.TimestepValues)
reader.UpdatePipeline(steps[-1])
info = reader.GetDataInformation()
b = info.GetBounds()
print("READER %s STEPS %d POINTS %d YMIN %.9f YMAX %.9f" % (reader.GetXMLName(), len(steps), info.GetNumberOfPoints(), b[2], b[3]))
PY
run=(pvpython --force-offscreen-rendering)
[ -z "${DISPLAY:-}" ] && command -v xvfb-run >/dev/null && run=(xvfb-run -a pvpython)
out=$("${run[@]}" "$tmp/open.py" "$tmp/drop.xmf" 2>&1 | grep '^READER' || true)
echo "$out"
want=$(/usr/bin/python3 -c "
import h5py
f = h5py.File('$tmp/drop.h5', 'r'); x = f['/frames/positions']
print('STEPS %d POINTS %d YMIN %.9f YMAX %.9f' % (x.shape[0], x.shape[1], x[-1][:, 1].min(), x[-1][:, 1].max()))")
echo "want: $want"
case "$out" in
*"$want"*) echo "1 passed, 0 failed" ;;
*) echo "0 passed, 1 failed"; exit 1 ;;
esac
