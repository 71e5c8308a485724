#!/usr/bin/env bash
# verbs-check.sh - `bin/memwire verbs-check`: proves the verbs path end to end (transport tests,
# Spark over verbs with exact results and counters, leak checks, an executor killed mid-read,
# transfer benchmark vs ib_read_bw) in the Soft-RoCE guest or on a real RDMA host.
#
# Usage: memwire verbs-check [options]
#   --disni-src DIR    DiSNI 2.1 source tree; libdisni is built from it on the target (guest or
#                      host) once and cached (key: source + guest image + build script)
#   --libdisni FILE    use this libdisni.so instead (skips the build; must match the target)
#   --work DIR         work directory (default target/verbs-check in the checkout); staged
#                      jars in DIR/stage, logs in DIR/logs, results and verdict.txt in DIR
#   --cache DIR        libdisni cache (default ${XDG_CACHE_HOME:-~/.cache}/memwire/libdisni)
#   --softroce DIR     directory of run-in-vm.sh (default ../shared/softroce next to the checkout)
#   --mem MB           guest memory (default 6144; each of a pair: --pair-mem MB, default 2048, 3072 with cross);
#                      --timeout SEC guest deadline (default 7200)
#   --prefix 'CMD'     no VM: run the checks on this machine under a command prefix (e.g.
#                      'sudo -E' or 'env'); needs an RDMA device; give --bind
#   --bind IP          address of the RDMA device (default: the guest's $SOFTROCE_IP)
#   --device NAME      RDMA device for ib_read_bw and the tests (default: the guest's rxe0)
#   --steps LIST       transport,spark,flight,peerexit,sparktcp,bench,ucx,sparkucx,ucxbench (default
#                      all but the ucx ones, in order); ucx: the ucx provider over UCX's rc_verbs
#                      on the device (contract suite, Flight); sparkucx: Spark over it;
#                      ucxbench: transfer benchmark ucx vs verbs vs ib_read_bw;
#                      clean,loss,firewall,mtu: the fabric pitfalls between two guests; cross:
#                      Flight and Spark across two guests; crossmtu, crossfw: the same under the
#                      MTU and firewall pitfalls (run-in-vm.sh --pair, one boot for all named; not
#                      in the default; guest only)
#   --modes LIST       runs of the spark step: sort,verbs (default; sort is the reference);
#                      sparktcp runs Memwire over tcp against that reference
#   --leak-rounds N    shuffles in the leak loop (default 50)
# Exit status: 0 every check passed; 1 a check failed (see the verdict file); 2 usage or the
# checkout is not built; 3 the guest cannot run here (no QEMU, image missing, rxe setup failed,
# VM died) - outside the project, said in one line.
{
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
HERE="$ROOT/tools/verbs-check"
DISNI_SRC=""; LIBDISNI=""; WORK="$ROOT/target/verbs-check"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/memwire/libdisni"
SOFTROCE=""; MEM=6144; PAIR_MEM=""; TIMEOUT=7200; PREFIX=""; HOSTMODE=0; BIND=""; DEVICE=""
STEPS="transport,spark,flight,peerexit,sparktcp,bench"; MODES="sort,verbs"; LEAK_ROUNDS=50
usage() { sed -n '5,33p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --disni-src) DISNI_SRC="$2"; shift 2 ;;
    --libdisni) LIBDISNI="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    --cache) CACHE="$2"; shift 2 ;;
    --softroce) SOFTROCE="$2"; shift 2 ;;
    --mem) MEM="$2"; shift 2 ;;
    --pair-mem) PAIR_MEM="$2"; shift 2 ;;
    --timeout) TIMEOUT="$2"; shift 2 ;;
    --prefix) PREFIX="$2"; HOSTMODE=1; shift 2 ;;
    --bind) BIND="$2"; shift 2 ;;
    --device) DEVICE="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --modes) MODES="$2"; shift 2 ;;
    --leak-rounds) LEAK_ROUNDS="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "verbs-check: unknown option $1" >&2; usage ;;
  esac
done
say() { echo "[verbs-check] $*" >&2; }
unavailable() { echo "verbs-check: guest unavailable: $*" >&2; exit 3; }
[ -n "$DISNI_SRC" ] || [ -n "$LIBDISNI" ] || { echo "verbs-check: give --disni-src DIR (a DiSNI 2.1 source tree) or --libdisni FILE" >&2; exit 2; }
[ -z "$DISNI_SRC" ] || [ -f "$DISNI_SRC/libdisni/configure.ac" ] || { echo "verbs-check: --disni-src $DISNI_SRC has no libdisni/configure.ac" >&2; exit 2; }
[ -z "$LIBDISNI" ] || [ -f "$LIBDISNI" ] || { echo "verbs-check: --libdisni $LIBDISNI not found" >&2; exit 2; }
[ "$HOSTMODE" = 0 ] || [ -n "$BIND" ] || { echo "verbs-check: --prefix needs --bind IP (an address of the RDMA device)" >&2; exit 2; }
# The pitfall steps need two nodes joined by a wire: they run in a guest pair, the others in one guest.
SINGLE_STEPS=""; PAIR_STEPS=""
for s in ${STEPS//,/ }; do
  case "$s" in
    clean|loss|firewall|mtu|cross|crossmtu|crossfw) PAIR_STEPS="${PAIR_STEPS:+$PAIR_STEPS,}$s" ;;
    *) SINGLE_STEPS="${SINGLE_STEPS:+$SINGLE_STEPS,}$s" ;;
  esac
done
# cross runs Flight and Spark across the pair: it needs their staging and more memory per guest.
CROSS=0; case ",$PAIR_STEPS," in *,cross,*|*,crossmtu,*|*,crossfw,*) CROSS=1 ;; esac
[ -n "$PAIR_MEM" ] || { [ "$CROSS" = 1 ] && PAIR_MEM=3072 || PAIR_MEM=2048; }
[ -z "$PAIR_STEPS" ] || [ "$HOSTMODE" = 0 ] || { echo "verbs-check: the steps $PAIR_STEPS need the guest pair (no --prefix)" >&2; exit 2; }

# ------------------------------------------------------------------ where the checks run
if [ "$HOSTMODE" = 0 ]; then
  if [ -z "$SOFTROCE" ]; then
    for d in "$ROOT/../shared/softroce" "$ROOT/../../shared/softroce"; do
      [ -x "$d/run-in-vm.sh" ] && { SOFTROCE="$(cd "$d" && pwd)"; break; }
    done
  fi
  [ -n "$SOFTROCE" ] && [ -x "$SOFTROCE/run-in-vm.sh" ] || unavailable "run-in-vm.sh not found (give --softroce DIR)"
  command -v qemu-system-x86_64 >/dev/null || unavailable "qemu-system-x86_64 not installed"
  VM_IMAGES="${SOFTROCE_VM_DIR:-$HOME/.cache/softroce-vm}/images"
  for f in softroce.raw vmlinuz initrd.img stamp; do
    [ -f "$VM_IMAGES/$f" ] || unavailable "guest image missing ($VM_IMAGES/$f; run $SOFTROCE/build-image.sh)"
  done
  TARGET_ID="guest-$(cat "$VM_IMAGES/stamp")"
else
  TARGET_ID="host-$(uname -r)-$(ls /usr/lib/*/libibverbs.so.1* /usr/lib64/libibverbs.so.1* 2>/dev/null | head -1 | xargs -r readlink -f | xargs -r basename)"
fi

# Runs "$@" (a bash script path relative to WORK, plus arguments) on the target, cwd = WORK.
run_target() {
  local timeout="$1"; shift
  if [ "$HOSTMODE" = 1 ]; then
    (cd "$WORK" && timeout "$timeout" $PREFIX bash "$@")
  else
    "$SOFTROCE/run-in-vm.sh" -t "$timeout" -m "$MEM" "$WORK" -- bash "$@"
  fi
}
guest_failed() {  # exit codes of run-in-vm.sh that mean the guest itself did not work
  case "$1" in
    98) unavailable "rxe setup failed in the guest (run-in-vm.sh rc 98)" ;;
    125) unavailable "the VM died without reporting (run-in-vm.sh rc 125)" ;;
  esac
}

# ------------------------------------------------------------------ stage
T_ALL=$(date +%s)
need() { [ -e "$1" ] || { echo "verbs-check: $1 not found; build first: mvn -B -DskipTests package" >&2; exit 2; }; }
V=0.1.0-SNAPSHOT
BT="$ROOT/block-transfer/target/memwire-block-transfer-$V.jar"
BT_TESTS="$ROOT/block-transfer/target/memwire-block-transfer-$V-tests.jar"
TT="$ROOT/transfer-tools/target/memwire-transfer-tools-$V.jar"   # the transfer benchmark
SM="$ROOT/shuffle-manager/target/memwire-shuffle-manager-$V-spark.jar"
SS="$ROOT/shuffle-service/target/memwire-shuffle-service-$V.jar"
SC="$ROOT/shuffle-service-client/target/memwire-shuffle-service-client-$V.jar"
SS_TESTS="$ROOT/shuffle-service/target/memwire-shuffle-service-$V-tests.jar"
LC="$ROOT/local-cluster/target/memwire-local-cluster-$V.jar"
MJ="$ROOT/main-job/target/memwire-main-job-$V.jar"
VC="$ROOT/verbs-check/target/memwire-verbs-check-$V.jar"
SPARK_JARS="$ROOT/main-job/target/spark-home/jars"
for f in "$BT" "$BT_TESTS" "$TT" "$VC"; do need "$f"; done
if [ -n "$SINGLE_STEPS" ] || [ "$CROSS" = 1 ]; then
  for f in "$SS" "$SC" "$SS_TESTS" "$SM" "$LC" "$MJ" "$SPARK_JARS"; do need "$f"; done
fi
JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
M2="${MAVEN_REPO:-$HOME/.m2/repository}"

mkdir -p "$WORK/stage/memwire" "$WORK/stage/spark-jars" "$WORK/stage/m2" "$WORK/stage/lib" \
  "$WORK/logs" "$WORK/results" "$WORK/tools"
WORK="$(cd "$WORK" && pwd)"
rm -f "$WORK"/results/*.txt "$WORK/verdict.txt"
say "staging into $WORK"
cp "$BT" "$BT_TESTS" "$TT" "$VC" "$WORK/stage/memwire/"
cp "$HERE/guest.sh" "$HERE/pair-guest.sh" "$HERE/pair-cross.sh" "$HERE/build-libdisni.sh" "$WORK/tools/"
# The transport tests' classpath: block-transfer's test scope, from Maven, copied out of ~/.m2.
if ! (cd "$ROOT" && mvn -B -q -o -pl block-transfer dependency:build-classpath \
      -Dmdep.includeScope=test -Dmdep.outputFile="$WORK/stage/bt-deps.txt" >"$WORK/logs/stage-mvn.log" 2>&1); then
  echo "verbs-check: mvn dependency:build-classpath failed, see $WORK/logs/stage-mvn.log" >&2; exit 2
fi
ENGINE_VER="$(tr ':' '\n' <"$WORK/stage/bt-deps.txt" | sed -n 's|.*/junit-platform-engine/\([^/]*\)/.*|\1|p' | head -1)"
LAUNCHER="$M2/org/junit/platform/junit-platform-launcher/$ENGINE_VER/junit-platform-launcher-$ENGINE_VER.jar"
need "$LAUNCHER"
# The pitfall steps' class path: the checks, the doctor (transfer-tools), block-transfer, its deps.
CP_P="@W@/stage/memwire/$(basename "$VC"):@W@/stage/memwire/$(basename "$TT"):@W@/stage/memwire/$(basename "$BT")"
for j in $(tr ':' '\n' <"$WORK/stage/bt-deps.txt"); do
  rel="${j#"$M2"/}"
  mkdir -p "$WORK/stage/m2/$(dirname "$rel")"
  cp -u "$j" "$WORK/stage/m2/$rel"
  CP_P="$CP_P:@W@/stage/m2/$rel"
done
echo "$CP_P" >"$WORK/stage/cp-pair.txt"
# The one-guest steps' jars and class paths (the block below is not indented, to keep it as it was);
# the pair's cross step uses its Flight and Spark class paths.
if [ -n "$SINGLE_STEPS" ] || [ "$CROSS" = 1 ]; then
cp "$SS" "$SC" "$SS_TESTS" "$SM" "$LC" "$MJ" "$WORK/stage/memwire/"
cp -u "$SPARK_JARS"/*.jar "$WORK/stage/spark-jars/"
CP_T="@W@/stage/memwire/$(basename "$VC"):@W@/stage/memwire/$(basename "$BT_TESTS"):@W@/stage/memwire/$(basename "$BT")"
# The bench step's transfer benchmark (transfer-tools: block-transfer's dependencies only).
CP_T="$CP_T:@W@/stage/memwire/$(basename "$TT")"
# The shuffle service's verbs tests ride in the transport step (same dependencies).
CP_T="$CP_T:@W@/stage/memwire/$(basename "$SS_TESTS"):@W@/stage/memwire/$(basename "$SS"):@W@/stage/memwire/$(basename "$SC")"
# ...with the service's optional jars (RocksDB for the recovery store, the Prometheus client).
SS_LIB="$ROOT/shuffle-service/target/service-lib"
need "$SS_LIB"
mkdir -p "$WORK/stage/memwire/service-lib"
for j in "$SS_LIB"/*.jar; do
  cp -u "$j" "$WORK/stage/memwire/service-lib/"
  CP_T="$CP_T:@W@/stage/memwire/service-lib/$(basename "$j")"
done
for j in $(tr ':' '\n' <"$WORK/stage/bt-deps.txt") "$LAUNCHER"; do
  rel="${j#"$M2"/}"
  mkdir -p "$WORK/stage/m2/$(dirname "$rel")"
  cp -u "$j" "$WORK/stage/m2/$rel"
  CP_T="$CP_T:@W@/stage/m2/$rel"
done
echo "$CP_T" >"$WORK/stage/cp-transport.txt"
# The Flight check's classpath: arrow-flight-rdma's runtime scope (its own Arrow/gRPC tree, never
# mixed with Spark's), with this checkout's Memwire jars instead of any installed ones.
FR="$ROOT/arrow-flight-rdma/target/memwire-arrow-flight-rdma-$V.jar"
need "$FR"
cp "$FR" "$WORK/stage/memwire/"
# -am + compile: on a fresh machine no Memwire jar is installed in ~/.m2; the reactor resolves
# block-transfer to its classes (skipped below: the staged jar stands in for it).
if ! (cd "$ROOT" && mvn -B -q -o -pl arrow-flight-rdma -am compile dependency:build-classpath \
      -Dmdep.includeScope=runtime -Dmdep.outputFile="$WORK/stage/flight-deps.txt" >>"$WORK/logs/stage-mvn.log" 2>&1); then
  echo "verbs-check: mvn dependency:build-classpath failed, see $WORK/logs/stage-mvn.log" >&2; exit 2
fi
CP_F="@W@/stage/memwire/$(basename "$VC"):@W@/stage/memwire/$(basename "$FR"):@W@/stage/memwire/$(basename "$BT")"
for j in $(tr ':' '\n' <"$WORK/stage/flight-deps.txt" | grep -v '/io/memwire/' | grep "^$M2/"); do
  rel="${j#"$M2"/}"
  mkdir -p "$WORK/stage/m2/$(dirname "$rel")"
  cp -u "$j" "$WORK/stage/m2/$rel"
  CP_F="$CP_F:@W@/stage/m2/$rel"
done
echo "$CP_F" >"$WORK/stage/cp-flight.txt"
# The ucx step: the ucx provider and JUCX beside each class path, plus its contract test classes.
case ",$STEPS," in *,ucx,*|*,sparkucx,*|*,ucxbench,*)
  UCXJ="$ROOT/block-transfer-ucx/target/memwire-block-transfer-ucx-$V.jar"
  UCXT="$ROOT/block-transfer-ucx/target/test-classes"
  JUCX="$(ls "$M2"/org/openucx/jucx/*/jucx-*.jar 2>/dev/null | grep -v sources | sort -V | tail -1)"
  need "$UCXJ"; need "$UCXT"; need "$JUCX"
  cp "$UCXJ" "$JUCX" "$WORK/stage/memwire/"
  rm -rf "$WORK/stage/ucx-test-classes"; cp -r "$UCXT" "$WORK/stage/ucx-test-classes"
  UCP="@W@/stage/memwire/$(basename "$UCXJ"):@W@/stage/memwire/$(basename "$JUCX")"
  echo "$CP_T:$UCP:@W@/stage/ucx-test-classes" >"$WORK/stage/cp-ucx.txt"
  echo "$CP_F:$UCP" >"$WORK/stage/cp-flightucx.txt"
  ;;
esac
echo "@W@/stage/memwire/$(basename "$VC"):@W@/stage/memwire/$(basename "$MJ"):@W@/stage/memwire/$(basename "$LC"):@W@/stage/memwire/$(basename "$SM"):@W@/stage/spark-jars/*" \
  >"$WORK/stage/cp-spark.txt"
[ -z "${UCP:-}" ] || echo "$UCP:$(cat "$WORK/stage/cp-spark.txt")" >"$WORK/stage/cp-sparkucx.txt"
"$JAVA" -cp "$VC:$LC:$SPARK_JARS/*" io.memwire.verbscheck.DriverOptions >"$WORK/stage/driver-opts.txt" \
  || { echo "verbs-check: cannot compute the driver JVM options" >&2; exit 2; }
fi

# ------------------------------------------------------------------ libdisni (build once, cache)
T_LIB=$(date +%s); LIB_NOTE=""
if [ -n "$LIBDISNI" ]; then
  cp "$LIBDISNI" "$WORK/stage/lib/libdisni.so"; LIB_NOTE="given $LIBDISNI"
else
  SRC_HASH="$(cd "$DISNI_SRC" && find libdisni -type f ! -path '*/.git/*' -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)"
  KEY="$SRC_HASH-$TARGET_ID-$(sha256sum "$HERE/build-libdisni.sh" | cut -c1-8)"
  if [ -f "$CACHE/$KEY/libdisni.so" ]; then
    LIB_NOTE="cached $CACHE/$KEY/libdisni.so"
  else
    say "building libdisni on the target (cache key $KEY); ~5 min in the guest"
    rm -rf "$WORK/disni-src"; mkdir -p "$WORK/disni-src"
    cp -r "$DISNI_SRC/libdisni" "$WORK/disni-src/"
    rm -rf "$WORK/disni-out"
    run_target 3600 tools/build-libdisni.sh disni-src disni-out >"$WORK/logs/libdisni-build.log" 2>&1
    rc=$?
    [ "$HOSTMODE" = 1 ] || guest_failed "$rc"
    if [ "$rc" != 0 ] || [ ! -f "$WORK/disni-out/libdisni.so" ]; then
      echo "verbs-check: libdisni build failed (rc $rc), see $WORK/logs/libdisni-build.log" >&2; exit 1
    fi
    mkdir -p "$CACHE/$KEY"
    cp "$WORK/disni-out/libdisni.so" "$CACHE/$KEY/libdisni.so"
    rm -rf "$WORK/disni-src" "$WORK/disni-out"
    LIB_NOTE="built in $(( $(date +%s) - T_LIB )) s, cached $CACHE/$KEY/libdisni.so"
  fi
  cp "$CACHE/$KEY/libdisni.so" "$WORK/stage/lib/libdisni.so"
fi
T_LIB=$(( $(date +%s) - T_LIB ))
say "libdisni: $LIB_NOTE"

# ------------------------------------------------------------------ run
T_RUN=$(date +%s)
RC=0
if [ -n "$SINGLE_STEPS" ]; then
say "running steps $SINGLE_STEPS on the target (logs in $WORK/logs)"
GARGS=(--steps "$SINGLE_STEPS" --modes "$MODES" --leak-rounds "$LEAK_ROUNDS")
[ -n "$BIND" ] && GARGS+=(--bind "$BIND")
[ -n "$DEVICE" ] && GARGS+=(--device "$DEVICE")
run_target "$TIMEOUT" tools/guest.sh "${GARGS[@]}" >"$WORK/logs/guest.log" 2>&1
RC=$?
[ "$HOSTMODE" = 1 ] || guest_failed "$RC"
fi
if [ -n "$PAIR_STEPS" ]; then
  # Two guests, A and B, joined by a wire (see shared/softroce README, "Two guests"); both run
  # pair-guest.sh, which sets each pitfall up in one guest and reads across it from the other.
  say "running steps $PAIR_STEPS on a guest pair (logs in $WORK/logs/pair.log)"
  "$SOFTROCE/run-in-vm.sh" --pair -t "$TIMEOUT" -m "$PAIR_MEM" --grace 120 "$WORK" -- \
    bash tools/pair-guest.sh --steps "$PAIR_STEPS" >"$WORK/logs/pair.log" 2>&1
  PRC=$?
  guest_failed "$PRC"
  [ "$RC" != 0 ] || RC=$PRC
fi
T_RUN=$(( $(date +%s) - T_RUN ))

# ------------------------------------------------------------------ verdict
V_FILE="$WORK/verdict.txt"
{
  echo "# bin/memwire verbs-check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $([ "$HOSTMODE" = 1 ] && echo "this host" || echo "the Soft-RoCE guest")"
  echo "target.rc=$RC"
  [ "$RC" = 124 ] && echo "target.timeout=${TIMEOUT}s"
  echo "libdisni=$LIB_NOTE"
  echo "seconds.libdisni=$T_LIB"
  echo "seconds.target=$T_RUN"
  cat "$WORK/results/pitfall-a.txt" "$WORK/results/pitfall-b.txt" 2>/dev/null
  for c in cross crossmtu crossfw; do cat "$WORK/results/$c-a.txt" "$WORK/results/$c-b.txt" 2>/dev/null; done
  cat "$WORK/results/guest.txt" "$WORK/results/spark.txt" "$WORK/results/spark-tcp.txt" "$WORK/results/flight.txt" \
    "$WORK/results/spark-ucx.txt" "$WORK/results/flight-ucx.txt" 2>/dev/null
  # transfer benchmark rows: provider,size_bytes,queue_depth,memwire_mb_s,...
  [ -f "$WORK/results/transfer-bench.csv" ] && awk -F, 'NR > 1 {print "bench.memwire." $2 ".depth" $3 ".MBps=" $4}' "$WORK/results/transfer-bench.csv"
  echo "logs=$WORK/logs (pair.log, pitfall-*.log and cross-*.log for the pair steps, guest.log, transport.log, spark.log, sparktcp.log, flight.log, peerexit-*.log, bench.log, ucx_info.txt, ucx-transport.log, sparkucx.log, flightucx.log, cluster-*/ (each Spark step's SPARK_HOME and executor work dirs), rdma-after-*.txt)"
} >"$V_FILE"
PASSES=$(grep -c '^check\..*=PASS$' "$V_FILE")
FAILS=$(grep -c '^check\..*=FAIL$' "$V_FILE")
for s in ${STEPS//,/ }; do
  grep -q "^check\.$s=" "$V_FILE" || { echo "check.$s=FAIL" >>"$V_FILE"; echo "detail.$s=no result (target rc $RC)" >>"$V_FILE"; FAILS=$((FAILS + 1)); }
done
VERDICT=PASS; [ "$FAILS" = 0 ] && [ "$RC" = 0 ] || VERDICT=FAIL
echo "verdict=$VERDICT" >>"$V_FILE"
STEPLINE=""
for s in ${STEPS//,/ }; do
  STEPLINE="$STEPLINE $s=$(sed -n "s/^check\.$s=//p" "$V_FILE" | tail -1)($(sed -n "s/^seconds\.$s=//p" "$V_FILE" | tail -1)s)"
done
echo "verbs-check: $VERDICT -$STEPLINE, $PASSES checks passed, $FAILS failed, $(( $(date +%s) - T_ALL )) s; verdict $V_FILE"
[ "$VERDICT" = PASS ] && exit 0 || exit 1
exit
}
