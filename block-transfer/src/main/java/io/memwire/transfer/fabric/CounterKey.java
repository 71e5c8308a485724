package io.memwire.transfer.fabric;

import java.util.Comparator;

/**
 * One NIC counter: a file of a device's counter directories.
 *
 * @param device the RDMA device, e.g. {@code mlx5_0}
 * @param port the port number, or 0 for a device-wide counter ({@code <dev>/hw_counters/})
 * @param group {@link #STANDARD} ({@code ports/<n>/counters/}) or {@link #HARDWARE} ({@code
 *     hw_counters/})
 * @param name the file's name, as the driver spells it
 */
public record CounterKey(String device, int port, String group, String name)
    implements Comparable<CounterKey> {
  /** The port counters of the InfiniBand specification ({@code counters/}). */
  public static final String STANDARD = "counters";

  /** The driver's own counters ({@code hw_counters/}). */
  public static final String HARDWARE = "hw_counters";

  private static final Comparator<CounterKey> ORDER =
      Comparator.comparing(CounterKey::device)
          .thenComparingInt(CounterKey::port)
          .thenComparing(CounterKey::group)
          .thenComparing(CounterKey::name);

  /**
   * Whether the file counts units of 4 octets: the standard {@code port_xmit_data} and {@code
   * port_rcv_data}.
   */
  public boolean inFourOctets() {
    return group.equals(STANDARD)
        && (name.equals("port_xmit_data") || name.equals("port_rcv_data"));
  }

  /** {@code device/port} ({@code device} for a device-wide counter). */
  public String where() {
    return port == 0 ? device : device + "/" + port;
  }

  @Override
  public int compareTo(CounterKey o) {
    return ORDER.compare(this, o);
  }

  @Override
  public String toString() {
    return where() + "/" + group + "/" + name;
  }
}
