package io.memwire.transfer.verbs;

import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Checks, without side effects beyond loading libdisni, whether the verbs provider can run with a
 * configuration here: an RDMA device exists, libdisni loads, the bind address (or the configured
 * {@code device}) is served by an active port, and the memlock limit covers the registration
 * budget. Every failure is one sentence a user can act on.
 */
public final class VerbsProbe {
  private VerbsProbe() {}

  /** Where the provider binds: the device port and the IPv4 address. */
  public static final class Binding {
    private final RdmaInventory.Device device;
    private final RdmaInventory.Port port;
    private final InetAddress address;
    private final String how;

    Binding(RdmaInventory.Device device, RdmaInventory.Port port, InetAddress address, String how) {
      this.device = device;
      this.port = port;
      this.address = address;
      this.how = how;
    }

    public RdmaInventory.Device device() {
      return device;
    }

    public RdmaInventory.Port port() {
      return port;
    }

    public InetAddress address() {
      return address;
    }

    /** How the address was tied to the device, e.g. "RoCE v2 GID 1". */
    public String how() {
      return how;
    }

    @Override
    public String toString() {
      return address.getHostAddress()
          + " on "
          + device.name()
          + " port "
          + port.number()
          + " ("
          + how
          + ")";
    }
  }

  /** Why verbs cannot be used with {@code config} on this machine, or empty when it can. */
  public static Optional<String> unavailableReason(TransferConfig config) {
    return unavailableReason(
        config, RdmaInventory.system(), MemlockLimit.PROC_SELF_LIMITS, DisniLibrary::loadError);
  }

  /**
   * The same check against a given sysfs tree, limits file and library check (for tests and the
   * doctor).
   */
  public static Optional<String> unavailableReason(
      TransferConfig config,
      RdmaInventory inventory,
      Path limitsFile,
      Supplier<Optional<String>> libraryCheck) {
    if (inventory.devices().isEmpty()) {
      return Optional.of(
          "no RDMA device found ("
              + inventory.sysfs().resolve("class/infiniband")
              + " is empty or missing)");
    }
    Optional<String> lib = libraryCheck.get();
    if (lib.isPresent()) {
      return lib;
    }
    Binding b;
    try {
      b = resolve(config, inventory);
    } catch (TransferConfigException e) {
      return Optional.of(e.getMessage());
    }
    if (!b.port().isActive()) {
      return Optional.of(
          b.device().name()
              + " port "
              + b.port().number()
              + " serving "
              + b.address().getHostAddress()
              + " is not active (state "
              + b.port().state()
              + ", phys_state "
              + b.port().physState()
              + "); check the cable, switch port or link");
    }
    return MemlockLimit.budgetProblem(MemlockLimit.read(limitsFile), config.registrationBudget());
  }

  /**
   * Which device port and address the provider binds to. With {@code device} set and the default
   * loopback bind address, the device's first IPv4 address is used; otherwise the bind address must
   * belong to an RDMA device (and to the named one, when given). Never by hostname guess.
   *
   * @throws TransferConfigException naming the key when no usable binding exists
   */
  public static Binding resolve(TransferConfig config, RdmaInventory inventory) {
    Optional<String> deviceName = config.device();
    InetAddress bind;
    try {
      bind = InetAddress.getByName(config.bindAddress());
    } catch (UnknownHostException e) {
      throw new TransferConfigException(
          TransferConfig.BIND_ADDRESS + "=" + config.bindAddress() + " does not resolve", e);
    }
    if (deviceName.isPresent()) {
      String spec = deviceName.get();
      int colon = spec.indexOf(':');
      String name = colon < 0 ? spec : spec.substring(0, colon);
      Integer portNumber = colon < 0 ? null : Integer.valueOf(spec.substring(colon + 1));
      RdmaInventory.Device d =
          inventory
              .device(name)
              .orElseThrow(
                  () ->
                      new TransferConfigException(
                          TransferConfig.DEVICE
                              + "="
                              + spec
                              + (colon < 0 ? "" : " names " + name + ", which")
                              + " is not an RDMA "
                              + "device here; devices: "
                              + inventory.summary()));
      RdmaInventory.Port wanted = portNumber == null ? null : port(d, portNumber, spec);
      if (bind.isLoopbackAddress() || bind.isAnyLocalAddress()) {
        List<InetAddress> addrs =
            wanted == null ? inventory.ipv4Addresses(d) : inventory.ipv4Addresses(d, wanted);
        if (addrs.isEmpty()) {
          throw new TransferConfigException(
              TransferConfig.DEVICE
                  + "="
                  + spec
                  + " has no IPv4 address (no IPv4-mapped GID, no addressed interface); configure an "
                  + "address on its interface or set "
                  + TransferConfig.BIND_ADDRESS);
        }
        InetAddress a = addrs.get(0);
        RdmaInventory.Owner o = inventory.ownerOf(a).orElse(null);
        RdmaInventory.Port port = wanted != null ? wanted : o != null ? o.port() : d.ports().get(0);
        return new Binding(
            d, port, a, "first IPv4 address of " + TransferConfig.DEVICE + "=" + spec);
      }
      RdmaInventory.Owner o = owner(config, bind, inventory);
      if (!o.device().name().equals(name)
          || (wanted != null && o.port().number() != wanted.number())) {
        throw new TransferConfigException(
            TransferConfig.BIND_ADDRESS
                + "="
                + config.bindAddress()
                + " belongs to RDMA device "
                + o.device().name()
                + (wanted == null ? "" : " port " + o.port().number())
                + ", not to "
                + TransferConfig.DEVICE
                + "="
                + spec);
      }
      return new Binding(o.device(), o.port(), bind, o.how());
    }
    RdmaInventory.Owner o = owner(config, bind, inventory);
    return new Binding(o.device(), o.port(), bind, o.how());
  }

  /** The port {@code number} of {@code d}, or an error listing the ports it has. */
  private static RdmaInventory.Port port(RdmaInventory.Device d, int number, String spec) {
    for (RdmaInventory.Port p : d.ports()) {
      if (p.number() == number) {
        return p;
      }
    }
    List<String> have = new java.util.ArrayList<>();
    for (RdmaInventory.Port p : d.ports()) {
      have.add(Integer.toString(p.number()));
    }
    throw new TransferConfigException(
        TransferConfig.DEVICE
            + "="
            + spec
            + ": "
            + d.name()
            + " has no port "
            + number
            + " (ports: "
            + (have.isEmpty() ? "none" : String.join(", ", have))
            + ")");
  }

  private static RdmaInventory.Owner owner(
      TransferConfig config, InetAddress bind, RdmaInventory inventory) {
    if (!(bind instanceof Inet4Address)) {
      throw new TransferConfigException(
          TransferConfig.BIND_ADDRESS
              + "="
              + config.bindAddress()
              + " is not IPv4; the verbs provider (DiSNI) binds IPv4 addresses only");
    }
    return inventory
        .ownerOf(bind)
        .orElseThrow(
            () ->
                new TransferConfigException(
                    TransferConfig.BIND_ADDRESS
                        + "="
                        + config.bindAddress()
                        + " is not an address of any "
                        + "RDMA device (devices: "
                        + inventory.summary()
                        + "); set "
                        + TransferConfig.BIND_ADDRESS
                        + " to one of those addresses or "
                        + TransferConfig.DEVICE
                        + " to a device name"));
  }
}
