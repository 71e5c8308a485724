package io.memwire.shuffle.service;

import io.memwire.shuffle.protocol.ServiceClient;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.settings.Setting;
import io.memwire.transfer.settings.Settings;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.List;

/**
 * The shuffle service's own settings, each declared once (name, default, bounds, doc, since): its
 * keys under {@value #PREFIX}; the embedded transfer node's are {@link TransferConfig}'s under
 * {@value #TRANSFER_PREFIX}. {@link ServiceConfig} reads and validates them.
 */
public final class ServiceSettings {
  private ServiceSettings() {}

  /** Prefix of the service's own keys. */
  public static final String PREFIX = ServiceClient.SERVICE_KEY_PREFIX;

  /** Prefix of the transfer node's keys ({@link TransferConfig}'s names). */
  public static final String TRANSFER_PREFIX = ServiceClient.SERVICE_TRANSFER_KEY_PREFIX;

  private static final String V020 = "0.2.0";
  private static final String V030 = "0.3.0";
  private static final String V040 = "0.4.0";
  private static final String V050 = "0.5.0";

  private static String shareOf(String nodeLimit) {
    return nodeLimit + " with one allowed user, else half of it";
  }

  /** An application's default share: half of its user's, so one leaves room for the others. */
  private static String halfOf(String userLimit) {
    return "half of " + userLimit + " (as set or derived)";
  }

  public static final Setting<String> SOCKET =
      Setting.key("socket")
          .since(V020)
          .doc(
              "Unix domain socket the service listens on for the executors of its node "
                  + "(spark.shuffle.rdma.service.socket must name the same path). Its directory is "
                  + "created (0700, or 0755 when other users may connect) or checked at start: it "
                  + "and every directory above it must belong to root or the service's user and be "
                  + "writable by no one else (sticky directories such as /tmp excepted), or the "
                  + "service refuses to start.")
          .text("a file path", (key, s) -> s)
          .optional("(java.io.tmpdir)/memwire-shuffle-service/service.sock");

  public static final Setting<String> DIR =
      Setting.key("dir")
          .since(V020)
          .doc(
              "Directory the service keeps the map outputs it owns in (hard links to the "
                  + "executors' files, so it must be on the same filesystem as spark.local.dir). "
                  + "Created 0700 or checked like the socket's directory at start, then emptied "
                  + "without following links: a restarted service serves nothing of its previous "
                  + "run, unless recoveryPath is set (then it takes back what its store records "
                  + "and deletes the rest).")
          .text("a directory path", (key, s) -> s)
          .optional("(java.io.tmpdir)/memwire-shuffle-service/outputs");

  public static final Setting<Duration> APP_TIMEOUT =
      Setting.key("appTimeout")
          .since(V020)
          .doc(
              "An application whose driver does not accept a TCP connection on its RPC port for "
                  + "this long is over: its outputs are deregistered, unmapped and deleted. A port "
                  + "that refuses every probe (the driver has stopped) ends it sooner, after this "
                  + "or 5 s, whichever is shorter.")
          .duration(1000, 86_400_000L)
          .withDefault("60s");

  public static final Setting<String> ALLOWED_USERS =
      Setting.key("allowedUsers")
          .since(V020)
          .doc(
              "Comma-separated users whose processes may register with the service (checked with "
                  + "the socket's peer credentials); * admits every local user (for multi-user "
                  + "clusters such as secure YARN: each output must still belong to the user that "
                  + "hands it over, each application is bound to its user and token, and the "
                  + "per-user quotas below apply).")
          .text("user names", (key, s) -> s)
          .optional("(the service's own user)");

  public static final Setting<Integer> MAX_CLIENTS =
      Setting.key("maxClients")
          .since(V020)
          .doc("Most executor connections served at once; more are refused.")
          .count(1, 4096)
          .withDefault("512");

  public static final Setting<Integer> MAX_CLIENTS_PER_USER =
      Setting.key("maxClientsPerUser")
          .since(V030)
          .doc("Most connections of one local user at once (peer credentials).")
          .count(1, 4096)
          .optional(shareOf("maxClients"));

  public static final Setting<Integer> MAX_CLIENTS_PER_APPLICATION =
      Setting.key("maxClientsPerApplication")
          .since(V030)
          .doc("Most registered connections of one application at once.")
          .count(1, 4096)
          .optional(halfOf("maxClientsPerUser"));

  public static final Setting<Long> MAX_OUTPUTS =
      Setting.key("maxOutputs")
          .since(V030)
          .doc(
              "Most map outputs the service holds at once. Each costs two open files and two "
                  + "memory mappings (one of each without a data file), so at start this is "
                  + "lowered to what the open-file limit and vm.max_map_count leave room for "
                  + "(logged).")
          .longCount(1, 1L << 40)
          .withDefault("100000");

  public static final Setting<Long> MAX_OUTPUTS_PER_USER =
      Setting.key("maxOutputsPerUser")
          .since(V030)
          .doc(
              "Most map outputs of one local user held at once. Derived from maxOutputs as in "
                  + "effect, after it was lowered at start.")
          .longCount(1, 1L << 40)
          .optional(shareOf("maxOutputs"));

  public static final Setting<Long> MAX_OUTPUTS_PER_APPLICATION =
      Setting.key("maxOutputsPerApplication")
          .since(V030)
          .doc(
              "Most map outputs of one application held at once; an executor whose output is "
                  + "refused serves it itself.")
          .longCount(1, 1L << 40)
          .optional(halfOf("maxOutputsPerUser"));

  public static final Setting<Long> MAX_BYTES_PER_USER =
      Setting.key("maxBytesPerUser")
          .since(V030)
          .doc(
              "Most bytes of map output files of one local user held at once, counted at their "
                  + "full length (a sparse file counts as if written), plus the shuffle directory "
                  + "chunks its outputs make the service allocate (256 KiB each, however few slots "
                  + "are used). The node-wide limit is the transfer node's registrationBudget.")
          .bytes(1, 1L << 50)
          .optional(shareOf("registrationBudget"));

  public static final Setting<Long> MAX_BYTES_PER_APPLICATION =
      Setting.key("maxBytesPerApplication")
          .since(V030)
          .doc(
              "Most bytes of map output files of one application held at once, plus its shuffle "
                  + "directory chunks (as maxBytesPerUser).")
          .bytes(1, 1L << 50)
          .optional(halfOf("maxBytesPerUser"));

  public static final Setting<Integer> MAX_APPLICATIONS_PER_USER =
      Setting.key("maxApplicationsPerUser")
          .since(V030)
          .doc(
              "Most applications of one local user registered at once (each is a driver the "
                  + "service probes).")
          .count(1, 1 << 20)
          .withDefault("256");

  public static final Setting<Duration> REGISTER_TIMEOUT =
      Setting.key("registerTimeout")
          .since(V030)
          .doc("A connection that has not registered this long after it was accepted is closed.")
          .duration(100, 600_000)
          .withDefault("10s");

  public static final Setting<Duration> FRAME_TIMEOUT =
      Setting.key("frameTimeout")
          .since(V030)
          .doc(
              "A request whose first byte arrived must be complete within this, and an answer "
                  + "must be taken by the client within this; otherwise the connection is closed.")
          .duration(100, 600_000)
          .withDefault("10s");

  public static final Setting<Integer> HTTP_PORT =
      Setting.key("http.port")
          .since(V040)
          .doc(
              "TCP port of the service's HTTP endpoint: /metrics (Prometheus text format), "
                  + "/health (liveness) and /health/ready (readiness). Unset: no endpoint, no port "
                  + "bound. 0: a free port chosen at start (logged). Needs the Prometheus client "
                  + "jars on the classpath (bin/memwire adds them; the YARN auxiliary service has "
                  + "none and refuses the key).")
          .count(0, 65_535)
          .optional("(off)");

  public static final Setting<String> HTTP_HOST =
      Setting.key("http.host")
          .since(V040)
          .doc(
              "Address the HTTP endpoint binds to (0.0.0.0: every interface, for a Prometheus "
                  + "server and the kubelet on other hosts; 127.0.0.1: this node only). Resolved "
                  + "at start.")
          .text("a host name or IP address", ServiceSettings::resolveHost)
          .withDefault("0.0.0.0");

  public static final Setting<String> RECOVERY_PATH =
      Setting.key("recoveryPath")
          .since(V050)
          .doc(
              "Directory of the service's recovery store (RocksDB): what it owns (applications, "
                  + "their tokens, outputs and the checks their files passed) is recorded there, "
                  + "so a restarted service takes its outputs back instead of emptying dir, and "
                  + "a stop (SIGTERM) keeps them. Unset: off, a restarted service starts empty. "
                  + "Created 0700 or checked like dir at start (no shared, predictable path); not "
                  + "inside dir. Needs the RocksDB jar on the classpath (bin/memwire adds it).")
          .text("a directory path", (key, s) -> s)
          .optional("(off)");

  public static final Setting<Integer> RESOLVE_PORT =
      Setting.key("resolvePort")
          .since("0.6.0")
          .doc(
              "TCP port on the transfer node's address where reducers re-resolve a directory "
                  + "pointer from before a restart (one request, authenticated with an HMAC of "
                  + "the application's token), so they go on reading one-sided instead of "
                  + "failing the fetch; applications name the same port in "
                  + "spark.shuffle.rdma.service.resolvePort. Useful with recoveryPath. Unset: "
                  + "off, readers of old pointers get fetch failures. 0: a free port (tests).")
          .count(0, 65_535)
          .optional("(off)");

  private static String resolveHost(String key, String host) {
    if (host.isEmpty()) {
      throw new TransferConfigException(
          TransferConfigException.Problem.OUT_OF_RANGE, key, key + " names no host");
    }
    try {
      InetAddress.getByName(host);
    } catch (UnknownHostException | SecurityException e) {
      throw new TransferConfigException(
          TransferConfigException.Problem.OUT_OF_RANGE,
          key,
          key + "=" + host + " cannot be resolved: " + e.getMessage());
    }
    return host;
  }

  /** The service's own settings, in documentation order. */
  public static final List<Setting<?>> OWN =
      List.of(
          SOCKET,
          DIR,
          APP_TIMEOUT,
          ALLOWED_USERS,
          MAX_CLIENTS,
          MAX_CLIENTS_PER_USER,
          MAX_CLIENTS_PER_APPLICATION,
          MAX_OUTPUTS,
          MAX_OUTPUTS_PER_USER,
          MAX_OUTPUTS_PER_APPLICATION,
          MAX_BYTES_PER_USER,
          MAX_BYTES_PER_APPLICATION,
          MAX_APPLICATIONS_PER_USER,
          REGISTER_TIMEOUT,
          FRAME_TIMEOUT,
          HTTP_PORT,
          HTTP_HOST,
          RECOVERY_PATH,
          RESOLVE_PORT);

  /** The Markdown table of the service's own keys (docs/SHUFFLE-SERVICE.md shows it). */
  public static String markdownTable() {
    return Settings.markdownTable(
        "| Key | Default | Range | Meaning |",
        "|---|---|---|---|",
        OWN.stream().map(s -> Settings.Row.of(PREFIX, s)).toList());
  }
}
