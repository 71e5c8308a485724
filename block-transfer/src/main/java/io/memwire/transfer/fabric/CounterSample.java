package io.memwire.transfer.fabric;

import java.time.Instant;
import java.util.Collections;
import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * Every NIC counter of some devices read at one moment, and what could not be read.
 *
 * @param nanos {@link System#nanoTime()} (or the reader's clock) when the reading ended
 * @param at the wall-clock time of the reading
 * @param root the sysfs root read
 * @param devices the devices read, sorted; empty when the node has no RDMA device
 * @param values the raw values (unsigned), as the files print them
 * @param unreadable what could not be read and why, one entry each
 */
public record CounterSample(
    long nanos,
    Instant at,
    SysfsRoot root,
    List<String> devices,
    SortedMap<CounterKey, Long> values,
    List<String> unreadable) {
  /** Copies the collections. */
  public CounterSample {
    devices = List.copyOf(devices);
    values = Collections.unmodifiableSortedMap(new TreeMap<>(values));
    unreadable = List.copyOf(unreadable);
  }

  /** Whether the node has no RDMA device at all. */
  public boolean noDevices() {
    return devices.isEmpty();
  }

  /** The raw value of a counter, or -1 when this sample does not have it. */
  public long raw(CounterKey key) {
    Long v = values.get(key);
    return v == null ? -1 : v;
  }

  /** The change from {@code before} to this sample. */
  public CounterDeltas since(CounterSample before) {
    return CounterDeltas.between(before, this);
  }
}
