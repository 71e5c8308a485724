#!/usr/bin/env bash
# build-libdisni.sh SRC OUT - builds DiSNI's JNI library (libdisni.so) from a DiSNI 2.1 source
# tree (the directory holding libdisni/ and pom.xml) and copies it to OUT/libdisni.so.
#
# Runs on the machine the library is for (it links against that machine's libibverbs/librdmacm):
# inside the Soft-RoCE guest (bin/memwire verbs-check does that) or on a cluster node. Needs
# gcc, make, autoconf, automake, libtool, libibverbs-dev, librdmacm-dev and a JDK (JAVA_HOME).
# The build runs in a scratch copy under ${TMPDIR:-/tmp} (a shared or network directory makes
# configure many times slower) and never touches SRC.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: build-libdisni.sh DISNI_SRC OUT_DIR" >&2; exit 2; }
SRC="$(cd "$1" && pwd)"
mkdir -p "$2"
OUT="$(cd "$2" && pwd)"  # absolute: the build below runs elsewhere
[ -f "$SRC/libdisni/configure.ac" ] || { echo "build-libdisni: $SRC/libdisni/configure.ac not found (want a DiSNI source tree)" >&2; exit 2; }
JDK="${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}"
[ -f "$JDK/include/jni.h" ] || { echo "build-libdisni: no jni.h under $JDK (set JAVA_HOME to a JDK)" >&2; exit 2; }
for t in gcc make autoreconf libtoolize; do
  command -v "$t" >/dev/null || { echo "build-libdisni: $t not found" >&2; exit 2; }
done
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/libdisni.XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
cp -r "$SRC/libdisni" "$SCRATCH/src"
cd "$SCRATCH/src"
T0=$(date +%s)
./autoprepare.sh
./configure --with-jdk="$JDK" --prefix="$SCRATCH/inst"
make -j"$(nproc)" install
cp -L "$SCRATCH/inst/lib/libdisni.so" "$OUT/libdisni.so.tmp"
mv "$OUT/libdisni.so.tmp" "$OUT/libdisni.so"
echo "build-libdisni: built $OUT/libdisni.so in $(( $(date +%s) - T0 )) s"
