package io.memwire.transfer.fabric;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.function.LongSupplier;

/**
 * Reads the counters the kernel exposes for RDMA devices: per port {@code
 * class/infiniband/<dev>/ports/<n>/counters/} (the standard port counters, absent where the driver
 * has no MADs, as on rxe) and {@code ports/<n>/hw_counters/}, and per device {@code
 * <dev>/hw_counters/}. Names come from the directories; no driver's set is assumed. {@code
 * lifespan} (how long the driver caches values, in ms) is not a counter and is skipped. Thread
 * safe; each {@link #sample} reads the files again.
 */
public final class NicCounters {
  /** A file of {@code hw_counters/} that is a setting, not a counter. */
  static final String LIFESPAN = "lifespan";

  private final SysfsRoot root;
  private final LongSupplier nanoClock;

  /**
   * @param root the sysfs root
   * @param nanoClock the clock rates are computed with (normally {@link System#nanoTime})
   */
  public NicCounters(SysfsRoot root, LongSupplier nanoClock) {
    this.root = root;
    this.nanoClock = nanoClock;
  }

  /** This machine's counters. */
  public static NicCounters system() {
    return new NicCounters(SysfsRoot.SYSTEM, System::nanoTime);
  }

  /** The root read. */
  public SysfsRoot root() {
    return root;
  }

  /** Every RDMA device's name, sorted; empty when there is none. */
  public List<String> devices() {
    List<String> out = new ArrayList<>();
    for (Path d : list(root.infiniband())) {
      out.add(d.getFileName().toString());
    }
    out.sort(null);
    return out;
  }

  /** Every device's counters. */
  public CounterSample sample() {
    return sample(List.of());
  }

  /**
   * The counters of {@code devices} (every device when empty); a device named but absent is
   * reported in {@link CounterSample#unreadable()}.
   */
  public CounterSample sample(Collection<String> devices) {
    List<String> all = devices();
    List<String> read = new ArrayList<>();
    List<String> unreadable = new ArrayList<>();
    if (devices.isEmpty()) {
      read.addAll(all);
    } else {
      for (String d : devices) {
        if (all.contains(d)) {
          read.add(d);
        } else {
          unreadable.add(d + ": no such device under " + root.infiniband());
        }
      }
      read.sort(null);
    }
    SortedMap<CounterKey, Long> values = new TreeMap<>();
    for (String d : read) {
      Path dir = root.device(d);
      readGroup(d, 0, CounterKey.HARDWARE, dir.resolve(CounterKey.HARDWARE), values, unreadable);
      for (Path p : list(dir.resolve("ports"))) {
        int port;
        try {
          port = Integer.parseInt(p.getFileName().toString());
        } catch (NumberFormatException e) {
          continue;
        }
        readGroup(d, port, CounterKey.STANDARD, p.resolve(CounterKey.STANDARD), values, unreadable);
        readGroup(d, port, CounterKey.HARDWARE, p.resolve(CounterKey.HARDWARE), values, unreadable);
      }
    }
    return new CounterSample(nanoClock.getAsLong(), Instant.now(), root, read, values, unreadable);
  }

  private static void readGroup(
      String device,
      int port,
      String group,
      Path dir,
      SortedMap<CounterKey, Long> values,
      List<String> unreadable) {
    if (!Files.isDirectory(dir)) {
      return;
    }
    for (Path f : list(dir)) {
      String name = f.getFileName().toString();
      if (name.equals(LIFESPAN) || !Files.isRegularFile(f)) {
        continue;
      }
      CounterKey key = new CounterKey(device, port, group, name);
      try {
        String text = new String(Files.readAllBytes(f), StandardCharsets.US_ASCII).strip();
        values.put(key, Long.parseUnsignedLong(text));
      } catch (IOException e) {
        // Some drivers list counters the firmware then refuses to read (EINVAL, EOPNOTSUPP).
        unreadable.add(key + ": " + e.getClass().getSimpleName() + " " + e.getMessage());
      } catch (NumberFormatException e) {
        unreadable.add(key + ": not a number");
      }
    }
  }

  /** The entries of a directory, sorted; empty when it is missing or unreadable. */
  private static List<Path> list(Path dir) {
    List<Path> out = new ArrayList<>();
    try (DirectoryStream<Path> s = Files.newDirectoryStream(dir)) {
      s.forEach(out::add);
    } catch (IOException e) { // missing (no such device or group) or unreadable
      return out;
    }
    out.sort(null);
    return out;
  }
}
