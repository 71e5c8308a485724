package io.memwire.transfer.fabric;

import java.nio.file.Path;

/**
 * Where the kernel's files are: sysfs ({@code /sys}), with configfs mounted at its {@code
 * kernel/config}. Tests point it at a recorded tree.
 *
 * @param path the sysfs root
 */
public record SysfsRoot(Path path) {
  /** This machine's {@code /sys}. */
  public static final SysfsRoot SYSTEM = new SysfsRoot(Path.of("/sys"));

  /** {@code class/infiniband}: one directory per RDMA device. */
  public Path infiniband() {
    return path.resolve("class").resolve("infiniband");
  }

  /** One device's directory under {@link #infiniband()}. */
  public Path device(String name) {
    return infiniband().resolve(name);
  }

  /**
   * {@code kernel/config/rdma_cm}: configfs's rdma_cm directory (present once rdma_cm is loaded).
   */
  public Path rdmaCm() {
    return path.resolve("kernel").resolve("config").resolve("rdma_cm");
  }

  @Override
  public String toString() {
    return path.toString();
  }
}
