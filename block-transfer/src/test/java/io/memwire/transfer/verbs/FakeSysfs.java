package io.memwire.transfer.verbs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Builds sysfs-shaped directory trees (class/infiniband, class/net) for tests. */
public final class FakeSysfs {
  private final Path root;

  public FakeSysfs(Path root) {
    this.root = root;
    mkdirs(root.resolve("class/infiniband"));
    mkdirs(root.resolve("class/net"));
  }

  public Path root() {
    return root;
  }

  /** A RoCE port whose GID 1 is the RoCE v2 GID of {@code ipv4} on {@code netdev}. */
  public FakeSysfs rocePort(
      String device, int port, boolean active, String ipv4, String netdev, int netdevMtu) {
    Path p = root.resolve("class/infiniband/" + device + "/ports/" + port);
    write(root.resolve("class/infiniband/" + device + "/node_type"), "1: CA");
    write(p.resolve("state"), active ? "4: ACTIVE" : "1: DOWN");
    write(p.resolve("phys_state"), active ? "5: LinkUp" : "3: Disabled");
    write(p.resolve("link_layer"), "Ethernet");
    write(p.resolve("gids/0"), "fe80:0000:0000:0000:0200:00ff:fe00:0001");
    write(p.resolve("gid_attrs/types/0"), "IB/RoCE v1");
    write(p.resolve("gid_attrs/ndevs/0"), netdev);
    if (ipv4 != null) {
      String[] o = ipv4.split("\\.");
      String gid =
          String.format(
              "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x",
              Integer.parseInt(o[0]),
              Integer.parseInt(o[1]),
              Integer.parseInt(o[2]),
              Integer.parseInt(o[3]));
      write(p.resolve("gids/1"), gid);
      write(p.resolve("gid_attrs/types/1"), "RoCE v2");
      write(p.resolve("gid_attrs/ndevs/1"), netdev);
    }
    write(p.resolve("gids/2"), "0000:0000:0000:0000:0000:0000:0000:0000");
    write(root.resolve("class/net/" + netdev + "/mtu"), Integer.toString(netdevMtu));
    return this;
  }

  /** Sets a device's sysfs {@code node_type} (the kernel writes e.g. {@code 4: RNIC} for iWARP). */
  public FakeSysfs nodeType(String device, String nodeType) {
    write(root.resolve("class/infiniband/" + device + "/node_type"), nodeType);
    return this;
  }

  /** An InfiniBand port with the IPoIB interface {@code netdev} under device/net. */
  public FakeSysfs ibPort(String device, int port, boolean active, String netdev) {
    Path d = root.resolve("class/infiniband/" + device);
    Path p = d.resolve("ports/" + port);
    write(d.resolve("node_type"), "1: CA");
    write(p.resolve("state"), active ? "4: ACTIVE" : "2: INIT");
    write(p.resolve("phys_state"), active ? "5: LinkUp" : "2: Polling");
    write(p.resolve("link_layer"), "InfiniBand");
    write(p.resolve("gids/0"), "fe80:0000:0000:0000:0002:c903:0010:a1b2");
    mkdirs(d.resolve("device/net/" + netdev));
    return this;
  }

  /**
   * A /proc/self/limits file with the given memlock soft and hard limits ("unlimited" or bytes).
   */
  public Path limits(String soft, String hard) {
    Path f = root.resolve("limits");
    write(
        f,
        "Limit                     Soft Limit           Hard Limit           Units     \n"
            + "Max cpu time              unlimited            unlimited            seconds   \n"
            + String.format("Max locked memory         %-20s %-20s bytes     %n", soft, hard)
            + "Max open files            1048576              1048576              files     \n");
    return f;
  }

  private static void write(Path f, String s) {
    try {
      Files.createDirectories(f.getParent());
      Files.write(f, (s + "\n").getBytes(StandardCharsets.US_ASCII));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void mkdirs(Path d) {
    try {
      Files.createDirectories(d);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
