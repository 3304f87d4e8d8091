#!/usr/bin/env bash
# The XDMF sidecar opens in Debian's ParaView (pvpython) with every point and time step; skipped
# (exit 77) where ParaView is not installed.
source "$(dirname "$0")/lib.sh" "$@"
set -e # a command that fails ends the test; the checks count and finish reports
if ! command -v pvpython >/dev/null; then
    echo "pvpython not found: skipped"
    exit 77
fi
# a log name with the characters XML must escape: the sidecar stays valid and opens
name="drop & <cube> 'a'"
"$csm" run "$root/experiments/configs/drop_cube.yaml" -o "$tmp/$name.h5" --frames 12 >/dev/null
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
# every particle's body and mass come with it (from /rest), and its velocity
from paraview import servermanager
data = servermanager.Fetch(reader)
block = data.GetBlock(0) if data.IsA("vtkMultiBlockDataSet") else data
pd = block.GetPointData()
names = sorted(pd.GetArrayName(k) for k in range(pd.GetNumberOfArrays()))
mass = pd.GetArray("mass")
total = sum(mass.GetValue(k) for k in range(mass.GetNumberOfTuples())) if mass else -1
obj = pd.GetArray("object")
print("ARRAYS %s MASS %.9f OBJECT %s" % (" ".join(names), total, obj.GetRange() if obj else None))
# speed, displacement and the nearest cluster come from the view file, the last frame's here
def values(name):
    a = pd.GetArray(name)
    return [a.GetTuple(k) for k in range(a.GetNumberOfTuples())] if a else []
speed, disp, cl = values("speed"), values("displacement"), values("cluster")
print("VIEW %.5f %.5f %d %d" % (max(s[0] for s in speed), max(abs(c) for d in disp for c in d),
                                min(c[0] for c in cl), max(c[0] for c in cl)))
PY
run=(pvpython --force-offscreen-rendering)
[ -z "${DISPLAY:-}" ] && command -v xvfb-run >/dev/null && run=(xvfb-run -a pvpython)
if command -v xmllint >/dev/null; then
    check "the sidecar is well-formed XML (xmllint)" xmllint --noout "$tmp/$name.xmf"
else
    check "the sidecar is well-formed XML" /usr/bin/python3 -c "import sys, xml.etree.ElementTree as ET; ET.parse(sys.argv[1])" "$tmp/$name.xmf"
fi
all=$("${run[@]}" "$tmp/open.py" "$tmp/$name.xmf" 2>&1 || true)
out=$(printf '%s\n' "$all" | grep '^READER' || true)
arrays=$(printf '%s\n' "$all" | grep '^ARRAYS' || true)
view=$(printf '%s\n' "$all" | grep '^VIEW' || true)
echo "$arrays"
echo "$out"
want=$(/usr/bin/python3 -c "
import h5py
import sys
f = h5py.File(sys.argv[1], 'r'); x = f['/frames/positions']
print('STEPS %d POINTS %d YMIN %.9f YMAX %.9f' % (x.shape[0], x.shape[1], x[-1][:, 1].min(), x[-1][:, 1].max()))" "$tmp/$name.h5")
echo "want: $want"
mass=$(/usr/bin/python3 -c "import h5py, sys; print('%.9f' % h5py.File(sys.argv[1], 'r')['/rest/mass'][()].sum())" "$tmp/$name.h5")
case "$out" in
*"$want"*) pass_ ;;
*) fail_ "pvpython read '$out', want '$want'" ;;
esac
case "$arrays" in
"ARRAYS cluster displacement mass object speed velocities MASS $mass OBJECT (0.0, 0.0)") pass_ ;;
*) fail_ "point arrays '$arrays', want cluster, displacement, mass (summing to $mass), object, speed and velocities" ;;
esac
wantview=$(/usr/bin/python3 -c "
import h5py, numpy as np, sys
f = h5py.File(sys.argv[1], 'r')
s, d, c = f['speed'][-1], f['displacement'][-1], f['cluster'][-1]
print('VIEW %.5f %.5f %d %d' % (s.max(), np.abs(d).max(), c.min(), c.max()))" "$tmp/$name.view.hdf5")
check "ParaView reads the view file: max speed, max displacement, cluster ids ('$view', want '$wantview')" [ "$view" = "$wantview" ]
finish
