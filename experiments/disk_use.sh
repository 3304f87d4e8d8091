#!/bin/bash
# The disk the figures' logs will take, said before `make figures` runs anything: the figures'
# recipes are made once in a scratch folder with a stand-in for csm that checks each run and
# sweep (`csm check`: "its log: about ...", uncompressed, or a range where reclustering may write
# new memberships every frame) instead of running it, and without the analyses; the sizes are summed. Every figure
# is counted, those already made too.
# Usage: experiments/disk_use.sh [path/to/csm [FOLDER the figures go to]]
set -uo pipefail
cd "$(dirname "$0")/.."
csm=$(realpath "${1:-build/csm}")
out=${2:-out/figures}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
sizes="$scratch/sizes"
: >"$sizes"
# The stand-in: `run` and `sweep` become `csm check` with the config and its --set overrides;
# anything else (info) fails, as it does on a log not yet written.
cat >"$scratch/csm" <<EOF
#!/bin/bash
cmd=\${1:-}; shift
case "\$cmd" in run|sweep) ;; *) exit 1 ;; esac
args=()
while [ \$# -gt 0 ]; do
    case "\$1" in
        -o|--output|--threads|--jobs|--shard) shift ;;
        --force) ;;
        --frames) shift; args+=(--set "time.frames=\$1") ;;
        *) args+=("\$1") ;;
    esac
    shift
done
"$csm" check "\${args[@]}" 2>&1 >/dev/null | grep -E " is valid: " >>"$sizes"
exit 0
EOF
chmod +x "$scratch/csm"
make -s -i --no-print-directory figures-only CSM="$scratch/csm" PY=true OUT="$scratch/figures" >/dev/null 2>&1
mkdir -p "$out"
free=$(df -B1 --output=avail "$out" 2>/dev/null | tail -1)
awk -v out="$out" -v free="${free:-0}" '
    function bytes(v, u) { return v * (u == "kB" ? 1e3 : u == "MB" ? 1e6 : u == "GB" ? 1e9 : u == "TB" ? 1e12 : 1) }
    {
        for (i = 1; i < NF; i++) if ($i == "log:" || $i == "logs:") break
        if ($(i + 1) == "about") { low = bytes($(i + 2), $(i + 3)); high = low }
        else { low = bytes($(i + 1), $(i + 2)); high = bytes($(i + 4), $(i + 5)) }
        total += low; most += high; checks++
    }
    END {
        if (!checks) { print "make figures: could not check its runs"; exit 1 }
        range = most > total * 1.05 ? sprintf("%.1f to %.1f GB", total / 1e9, most / 1e9) : sprintf("about %.1f GB", total / 1e9)
        printf "make figures: its logs take %s in %s/, where %.1f GB are free (%d runs and sweeps checked; " \
               "make clean-figures frees them)\n", range, out, free / 1e9, checks
    }' "$sizes"
