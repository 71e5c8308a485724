package io.memwire.shuffle.service;

import io.memwire.shuffle.protocol.ServiceProtocol;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The applications the service holds outputs for, keyed by (user, id): registration (bound to a
 * token and the driver address first registered, within the user's quota of applications), a
 * shuffle's removal and an application's end (outputs deregistered, files deleted, quotas
 * returned). Thread-safe: client threads register and remove, the liveness thread and YARN end.
 */
final class Applications {
  private static final Logger LOG = LoggerFactory.getLogger(ShuffleService.class);

  private final Map<Application.Key, Application> apps = new ConcurrentHashMap<>();
  private final Path appsDir;
  private final Quotas quotas;
  private final ByteQuotas bytes;
  private final ServiceCounters counters;
  private final AtomicLong linkIds;
  private final RecoveryLog log;

  Applications(
      Path appsDir,
      Quotas quotas,
      ByteQuotas bytes,
      ServiceCounters counters,
      AtomicLong linkIds,
      RecoveryLog log) {
    this.appsDir = appsDir;
    this.quotas = quotas;
    this.bytes = bytes;
    this.counters = counters;
    this.linkIds = linkIds;
    this.log = log;
  }

  /**
   * Registers (or re-joins) an application of {@code user}.
   *
   * @throws Refused when the id is registered with another token or driver, the driver's host
   *     cannot be resolved, or the user holds its quota of applications
   */
  Application register(UserPrincipal user, String id, byte[] token, String driverHost, int port)
      throws Refused {
    Application.Key key = new Application.Key(user, id);
    Application a = apps.get(key);
    if (a == null) {
      InetSocketAddress driver;
      try {
        driver = new InetSocketAddress(InetAddress.getByName(driverHost), port);
      } catch (UnknownHostException | SecurityException e) {
        counters.refused("registration");
        throw new Refused(
            ServiceProtocol.E_BAD_REQUEST, "cannot resolve the driver's host " + driverHost);
      }
      String refusal = quotas.takeApplication(user, id);
      if (refusal != null) {
        throw new Refused(ServiceProtocol.E_QUOTA, refusal);
      }
      String userName = user.getName();
      String safeUser = userName.replaceAll("[^A-Za-z0-9._-]", "_");
      Path dir =
          appsDir.resolve(
              id
                  + "@"
                  + safeUser
                  + (safeUser.equals(userName) ? "" : "-" + linkIds.incrementAndGet()));
      Application created =
          new Application(key, token, dir, driver, driverHost, bytes.open(key), System.nanoTime());
      a = apps.putIfAbsent(key, created);
      if (a == null) {
        a = created;
        LOG.debug("application {} registered, driver {}", key, driver);
      } else {
        bytes.close(key, created.memory); // another executor registered it first
        quotas.returnApplication(user);
      }
    }
    if (!a.tokenMatches(token)) {
      counters.refused("registration");
      throw new Refused(
          ServiceProtocol.E_DENIED, "application " + id + " is registered with another token");
    }
    if (!a.driver().getHostString().equals(driverHost) && !sameAddress(a.driver(), driverHost)
        || a.driver().getPort() != port) {
      counters.refused("registration");
      throw new Refused(
          ServiceProtocol.E_DENIED,
          "application " + id + " is registered with another driver address (" + driverOf(a) + ")");
    }
    a.alive(System.nanoTime());
    return a;
  }

  private static boolean sameAddress(InetSocketAddress resolved, String host) {
    return resolved.getAddress() != null && resolved.getAddress().getHostAddress().equals(host);
  }

  /**
   * Takes back an application a previous run recorded (before the service serves anyone): its
   * token, driver address and directory as they were, within its user's quota of applications.
   *
   * @return the application, or null when it cannot be taken back (the log says why)
   */
  Application adopt(UserPrincipal user, RecoveryRecords.AppRecord r) {
    Application.Key key = new Application.Key(user, r.id());
    InetSocketAddress driver;
    try {
      driver = new InetSocketAddress(InetAddress.getByName(r.driverHost()), r.driverPort());
    } catch (UnknownHostException | SecurityException e) {
      LOG.warn("not recovering {}: its driver's host {} does not resolve", key, r.driverHost());
      return null;
    }
    String refusal = quotas.takeApplication(user, r.id());
    if (refusal != null) {
      LOG.warn("not recovering {}: {}", key, refusal);
      return null;
    }
    Application a =
        new Application(
            key,
            r.token(),
            appsDir.resolve(r.dirName()),
            driver,
            r.driverHost(),
            bytes.open(key),
            System.nanoTime());
    if (apps.putIfAbsent(key, a) != null) {
      bytes.close(key, a.memory);
      quotas.returnApplication(user);
      return null; // recorded twice: the first one stands
    }
    return a;
  }

  /** Spark removed a shuffle: its outputs of this application go. */
  void removeShuffle(Application app, int shuffleId) {
    log.shuffleRemoved(app.key.user().getName(), app.key.id(), shuffleId);
    List<Application.Held> gone = app.removeShuffle(shuffleId);
    Application.deleteFiles(gone);
    for (int i = 0; i < gone.size(); i++) {
      quotas.returnOutput(app.key.user(), app.key);
    }
    if (!gone.isEmpty()) {
      counters.shufflesRemoved.increment();
      LOG.debug("shuffle {} of {} removed: {} outputs", shuffleId, app.key, gone.size());
    }
  }

  /**
   * Ends every attempt of an application now, whichever user registered it (as YARN's
   * stopApplication does). Returns the number of attempts ended.
   */
  int endApplication(String applicationId) {
    int n = 0;
    for (Application a : new ArrayList<>(apps.values())) {
      String id = a.key.id();
      if (id.equals(applicationId) || id.startsWith(applicationId + "_")) {
        end(a, "ended by its cluster manager");
        n++;
      }
    }
    return n;
  }

  /** Ends every application (the service stops). */
  void endAll(String why) {
    for (Application a : new ArrayList<>(apps.values())) {
      end(a, why);
    }
  }

  /**
   * The service stops with recovery on: every application's regions are deregistered, its files and
   * its records kept for the next run.
   */
  void detachAll() {
    long outputs = 0;
    for (Application a : new ArrayList<>(apps.values())) {
      List<Application.Held> held = a.end(false);
      if (held != null) {
        bytes.close(a.key, a.memory);
        apps.remove(a.key, a);
        outputs += held.size();
      }
    }
    LOG.info("shuffle service stops: {} map outputs kept for the next run to recover", outputs);
  }

  /** Ends an application: outputs deregistered and deleted, its quotas returned; once. */
  void end(Application a, String why) {
    long[] held = a.held();
    List<Application.Held> gone = a.end();
    if (gone == null) {
      return; // ended by another thread
    }
    log.applicationEnded(a.key.user().getName(), a.key.id());
    // Only now: a registration meanwhile joined the ended application (and was refused), never a
    // new one whose directory the cleanup above could have deleted.
    apps.remove(a.key, a);
    bytes.close(a.key, a.memory);
    for (int i = 0; i < gone.size(); i++) {
      quotas.returnOutput(a.key.user(), a.key);
    }
    quotas.returnApplication(a.key.user());
    counters.applicationsEnded.increment();
    LOG.info(
        "application {} {}: {} map outputs ({} bytes) deregistered and deleted",
        a.key,
        why,
        held[0],
        held[1]);
  }

  /** The applications now (a live view). */
  Collection<Application> all() {
    return apps.values();
  }

  int size() {
    return apps.size();
  }

  /** How long ago the application heard from longest ago was last known alive; 0 with none. */
  long cleanupLagNanos(long now) {
    long lag = 0;
    for (Application a : apps.values()) {
      lag = Math.max(lag, now - a.lastAliveNanos());
    }
    return lag;
  }

  /** "host:port" of the application's driver, for messages. */
  static String driverOf(Application a) {
    return a.driver().getHostString() + ":" + a.driver().getPort();
  }
}
