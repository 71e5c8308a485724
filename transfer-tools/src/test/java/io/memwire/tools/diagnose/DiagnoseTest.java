package io.memwire.tools.diagnose;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import io.memwire.transfer.fabric.RecordedSysfs;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The diagnose report on a recorded sysfs tree, with and without a service and a log. */
class DiagnoseTest {
  @TempDir Path tmp;

  private static String run(String... args) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    int code = Diagnose.run(args, new PrintStream(bytes, true, StandardCharsets.UTF_8));
    String console = bytes.toString(StandardCharsets.UTF_8);
    assertEquals(0, code, console);
    return console;
  }

  @Test
  void fullReportWithServiceCountersAndLog() throws Exception {
    Path sys = tmp.resolve("sys");
    RecordedSysfs.write(sys, "mlx5", "rxe");
    Path log = tmp.resolve("service.log");
    Files.writeString(
        log,
        "INFO started\n"
            + "WARN io.memwire.x - peer 10.0.0.2 slow\n"
            + "ERROR io.memwire.y - read failed\n"
            + "java.io.IOException: boom\n"
            + "INFO fine\n");
    HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    http.createContext(
        "/",
        ex -> {
          String path = ex.getRequestURI().getPath();
          byte[] body =
              (path.equals("/metrics")
                      ? "# HELP memwire_shuffle_service_registered_bytes x\n"
                          + "memwire_shuffle_service_registered_bytes 1048576\n"
                          + "memwire_shuffle_service_transfer_connections 3\n"
                          + "memwire_shuffle_service_outputs 9\n"
                      : path.equals("/health") ? "live\n" : "ready\n")
                  .getBytes(StandardCharsets.UTF_8);
          ex.sendResponseHeaders(200, body.length);
          ex.getResponseBody().write(body);
          ex.close();
        });
    http.start();
    Path out = tmp.resolve("report.txt");
    try {
      run(
          "--out",
          out.toString(),
          "--sysfs",
          sys.toString(),
          "--interval",
          "0.1",
          "--service",
          "127.0.0.1:" + http.getAddress().getPort(),
          "--log",
          log.toString(),
          "--",
          "--provider",
          "tcp",
          "--limits",
          "/nonexistent/limits");
    } finally {
      http.stop(0);
    }
    String r = Files.readString(out);
    for (String section :
        new String[] {
          "## versions",
          "## settings in effect",
          "## doctor",
          "## NIC counters",
          "## shuffle service",
          "## last errors",
          "## could not read"
        }) {
      assertTrue(r.contains(section), section + " missing:\n" + r);
    }
    assertTrue(r.contains("java " + System.getProperty("java.version")), r);
    assertTrue(r.contains("rdma-devices"), r); // the doctor ran on the recorded tree
    assertTrue(r.contains("fabric mlx5_0/1 over "), r);
    assertTrue(r.contains("fabric rxe0/1 over "), r);
    assertTrue(r.contains("mlx5_0/1/hw_counters/np_cnp_sent"), r);
    assertTrue(r.contains("/health: live") && r.contains("/health/ready: ready"), r);
    assertTrue(r.contains("memwire_shuffle_service_registered_bytes 1048576"), r);
    assertTrue(r.contains("memwire_shuffle_service_transfer_connections 3"), r);
    assertTrue(!r.contains("memwire_shuffle_service_outputs 9"), r);
    assertTrue(r.contains("3 error or warning line(s)"), r);
    assertTrue(r.contains("ERROR io.memwire.y - read failed"), r);
    assertTrue(!r.contains("INFO fine"), r);
  }

  @Test
  void aNodeWithoutRdmaOrServiceSaysWhatItCouldNotRead() throws Exception {
    Path out = tmp.resolve("r.txt");
    // An unused port: nothing listens on a port just closed.
    int port;
    try (var s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    run(
        "--out",
        out.toString(),
        "--sysfs",
        tmp.resolve("empty").toString(),
        "--interval",
        "0",
        "--service",
        "127.0.0.1:" + port,
        "--",
        "--provider",
        "tcp");
    String r = Files.readString(out);
    String unread = r.substring(r.indexOf("## could not read"));
    assertTrue(r.contains("no RDMA device on this node"), r);
    assertTrue(unread.contains("NIC counters: no RDMA device"), unread);
    assertTrue(unread.contains("the shuffle service's /health at 127.0.0.1:" + port), unread);
    assertTrue(unread.contains("a log: no --log FILE given"), unread);
  }

  @Test
  void secretsAreNotWritten() {
    assertEquals("(set, not shown)", Diagnose.redact("memwire.transfer.authSecret", "s3cret"));
    assertEquals("9000", Diagnose.redact("memwire.transfer.port", "9000"));
  }

  @Test
  void badArgumentsAreRefused() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    assertEquals(
        2,
        Diagnose.run(
            new String[] {"--interval", "-1"},
            new PrintStream(bytes, true, StandardCharsets.UTF_8)));
    assertTrue(bytes.toString(StandardCharsets.UTF_8).contains("--interval"));
  }
}
