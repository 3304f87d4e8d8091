#!/usr/bin/env bash
# Fetch the watertight test meshes that Debian's libcgal-demo package ships (bunny00.off,
# armadillo.off, cow.off, elephant.off, elephant-with-holes.off) into data/meshes/.
#
# The meshes are inside /usr/share/doc/libcgal-dev/data.tar.gz of that package. When the package
# is installed, they are taken from there; otherwise its .deb alone is downloaded with
# `apt-get download` and unpacked in a temporary folder (installing it would pull in all of
# CGAL's development dependencies). Nothing is fetched when every mesh is already present.
#
#   data/fetch_meshes.sh           fetch what is missing
#   data/fetch_meshes.sh --check   exit 1 (and say which) when a mesh is missing
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="$here/meshes"
meshes="bunny00.off armadillo.off cow.off elephant.off elephant-with-holes.off"
archive_in_package=/usr/share/doc/libcgal-dev/data.tar.gz

missing=()
for m in $meshes; do [ -s "$dest/$m" ] || missing+=("$m"); done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "${1:-}" = "--check" ]; then
    echo "data/meshes: missing ${missing[*]}; run data/fetch_meshes.sh" >&2
    exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
archive="$archive_in_package"
if [ ! -s "$archive" ]; then
    echo "csm: fetching meshes from Debian's libcgal-demo package"
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    if ! (cd "$work" && apt-get download -qq libcgal-demo >/dev/null 2>&1); then
        $sudo apt-get update -qq
        (cd "$work" && apt-get download -qq libcgal-demo >/dev/null 2>&1) || {
            echo "data/fetch_meshes.sh: cannot download the libcgal-demo package (apt-get download failed)" >&2
            exit 1
        }
    fi
    deb="$(ls "$work"/libcgal-demo_*.deb)"
    dpkg-deb --fsys-tarfile "$deb" | tar -xO ".$archive_in_package" >"$work/data.tar.gz"
    archive="$work/data.tar.gz"
fi

mkdir -p "$dest"
members=()
for m in "${missing[@]}"; do members+=("data/meshes/$m"); done
tar -xzf "$archive" -C "$work" "${members[@]}"
for m in "${missing[@]}"; do
    # write under a temporary name and rename, so an interrupted fetch leaves no half mesh
    cp "$work/data/meshes/$m" "$dest/.$m.part"
    mv "$dest/.$m.part" "$dest/$m"
done
echo "csm: data/meshes has ${missing[*]}"
