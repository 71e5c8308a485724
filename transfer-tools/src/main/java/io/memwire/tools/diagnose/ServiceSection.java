package io.memwire.tools.diagnose;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The report's shuffle service section: its {@code /health} and {@code /health/ready} answers and
 * the registered-memory, connection and client lines of its {@code /metrics}, from the HTTP address
 * given; what does not answer is noted as unread.
 */
final class ServiceSection {
  private static final Pattern SERVICE_METRIC =
      Pattern.compile("registered|connection|peer|client|memory|applications|refused");

  private ServiceSection() {}

  /** Appends the section for the service at {@code service} (null: not asked). */
  static void append(StringBuilder r, String service, List<String> unread) {
    if (service == null) {
      r.append("no --service HOST:PORT given (the service's http.port): not asked\n");
      unread.add("the shuffle service: no --service address given");
      return;
    }
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(3)).build();
    for (String path : List.of("/health", "/health/ready")) {
      String body = get(http, service, unread, path);
      if (body != null) {
        r.append(path).append(": ").append(body.strip()).append('\n');
      }
    }
    String metrics = get(http, service, unread, "/metrics");
    if (metrics == null) {
      return;
    }
    r.append("\nregistered memory, connections and clients (from /metrics):\n");
    int n = 0;
    for (String line : metrics.split("\n")) {
      if (!line.startsWith("#") && SERVICE_METRIC.matcher(line).find()) {
        r.append(line).append('\n');
        n++;
      }
    }
    if (n == 0) {
      r.append("(no such metric in the answer)\n");
    }
  }

  /** The body with its status, or null (noted) when the service does not answer. */
  private static String get(HttpClient http, String service, List<String> unread, String path) {
    try {
      HttpResponse<String> res =
          http.send(
              HttpRequest.newBuilder(URI.create("http://" + service + path))
                  .timeout(Duration.ofSeconds(5))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      return res.statusCode() == 200 ? res.body() : "HTTP " + res.statusCode() + " " + res.body();
    } catch (IOException | IllegalArgumentException e) {
      unread.add("the shuffle service's " + path + " at " + service + ": " + e);
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      unread.add("the shuffle service's " + path + ": interrupted");
      return null;
    }
  }
}
