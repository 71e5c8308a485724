#!/usr/bin/env bash
# guest.sh - the in-guest (or on-RDMA-host) half of `bin/memwire verbs-check`. Run from the staged
# work directory (cwd): uses stage/ (jars, classpaths, libdisni), writes results/*.txt (key=value)
# and logs/*.log. Not meant to be run by hand; see tools/verbs-check/verbs-check.sh.
#
#   guest.sh --bind IP [--steps transport,spark,flight,peerexit,sparktcp,bench,ucx,sparkucx,ucxbench] [--leak-rounds N] [--modes sort,verbs]
{
set -uo pipefail
BIND="${SOFTROCE_IP:-}"
STEPS="transport,spark,flight,peerexit,sparktcp,bench"
LEAK_ROUNDS=50
MODES="sort,verbs"
DEV="${SOFTROCE_DEV:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --bind) BIND="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --leak-rounds) LEAK_ROUNDS="$2"; shift 2 ;;
    --modes) MODES="$2"; shift 2 ;;
    --device) DEV="$2"; shift 2 ;;
    *) echo "guest.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$BIND" ] || { echo "guest.sh: --bind IP is required (an address of the RDMA device)" >&2; exit 2; }
W="$(pwd)"
JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
LIB="$W/stage/lib"
mkdir -p results logs
R="$W/results/guest.txt"
: >"$R"
put() { echo "$1=$2" >>"$R"; echo "[guest] $1=$2"; }
cp_of() { sed "s|@W@|$W|g" "stage/cp-$1.txt"; }
has() { case ",$STEPS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
now() { date +%s; }

put guest.kernel "$(uname -r)"
put guest.cpus "$(nproc)"
put guest.memMiB "$(awk '/MemTotal/{print int($2/1024)}' /proc/meminfo)"
command -v rdma >/dev/null && put guest.devices "$(rdma link show 2>/dev/null | awk '{print $2"/"$4}' | tr '\n' ' ')"

# Every user-space verbs object (memory region, queue pair, completion queue, protection domain)
# is listed by `rdma resource show` with the pid that owns it; after a JVM ended none may be left.
# The kernel releases them when the process's uverbs file closes; give it a minute.
leaks_after() {
  local label="$1" n=0 deadline=$(( $(now) + 60 )) k
  while :; do
    n=0
    : >"logs/rdma-after-$label.txt"
    for k in mr qp cq pd; do
      rdma resource show "$k" >>"logs/rdma-after-$label.txt" 2>&1
    done
    # user-space objects carry "pid N comm NAME"; the kernel's own ones "comm [NAME]" and no pid
    n=$(grep -E -c ' pid |comm [^[]' "logs/rdma-after-$label.txt")
    [ "$n" = 0 ] || [ "$(now)" -ge "$deadline" ] && break
    sleep 2
  done
  put "resources.after.$label" "$n"
  if [ "$n" = 0 ]; then put "check.leaks.after-$label" PASS; else
    put "check.leaks.after-$label" FAIL; put "detail.leaks.after-$label" "$(grep -E ' pid |comm [^[]' "logs/rdma-after-$label.txt" | head -5 | tr '\n' ';')"; fi
}

leaks_after start

if has transport; then
  t0=$(now)
  "$JAVA" --add-exports=java.base/sun.nio.ch=ALL-UNNAMED -Djava.library.path="$LIB" \
    -Dmemwire.test.verbs.bind="$BIND" ${DEV:+-Dmemwire.test.verbs.device=$DEV} \
    -cp "$(cp_of transport)" io.memwire.verbscheck.RunTests \
    io.memwire.transfer.VerbsTransferContractTest io.memwire.transfer.VerbsProviderTest \
    io.memwire.shuffle.service.VerbsShuffleServiceTest \
    >logs/transport.log 2>&1
  rc=$?
  put seconds.transport $(( $(now) - t0 ))
  put transport.summary "$(grep -E '^tests=' logs/transport.log | tail -1)"
  put check.transport "$([ $rc = 0 ] && echo PASS || echo FAIL)"
  leaks_after transport
fi

spark_check() {  # LABEL OUT ARGS...: one driver JVM running SparkCheck
  local label="$1" out="$2" t0 rc; shift 2
  t0=$(now)
  # shellcheck disable=SC2046
  "$JAVA" $(cat stage/driver-opts.txt) --add-exports=java.base/sun.nio.ch=ALL-UNNAMED \
    -XX:TieredStopAtLevel=1 -Xmx1g -Djava.library.path="$LIB" ${SPARK_JOPTS:-} -cp "${SPARK_CP:-$(cp_of spark)}" \
    io.memwire.verbscheck.SparkCheck --out "$out" --bind "$BIND" --libdisni "$LIB" \
    --cluster-dir "logs/cluster-$label" --leak-rounds "$LEAK_ROUNDS" "$@" >"logs/$label.log" 2>&1
  rc=$?
  put "seconds.$label" $(( $(now) - t0 ))
  put "check.$label" "$([ $rc = 0 ] && echo PASS || echo FAIL)"
  leaks_after "$label"
}
# Spark's sort shuffle (the reference) and Memwire over verbs: results, counters, leaks, faults.
has spark && spark_check spark results/spark.txt --modes "$MODES"
if has flight; then
  t0=$(now)
  "$JAVA" --add-exports=java.base/sun.nio.ch=ALL-UNNAMED \
    --add-opens=java.base/java.nio=org.apache.arrow.memory.core,ALL-UNNAMED -Xmx1536m \
    -Djava.library.path="$LIB" -cp "$(cp_of flight)" io.memwire.verbscheck.FlightCheck \
    --out results/flight.txt --bind "$BIND" >logs/flight.log 2>&1
  rc=$?
  put seconds.flight $(( $(now) - t0 ))
  put check.flight "$([ $rc = 0 ] && echo PASS || echo FAIL)"
  leaks_after flight
fi

if has peerexit; then
  # A peer JVM that exits (halts, nothing closed) while this one reads from it over verbs.
  t0=$(now)
  rm -rf /tmp/peer-exit; mkdir -p /tmp/peer-exit
  JOPTS=(--add-exports=java.base/sun.nio.ch=ALL-UNNAMED -Djava.library.path="$LIB" -cp "$(cp_of transport)")
  "$JAVA" "${JOPTS[@]}" io.memwire.verbscheck.PeerExitCheck serve /tmp/peer-exit --bind "$BIND" \
    >logs/peerexit-serve.log 2>&1 &
  spid=$!
  : >results/peerexit.txt
  timeout 2400 "$JAVA" "${JOPTS[@]}" io.memwire.verbscheck.PeerExitCheck read /tmp/peer-exit \
    --bind "$BIND" --out results/peerexit.txt >logs/peerexit-read.log 2>&1
  rc=$?
  kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
  cat results/peerexit.txt >>"$R"
  grep -q '^check.peerExit=' results/peerexit.txt || put check.peerExit FAIL
  put seconds.peerexit $(( $(now) - t0 ))
  put check.peerexit "$([ $rc = 0 ] && echo PASS || echo FAIL)"
  leaks_after peerexit
fi

# Memwire over tcp, same jobs, compared with the sort run above: the figures' other side.
has sparktcp && spark_check sparktcp results/spark-tcp.txt --modes tcp --reference results/spark.txt

if has bench; then
  # Transport benchmark vs ib_read_bw, same sizes, both at 8 reads outstanding (queue depth 8).
  t0=$(now)
  ok=PASS
  for size in 65536 1048576 4194304; do
    ib_read_bw ${DEV:+-d $DEV} -s "$size" -n 200 -o 8 -F >"logs/ib_read_bw-$size-server.log" 2>&1 &
    spid=$!
    sleep 3
    if timeout 600 ib_read_bw ${DEV:+-d $DEV} -s "$size" -n 200 -o 8 -F "$BIND" >"logs/ib_read_bw-$size.log" 2>&1; then
      put "bench.ib_read_bw.$size.depth8.avgMBps" "$(awk '$1 ~ /^[0-9]+$/ && NF >= 5 {print $4}' "logs/ib_read_bw-$size.log" | tail -1)"
    else ok=FAIL; fi
    wait "$spid" 2>/dev/null
  done
  "$JAVA" --add-exports=java.base/sun.nio.ch=ALL-UNNAMED -Djava.library.path="$LIB" \
    -cp "$(cp_of transport)" io.memwire.tools.bench.TransferBenchmark --provider verbs \
    --bind "$BIND" --sizes 64k,1m,4m --depths 8 --seconds 5 --repeat 1 --no-raw \
    --csv results/transfer-bench.csv >logs/bench.log 2>&1 || ok=FAIL
  put seconds.bench $(( $(now) - t0 ))
  put check.bench "$ok"
  leaks_after bench
fi
ucx_env() {  # the ucx provider's settings for the ucx, sparkucx and ucxbench steps
  # UCX must not take the JVM's signals: UCX_ERROR_SIGNALS empty in every JVM's environment.
  export UCX_ERROR_SIGNALS= UCX_LOG_LEVEL=error
  UDEV="${UCX_CHECK_DEVICE:-${DEV:-rxe0}}"; UTLS="${UCX_CHECK_TLS:-rc_verbs}"; UGID="${UCX_CHECK_GID:-}"
  UPROPS="-Dmemwire.check.ucx.device=$UDEV -Dmemwire.check.ucx.ucxTransports=$UTLS -Dmemwire.check.ucx.gidIndex=$UGID"
}
if has ucx; then
  # The ucx provider over UCX's verbs transport on the same device: rc_verbs for the reads, its
  # endpoints wired up by rdma_cm (they connect to the peer's UCX listener by socket address).
  # Worker-address endpoints would need ud_verbs, which times out on rxe and then aborts UCX 1.13.
  t0=$(now)
  ucx_env
  put ucx.settings "device=$UDEV ucxTransports=$UTLS gidIndex=$UGID"
  ucx_info -v >logs/ucx_info.txt 2>&1; ucx_info -d >>logs/ucx_info.txt 2>&1
  put ucx.version "$(ucx_info -v 2>/dev/null | sed -n 's/^# *Version *//p' | head -1)"
  put ucx.transportsOnDevice "$(awk '/Transport:/{t=$3} /Device:/{print t"/"$3}' logs/ucx_info.txt | sort -u | tr '\n' ' ')"
  ucxok=PASS
  "$JAVA" --add-exports=java.base/sun.nio.ch=ALL-UNNAMED -Djava.library.path="$LIB" \
    -Dmemwire.test.ucx.bind="$BIND" -Dmemwire.test.ucx.device="$UDEV" \
    -Dmemwire.test.ucx.transports="$UTLS" -Dmemwire.test.ucx.gidIndex="$UGID" \
    -cp "$(cp_of ucx)" io.memwire.verbscheck.RunTests 'io.memwire.transfer.UcxTransferContractTest$OverRdma' \
    >logs/ucx-transport.log 2>&1
  rc=$?
  put ucx.transport.summary "$(grep -E '^tests=' logs/ucx-transport.log | tail -1)"
  put check.ucx.transport "$([ $rc = 0 ] && echo PASS || echo FAIL)"
  [ $rc = 0 ] || ucxok=FAIL
  leaks_after ucx-transport
  "$JAVA" --add-exports=java.base/sun.nio.ch=ALL-UNNAMED \
    --add-opens=java.base/java.nio=org.apache.arrow.memory.core,ALL-UNNAMED -Xmx1536m $UPROPS \
    -Djava.library.path="$LIB" -cp "$(cp_of flightucx)" io.memwire.verbscheck.FlightCheck \
    --out results/flight-ucx.txt --bind "$BIND" --provider ucx >logs/flightucx.log 2>&1
  rc=$?
  put check.flightucx "$([ $rc = 0 ] && echo PASS || echo FAIL)"
  [ $rc = 0 ] || ucxok=FAIL
  leaks_after flightucx
  put seconds.ucx $(( $(now) - t0 ))
  put check.ucx "$ucxok"
fi
if has sparkucx; then
  # Spark over the ucx provider, compared with the sort reference (this run's, else run first).
  ucx_env
  if [ -s results/spark.txt ] && grep -q '^sort\.job\.' results/spark.txt; then
    SPARK_JOPTS="$UPROPS" SPARK_CP="$(cp_of sparkucx)" spark_check sparkucx results/spark-ucx.txt --modes ucx --reference results/spark.txt
  else
    SPARK_JOPTS="$UPROPS" SPARK_CP="$(cp_of sparkucx)" spark_check sparkucx results/spark-ucx.txt --modes sort,ucx
  fi
fi
if has ucxbench; then
  # The transfer benchmark over ucx (rc_verbs, endpoints by rdma_cm) and verbs (DiSNI) beside
  # ib_read_bw, interleaved rounds in one guest run: rxe is RDMA in software, so only the ratios
  # of one round mean anything, and their spread over rounds says how much.
  t0=$(now)
  ok=PASS
  ucx_env
  case "$UDEV" in *:*) ;; *) UDEV="$UDEV:1" ;; esac
  for round in $(seq 1 "${UCX_BENCH_ROUNDS:-3}"); do
    put "ucxbench.round$round.loadavg" "$(cut -d' ' -f1-3 /proc/loadavg)"
    for size in 65536 1048576; do
      ib_read_bw ${DEV:+-d $DEV} -s "$size" -n 200 -o 8 -F >"logs/ucxbench-ibrb-$size-$round-server.log" 2>&1 &
      spid=$!
      sleep 3
      if timeout 600 ib_read_bw ${DEV:+-d $DEV} -s "$size" -n 200 -o 8 -F "$BIND" >"logs/ucxbench-ibrb-$size-$round.log" 2>&1; then
        put "ucxbench.round$round.ib_read_bw.$size.MBps" "$(awk '$1 ~ /^[0-9]+$/ && NF >= 5 {print $4}' "logs/ucxbench-ibrb-$size-$round.log" | tail -1)"
      else ok=FAIL; fi
      wait "$spid" 2>/dev/null
    done
    for p in verbs ucx; do
      env $([ $p = ucx ] && echo "UCX_TLS=$UTLS UCX_NET_DEVICES=$UDEV") \
        "$JAVA" --add-exports=java.base/sun.nio.ch=ALL-UNNAMED -Djava.library.path="$LIB" \
        -cp "$(cp_of ucx)" io.memwire.tools.bench.TransferBenchmark --provider $p \
        --bind "$BIND" --sizes 64k,1m --depths 8 --seconds 5 --repeat 1 --no-raw \
        --csv "results/ucxbench-$p-$round.csv" >"logs/ucxbench-$p-$round.log" 2>&1 || ok=FAIL
      [ -f "results/ucxbench-$p-$round.csv" ] && awk -F, -v p=$p -v r=$round 'NR > 1 {
          print "ucxbench.round" r "." p "." $2 ".MBps=" $4; print "ucxbench.round" r "." p "." $2 ".servingMsPerGiB=" $NF }' \
        "results/ucxbench-$p-$round.csv" | while read -r kv; do put "${kv%%=*}" "${kv#*=}"; done
    done
  done
  put seconds.ucxbench $(( $(now) - t0 ))
  put check.ucxbench "$ok"
  leaks_after ucxbench
fi
echo "[guest] done"
exit
}
