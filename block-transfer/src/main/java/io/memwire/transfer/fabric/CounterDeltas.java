package io.memwire.transfer.fabric;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * How much each NIC counter grew between two samples. A counter that went down was either a 32-bit
 * counter that wrapped (its earlier value fits in 32 bits: the delta is taken modulo 2^32) or reset
 * (a driver reload: the delta is its new value); both are noted. The standard {@code
 * port_xmit_data} and {@code port_rcv_data} count 4-octet units: their deltas are in octets. A
 * counter in one sample only is noted and has no delta.
 */
public final class CounterDeltas {
  private static final long WRAP_32 = 1L << 32;

  private final CounterSample before;
  private final CounterSample after;
  private final SortedMap<CounterKey, Long> deltas;
  private final List<String> notes;

  private CounterDeltas(
      CounterSample before,
      CounterSample after,
      SortedMap<CounterKey, Long> deltas,
      List<String> notes) {
    this.before = before;
    this.after = after;
    this.deltas = Collections.unmodifiableSortedMap(deltas);
    this.notes = List.copyOf(notes);
  }

  /** The change from {@code before} to {@code after}. */
  public static CounterDeltas between(CounterSample before, CounterSample after) {
    SortedMap<CounterKey, Long> deltas = new TreeMap<>();
    List<String> notes = new ArrayList<>();
    for (Map.Entry<CounterKey, Long> e : after.values().entrySet()) {
      CounterKey key = e.getKey();
      Long was = before.values().get(key);
      if (was == null) {
        notes.add(key + " appeared during the interval");
        continue;
      }
      long now = e.getValue();
      long d;
      if (Long.compareUnsigned(now, was) >= 0) {
        d = now - was;
      } else if ((was >>> 32) == 0 && (now >>> 32) == 0) {
        d = now + WRAP_32 - was;
        notes.add(key + " wrapped at 2^32");
      } else {
        d = now;
        notes.add(key + " went down from " + Long.toUnsignedString(was) + ": reset");
      }
      deltas.put(key, key.inFourOctets() ? d * 4 : d);
    }
    for (CounterKey key : before.values().keySet()) {
      if (!after.values().containsKey(key)) {
        notes.add(key + " disappeared during the interval");
      }
    }
    return new CounterDeltas(before, after, deltas, notes);
  }

  /** The earlier sample. */
  public CounterSample before() {
    return before;
  }

  /** The later sample. */
  public CounterSample after() {
    return after;
  }

  /** Every counter's growth (octets for the 4-octet data counters), by key. */
  public SortedMap<CounterKey, Long> values() {
    return deltas;
  }

  /** One counter's growth, 0 when it is unknown. */
  public long get(CounterKey key) {
    return deltas.getOrDefault(key, 0L);
  }

  /** Seconds between the samples. */
  public double seconds() {
    return Math.max(0, after.nanos() - before.nanos()) / 1e9;
  }

  /** A counter's growth per second (0 over an empty interval). */
  public double rate(CounterKey key) {
    double s = seconds();
    return s <= 0 ? 0 : get(key) / s;
  }

  /** Wraps, resets and counters that came or went. */
  public List<String> notes() {
    return notes;
  }

  /** Whether the node has no RDMA device. */
  public boolean noDevices() {
    return after.noDevices();
  }
}
