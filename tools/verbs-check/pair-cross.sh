# pair-cross.sh - the `cross` step of the guest pair, sourced by pair-guest.sh (uses its ME, PEER,
# IP, PEER_IP, W, X, LIB, JAVA, barrier, now). Flight first: B serves the check's producer over
# gRPC and wrapped (rdma:// endpoints), A pulls 1 MiB and 16 MiB batches with both and compares.
# Then Spark: a standalone master in A, a worker (1 core, one executor) in each guest; the driver
# in A runs the jobs with Spark's sort shuffle (local[2], the reference), then on the two workers
# with Memwire over verbs (fallback=false; each executor binds its own host), so each executor reads
# the other's map outputs over the wire. Results: results/CN-a.txt, results/CN-b.txt.
# CN names the run (cross; crossmtu with CROSS_PITFALL=mtu: A's MTU set larger by pair-guest.sh,
# Flight in auto and Spark with fallback=true, expecting DoGet and Spark's fetch for A's reads).
CN="${CN:-cross}"; PF="${CROSS_PITFALL:+--pitfall $CROSS_PITFALL}"
CR="$W/results/$CN-$ME.txt"; : >"$CR"
cput() { echo "$1=$2" >>"$CR"; echo "[$CN $ME] $1=$2"; }
# check.NAME=PASS when both guests' results hold at least MIN check.PREFIX.* lines, all PASS.
cross_verdict() {  # NAME PREFIX MIN
  local n f
  n=$(cat "results/$CN-a.txt" "results/$CN-b.txt" | grep -c "^check\\.$2\\.")
  f=$(cat "results/$CN-a.txt" "results/$CN-b.txt" | grep "^check\\.$2\\." | grep -vc '=PASS$')
  if [ "$n" -ge "$3" ] && [ "$f" = 0 ]; then cput "check.$1" PASS; else cput "check.$1" FAIL; cput "detail.$1" "$n checks, $f not PASS"; fi
}
T_CROSS=$(now)
DOPTS="$(cat "$W/stage/driver-opts.txt")"

# ---------------------------------------------------------------- Flight
CPF="$(sed "s|@W@|$W|g" "$W/stage/cp-flight.txt")"
FOPTS=(--add-exports=java.base/sun.nio.ch=ALL-UNNAMED --add-opens=java.base/java.nio=org.apache.arrow.memory.core,ALL-UNNAMED
  -Xmx1g -XX:TieredStopAtLevel=1 -Djava.library.path="$LIB" -cp "$CPF")
rm -f "$X/flight-ports" "$X/flight-ports.tmp" "$X/flight-done"
barrier "$CN-flight-start"
t0=$(now)
if [ "$ME" = b ]; then
  timeout 2400 "$JAVA" "${FOPTS[@]}" io.memwire.verbscheck.CrossFlightCheck serve "$X" --bind "$IP" \
    --name "$CN" --out "$CR" >"logs/$CN-flight-serve.log" 2>&1
  rc=$?
else
  timeout 2400 "$JAVA" "${FOPTS[@]}" io.memwire.verbscheck.CrossFlightCheck read "$X" --bind "$IP" \
    --peer "$PEER_IP" --name "$CN" $PF --out "$CR" >"logs/$CN-flight-read.log" 2>&1
  rc=$?
  touch "$X/flight-done"   # in case the reader died before saying so
fi
cput "$CN.flight.$ME.rc" "$rc"
barrier "$CN-flight-done"
if [ "$ME" = a ]; then
  cput "seconds.$CN.flight" $(( $(now) - t0 ))
  # 1 MiB, 16 MiB, the client's allocators (A), the server's allocators and registrations (B).
  cross_verdict "$CN.flight" "$CN.flight" 4
fi

# ---------------------------------------------------------------- Spark
CPS="$(sed "s|@W@|$W|g" "$W/stage/cp-spark.txt")"
export SPARK_HOME=/tmp/spark-home SPARK_LOCAL_IP="$IP" SPARK_DIST_CLASSPATH="$CPS"
SPARK_SCALA_VERSION="$(ls "$W"/stage/spark-jars/scala-library-*.jar | sed 's|.*/scala-library-\([0-9]*\.[0-9]*\).*|\1|' | head -1)"
export SPARK_SCALA_VERSION
# Workers want SPARK_HOME/jars; the executors' class path comes from SPARK_DIST_CLASSPATH.
mkdir -p "$SPARK_HOME/jars" /tmp/spark-work
SOPTS=($DOPTS -Xmx256m -XX:TieredStopAtLevel=1 -cp "$CPS")
rm -f "$X/spark-master-up" "$X/spark-done"
t0=$(now)
MPID=""
if [ "$ME" = a ]; then
  "$JAVA" "${SOPTS[@]}" org.apache.spark.deploy.master.Master --host "$IP" --port 7077 --webui-port 8080 \
    >"logs/$CN-spark-master.log" 2>&1 &
  MPID=$!
  deadline=$(( $(now) + 900 ))
  until grep -q "I have been elected leader" "logs/$CN-spark-master.log" 2>/dev/null || [ "$(now)" -ge "$deadline" ] \
    || ! kill -0 "$MPID" 2>/dev/null; do sleep 2; done
  cput "$CN.spark.master" "$(grep -m1 'Starting Spark master at' "logs/$CN-spark-master.log")"
fi
barrier "$CN-spark-master"
"$JAVA" "${SOPTS[@]}" org.apache.spark.deploy.worker.Worker --host "$IP" --cores 1 --memory 800m \
  --work-dir /tmp/spark-work "spark://198.18.0.1:7077" >"logs/$CN-spark-worker-$ME.log" 2>&1 &
WPID=$!
deadline=$(( $(now) + 900 ))
until grep -q "Successfully registered with master" "logs/$CN-spark-worker-$ME.log" 2>/dev/null \
  || [ "$(now)" -ge "$deadline" ] || ! kill -0 "$WPID" 2>/dev/null; do sleep 2; done
cput "$CN.spark.worker.$ME" "$(grep -m1 'Successfully registered with master' "logs/$CN-spark-worker-$ME.log" || echo "not registered")"
barrier "$CN-spark-workers"
if [ "$ME" = a ]; then
  # The sort shuffle's digests from a cross run of this boot, when one ran (else computed again).
  REF="$W/results/cross-a.txt"; for c in cross crossmtu crossfw; do
    grep -q '^cross\.spark\.sort\.' "$W/results/$c-a.txt" 2>/dev/null && { REF="$W/results/$c-a.txt"; break; }
  done
  timeout 3600 "$JAVA" $DOPTS -Xmx1g -XX:TieredStopAtLevel=1 -Djava.library.path="$LIB" -cp "$CPS" \
    io.memwire.verbscheck.CrossSparkCheck --out "$CR" --master "spark://$IP:7077" --bind "$IP" \
    --libdisni "$LIB" --name "$CN" $PF --spark-work /tmp/spark-work --reference "$REF" \
    >"logs/$CN-spark-driver.log" 2>&1
  cput "$CN.spark.driver.rc" "$?"
  touch "$X/spark-done"
else
  # The driver runs longer than a barrier waits.
  deadline=$(( $(now) + 3900 ))
  until [ -e "$X/spark-done" ] || [ "$(now)" -ge "$deadline" ]; do sleep 5; done
fi
kill "$WPID" 2>/dev/null; wait "$WPID" 2>/dev/null
[ -z "$MPID" ] || { kill "$MPID" 2>/dev/null; wait "$MPID" 2>/dev/null; }
rm -rf "logs/$CN-spark-work-$ME"; cp -r /tmp/spark-work "logs/$CN-spark-work-$ME" 2>/dev/null
barrier "$CN-spark-done"
if [ "$ME" = a ]; then
  cput "seconds.$CN.spark.cluster" $(( $(now) - t0 ))
  # Executors in two guests, both jobs' results, the per-executor counters (and, under the
  # pitfall, the executor log naming the cause).
  cross_verdict "$CN.spark" "$CN.spark" $([ -n "$PF" ] && echo 5 || echo 4)
  v=PASS; grep -q "^check.$CN.flight=PASS" "$CR" && grep -q "^check.$CN.spark=PASS" "$CR" || v=FAIL
  cput "check.$CN" "$v"
  cput "seconds.$CN" $(( $(now) - T_CROSS ))
fi
echo "[$CN $ME] done"
