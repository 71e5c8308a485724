package io.memwire.transfer.settings;

import io.memwire.transfer.TransferConfigException;

/**
 * The transport's settings for the RDMA fabric, which only the verbs and ucx providers read: the
 * device and port, the GID and the QoS classes of the node's RDMA traffic, UCX's transports and
 * further UCX settings, and whether verbs nodes tell each other their MTUs without a secret.
 * Declared once here; {@link TransportSettings#ALL} lists them with every other transport key, in
 * documentation order.
 */
public final class FabricSettings {
  private FabricSettings() {}

  public static final Setting<String> DEVICE =
      Setting.key("device")
          .since(TransportSettings.V010)
          .doc(
              "The RDMA device (and port) to use. verbs: bind to the first IPv4 address of this "
                  + "device's network interface when no bindAddress is given. ucx: the device UCX "
                  + "uses (UCX_NET_DEVICES; port 1 when none is given).")
          .text(
              "an RDMA device name with an optional port, e.g. mlx5_0 or mlx5_0:1",
              (key, s) -> {
                if (s.isEmpty()) {
                  return null;
                }
                if (!s.matches("[A-Za-z0-9_.-]+(:[0-9]{1,3})?")) {
                  throw new TransferConfigException(
                      key + "=" + s + " is not a device name; expected e.g. mlx5_0 or mlx5_0:1");
                }
                return s;
              })
          .optional("(none)");

  public static final Setting<Integer> GID_INDEX =
      Setting.key("gidIndex")
          .since(TransportSettings.V010)
          .doc(
              "RoCE: the GID table index of the device's port to use (its RoCE version and "
                  + "address family). ucx: UCX_IB_GID_INDEX (UCX's ud transport needs 0 on "
                  + "Soft-RoCE). verbs: DiSNI cannot apply it; a value other than the GID rdma_cm "
                  + "uses is warned at start with the kernel-wide command (memwire doctor).")
          .count(0, 255)
          .optional("auto (the fabric library picks)");

  public static final Setting<Integer> TRAFFIC_CLASS =
      Setting.key("trafficClass")
          .since(TransportSettings.V010)
          .doc(
              "RoCE v2: the IP traffic class byte (DSCP times 4, plus ECN) of the node's RDMA packets, "
                  + "the class a lossless (PFC) fabric is set up for. ucx: UCX_IB_TRAFFIC_CLASS. verbs: "
                  + "DiSNI cannot apply it; a value other than rdma_cm's TOS is warned at start with "
                  + "the kernel-wide command (memwire doctor).")
          .count(0, 255)
          .optional("auto (the fabric library's default)");

  public static final Setting<Integer> SERVICE_LEVEL =
      Setting.key("serviceLevel")
          .since(TransportSettings.V010)
          .doc(
              "InfiniBand: the service level (mapped to a virtual lane by the subnet manager) "
                  + "of the node's RDMA traffic. ucx: UCX_IB_SL. verbs: DiSNI cannot apply it (warned at "
                  + "start); the subnet manager's QoS policy decides.")
          .count(0, 15)
          .optional("0");

  public static final Setting<String> UCX_TRANSPORTS =
      Setting.key("ucxTransports")
          .since(TransportSettings.V010)
          .doc(
              "ucx: the UCX transports to use (UCX_TLS), e.g. rc or rc_verbs,ud_verbs; tcp and "
                  + "shared memory (sm, posix, sysv, cma) also work but are slower than the tcp "
                  + "provider and are used only with provider=ucx.")
          .text(
              "a comma-separated list of UCX transport names",
              (key, s) -> {
                if (s.isEmpty()) {
                  return null;
                }
                if (!s.matches("\\^?[a-z0-9_]+(,[a-z0-9_]+)*")) {
                  throw new TransferConfigException(
                      key + "=" + s + " is not a list of UCX transports, e.g. rc_verbs,ud_verbs");
                }
                return s;
              })
          .optional("UCX's choice");

  public static final Setting<String> UCX_CONFIG =
      Setting.key("ucxConfig")
          .since(TransportSettings.V010)
          .doc(
              "ucx: further UCX settings for this node's UCX context, as NAME=value pairs "
                  + "separated by ';' with or without the UCX_ prefix (e.g. "
                  + "MAX_RMA_RAILS=1;IB_REG_METHODS=rcache,direct). ERROR_SIGNALS cannot be set "
                  + "here: UCX reads it from the environment when its library loads.")
          .text(
              "NAME=value pairs separated by ';'",
              (key, s) -> {
                if (s.isEmpty()) {
                  return null;
                }
                for (String pair : s.split(";")) {
                  if (!pair.trim().matches("[A-Za-z0-9_]+=.*")) {
                    throw new TransferConfigException(
                        key + ": '" + pair + "' is not NAME=value (pairs are separated by ';')");
                  }
                }
                return s;
              })
          .optional("(none)");

  public static final Setting<Boolean> MTU_HANDSHAKE =
      Setting.key("mtuHandshake")
          .since("0.6.0")
          .doc(
              "verbs without authSecret: the node answers, on TCP at its port's number, an open "
                  + "handshake that tells a connecting peer its RDMA and interface MTUs, and asks "
                  + "a peer's before connecting, so a path MTU the peer cannot send in is refused "
                  + "at connect, naming both MTUs. false: no TCP port is opened without a secret "
                  + "and peers are not asked; an MTU mismatch then shows as reads that stall "
                  + "until readTimeout, whose error names the cause. With authSecret the "
                  + "authenticating handshake tells the MTUs either way.")
          .bool()
          .withDefault("true");
}
