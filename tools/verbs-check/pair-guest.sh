#!/usr/bin/env bash
# pair-guest.sh - the fabric pitfall steps of `bin/memwire verbs-check`, run in both Soft-RoCE
# guests of `run-in-vm.sh --pair` (A 198.18.0.1, B 198.18.0.2, rxe0 on eth0, joined by a wire) from
# the staged work directory (cwd, shared as /mnt/host). Each guest serves a patterned region over
# verbs and tcp (FabricPitfallCheck serve); the reader runs FabricPitfallCheck read and the doctor
# (`--peer`, reading the same region) per step while the other guest sets up the pitfall:
#   loss      tc netem loss 2% on B's eth0 (B sends the read responses): A reads B
#   firewall  nftables drops UDP 4791 in B: A reads B
#   mtu       eth0 MTU 4200 in A (RoCE MTU 4096), 1500 in B: A reads B (A connects), then B reads A
#   cross     Flight and Spark across the guests: B serves Flight over verbs (rdma:// endpoints), A
#             pulls 1 MiB and 16 MiB batches and compares them with gRPC DoGet's; then a Spark
#             standalone master in A, a worker in each guest (one executor each), the driver in A
#             runs the jobs with Memwire over verbs, each executor reading the other's map outputs
#   crossmtu  cross under the MTU pitfall (eth0 MTU 4200 in A, 1500 in B): A's Flight pulls and its
#             executor's reads are refused at connect, naming the MTUs, and go to DoGet and to
#             Spark's own fetch (fallback=true); B's executor reads A one-sided; same results
#   crossfw   cross with UDP 4791 dropped in B: no verbs connect completes; Flight goes to DoGet,
#             both executors to Spark's fetch within their connect timeout, naming the firewall
# Results: results/pitfall-a.txt, results/pitfall-b.txt (key=value); logs/pitfall-*.log; cross:
# results/cross-a.txt, results/cross-b.txt, logs/cross-*.log, logs/cross-spark-work-*/ (crossmtu:
# the same with crossmtu).
#
#   pair-guest.sh --steps loss,firewall,mtu,cross,crossmtu,crossfw
{
set -uo pipefail
STEPS="clean,loss,firewall,mtu"
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) STEPS="$2"; shift 2 ;;
    *) echo "pair-guest.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
ROLE="${SOFTROCE_ROLE:?pair-guest.sh runs in a --pair guest}"
ME="$ROLE"; PEER=$([ "$ROLE" = a ] && echo b || echo a)
IP="$SOFTROCE_IP"; PEER_IP="$SOFTROCE_PEER_IP"; NET="${SOFTROCE_NETDEV:-eth0}"
W="$(pwd)"; JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"; LIB="$W/stage/lib"
X="$W/pair"   # files both guests see (the share is uncached 9p: a write is seen at once)
mkdir -p results logs "$X"
R="$W/results/pitfall-$ME.txt"; : >"$R"
put() { echo "$1=$2" >>"$R"; echo "[pitfall $ME] $1=$2"; }
# check.STEP for the verdict: PASS when every check.pitfall.LABEL line of that step in both
# guests' results says PASS.
step_verdict() {  # STEP LABEL...
  local step="$1" v=PASS l; shift
  for l in "$@"; do
    grep -qh "^check.pitfall.$l=PASS" results/pitfall-a.txt results/pitfall-b.txt 2>/dev/null || v=FAIL
  done
  put "check.$step" "$v"
}
has() { case ",$STEPS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
now() { date +%s; }
barrier() { softroce-barrier "$1" 900 || { put "barrier.$1" "timed out"; exit 1; }; }
CP="$(sed "s|@W@|$W|g" stage/cp-pair.txt)"
JOPTS=(--add-exports=java.base/sun.nio.ch=ALL-UNNAMED -XX:TieredStopAtLevel=1 -Xmx384m -Djava.library.path="$LIB" -cp "$CP")
# rxe has no active_mtu file: its RoCE MTU follows the netdev's (the largest IB MTU that fits
# with the RoCE v2 headers, as RdmaInventory computes it).
roce_mtu() { local room=$(( $(cat /sys/class/net/$NET/mtu) - 96 )) m=4096; while [ "$m" -gt 256 ] && [ "$m" -gt "$room" ]; do m=$(( m / 2 )); done; echo "$m"; }
mtus() { echo "$NET $(cat /sys/class/net/$NET/mtu), RoCE MTU $(roce_mtu)"; }
hw() { (cd /sys/class/infiniband/rxe0/ports/1/hw_counters && grep -H . * | tr '\n' ' '); }
read_check() {  # LABEL EXPECT [ARGS...]: read the peer's region over verbs, then the doctor
  local label="$1" expect="$2" t0 rc; shift 2
  put "pitfall.$label.reader" "$ME ($IP, $NET MTU $(cat /sys/class/net/$NET/mtu)) reads $PEER ($PEER_IP)"
  t0=$(now)
  timeout 600 "$JAVA" "${JOPTS[@]}" io.memwire.verbscheck.FabricPitfallCheck read "$X" --bind "$IP" \
    --from "$PEER" --case "$label" --expect "$expect" --out "$R" "$@" >"logs/pitfall-$label-read.log" 2>&1
  rc=$?
  put "pitfall.$label.rc" "$rc"
  put "seconds.pitfall.$label" $(( $(now) - t0 ))
  grep -q "^check.pitfall.$label=" "$R" || put "check.pitfall.$label" FAIL
  # The doctor, given the peer (and its MTU, as `doctor --serve` prints it), finds the same cause.
  t0=$(now)
  local PEER_MTU; PEER_MTU="$(cat "$X/mtu-$PEER")"
  timeout 600 "$JAVA" "${JOPTS[@]}" io.memwire.tools.doctor.Doctor --provider verbs --bind "$IP" \
    --set readTimeout="${DOCTOR_READ_TIMEOUT:-20s}" --set connectTimeout=20s \
    --peer "$(sed -n 's/^verbs \(.*\)$/\1/p' "$X/node-$PEER")" --region "$(cat "$X/region-$PEER-doctor.b64")" \
    ${PEER_MTU:+--peer-mtu "$PEER_MTU"} >"logs/pitfall-$label-doctor.log" 2>&1
  put "pitfall.$label.doctor.rc" "$?"
  put "seconds.pitfall.$label.doctor" $(( $(now) - t0 ))
  grep -E '^[A-Z]+ +(peer|peer-mtu) ' "logs/pitfall-$label-doctor.log" | while IFS= read -r l; do
    put "pitfall.$label.doctor" "$l"
  done
}

PITFALLS=0
for s in clean loss firewall mtu; do has "$s" && PITFALLS=1; done
if [ "$PITFALLS" = 1 ]; then
put "pitfall.$ME.kernel" "$(uname -r)"
put "pitfall.$ME.mtu.start" "$(mtus)"
rm -f "$X/done-$ME" "$X/node-$ME" "$X/mtu-$ME" "$X/region-$ME-verbs.b64" "$X/region-$ME-tcp.b64" "$X/region-$ME-doctor.b64"
"$JAVA" "${JOPTS[@]}" io.memwire.verbscheck.FabricPitfallCheck serve "$X" --bind "$IP" --name "$ME" \
  >"logs/pitfall-serve-$ME.log" 2>&1 &
SPID=$!
deadline=$(( $(now) + 600 ))
until [ -s "$X/mtu-$ME" ] || [ "$(now)" -ge "$deadline" ] || ! kill -0 "$SPID" 2>/dev/null; do sleep 1; done
[ -s "$X/mtu-$ME" ] || { put pitfall.serve "the serving JVM did not start (logs/pitfall-serve-$ME.log)"; tail -5 "logs/pitfall-serve-$ME.log"; exit 1; }
sed -n 's/^pitfall serve [ab]: verbs \/\?\([^,]*\), tcp.*/verbs \1/p' "logs/pitfall-serve-$ME.log" >"$X/node-$ME"
put "pitfall.$ME.serving" "$(grep -m1 '^pitfall serve' "logs/pitfall-serve-$ME.log")"
barrier serving

if has clean; then
  t0=$(now)
  [ "$ME" = a ] && read_check clean ok --mib 4
  barrier clean-done
  [ "$ME" = a ] && { put seconds.clean $(( $(now) - t0 )); step_verdict clean clean; }
fi
if has loss; then
  if [ "$ME" = b ]; then
    tc qdisc add dev "$NET" root netem loss 2%
    put pitfall.loss.setup "$(tc qdisc show dev "$NET" | head -1)"
  fi
  barrier loss-set
  t0=$(now)
  [ "$ME" = a ] && DOCTOR_READ_TIMEOUT=240s read_check loss retransmissions --mib 2 --read-timeout 240
  barrier loss-done
  [ "$ME" = a ] && { put seconds.loss $(( $(now) - t0 )); step_verdict loss loss; }
  if [ "$ME" = b ]; then
    put pitfall.loss.netem "$(tc -s qdisc show dev "$NET" | tr '\n' ' ')"
    tc qdisc del dev "$NET" root
  fi
  barrier loss-cleared
fi
if has firewall; then
  if [ "$ME" = b ]; then
    nft add table inet memwire_check
    nft add chain inet memwire_check input '{ type filter hook input priority 0; policy accept; }'
    nft add rule inet memwire_check input udp dport 4791 counter drop
    put pitfall.firewall.setup "nft: inet memwire_check input udp dport 4791 drop"
  fi
  barrier firewall-set
  t0=$(now)
  [ "$ME" = a ] && read_check firewall udp4791 --mib 4
  barrier firewall-done
  [ "$ME" = a ] && { put seconds.firewall $(( $(now) - t0 )); step_verdict firewall firewall; }
  if [ "$ME" = b ]; then
    put pitfall.firewall.dropped "$(nft list table inet memwire_check | grep -o 'counter packets [0-9]* bytes [0-9]*')"
    nft delete table inet memwire_check
  fi
  barrier firewall-cleared
fi
if has mtu; then
  # Only A's MTU changes (rxe follows its netdev); A connects for the stalled direction.
  if [ "$ME" = a ]; then
    ip link set "$NET" mtu 4200
    sleep 1
  fi
  put pitfall.mtu.setup "$(mtus)"
  # The serving nodes published their MTU at start: publish it again now.
  roce_mtu >"$X/mtu-$ME"
  barrier mtu-set
  t0=$(now)
  [ "$ME" = a ] && read_check mtu-a-reads-b mtu --mib 4
  barrier mtu-a-done
  [ "$ME" = b ] && read_check mtu-b-reads-a ok --mib 4
  barrier mtu-b-done
  if [ "$ME" = a ]; then
    ip link set "$NET" mtu 1500
    put seconds.mtu $(( $(now) - t0 ))
    step_verdict mtu mtu-a-reads-b mtu-b-reads-a
  fi
fi
put "pitfall.$ME.hw_counters.end" "$(hw)"
touch "$X/done-$ME"
wait "$SPID"
put "pitfall.$ME.serve.rc" "$?"
echo "[pitfall $ME] done"
fi
# Without the cross steps the guest's status is 0 (a bare `has cross && ...` would end it with 1).
if has cross; then CN=cross CROSS_PITFALL="" . "$W/tools/pair-cross.sh"; fi
if has crossmtu; then
  [ "$ME" = a ] && { ip link set "$NET" mtu 4200; sleep 1; }
  echo "[crossmtu $ME] $(mtus)"
  CN=crossmtu CROSS_PITFALL=mtu . "$W/tools/pair-cross.sh"
  [ "$ME" = a ] && ip link set "$NET" mtu 1500
fi
if has crossfw; then
  if [ "$ME" = b ]; then
    nft add table inet memwire_crossfw
    nft add chain inet memwire_crossfw input '{ type filter hook input priority 0; policy accept; }'
    nft add rule inet memwire_crossfw input udp dport 4791 counter drop
  fi
  CN=crossfw CROSS_PITFALL=udp4791 . "$W/tools/pair-cross.sh"
  if [ "$ME" = b ]; then
    echo "[crossfw b] dropped $(nft list table inet memwire_crossfw | grep -o 'counter packets [0-9]*')"
    nft delete table inet memwire_crossfw
  fi
fi
exit
}
