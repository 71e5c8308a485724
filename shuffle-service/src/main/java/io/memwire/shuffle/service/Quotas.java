package io.memwire.shuffle.service;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.nio.file.attribute.UserPrincipal;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How many connections, applications and map outputs each local user and each application holds of
 * the service, against the node's limits and their shares ({@link ServiceConfig.Quota}); their
 * bytes are nodes of the allocator tree ({@link ByteQuotas}), whose refusals are counted and logged
 * here too. Every take is all or nothing across node, user and application; a refusal names what
 * was hit and is logged once per holder and resource (then at DEBUG) and counted.
 */
final class Quotas {
  private static final Logger LOG = LoggerFactory.getLogger(Quotas.class);

  /** One holder's use. */
  private static final class Use {
    int clients;
    int applications;
    long outputs;

    boolean isEmpty() {
      return clients == 0 && applications == 0 && outputs == 0;
    }
  }

  private final ServiceConfig.Quota node;
  private final ServiceConfig.Quota perUser;
  private final ServiceConfig.Quota perApplication;
  private final int applicationsPerUser;

  @GuardedBy("this")
  private final Use total = new Use();

  @GuardedBy("this")
  private final Map<UserPrincipal, Use> users = new HashMap<>();

  @GuardedBy("this")
  private final Map<Object, Use> applications = new HashMap<>();

  @GuardedBy("this")
  private final Set<String> warned = new HashSet<>();

  private final LongAdder refusals = new LongAdder();
  private final Map<String, LongAdder> byLimit = new java.util.concurrent.ConcurrentHashMap<>();

  Quotas(
      ServiceConfig.Quota node,
      ServiceConfig.Quota perUser,
      ServiceConfig.Quota perApplication,
      int applicationsPerUser) {
    this.node = node;
    this.perUser = perUser;
    this.perApplication = perApplication;
    this.applicationsPerUser = applicationsPerUser;
  }

  /** The refusals so far. */
  long refusals() {
    return refusals.sum();
  }

  /** The refusals so far by the key of the limit that was hit ({@code maxClients}, ...). */
  Map<String, Long> refusalsByLimit() {
    Map<String, Long> m = new java.util.TreeMap<>();
    byLimit.forEach((k, v) -> m.put(k, v.sum()));
    return m;
  }

  /** Takes a connection slot for {@code user}; returns null, or why it was refused. */
  synchronized String takeClient(UserPrincipal user) {
    Use u = users.computeIfAbsent(user, k -> new Use());
    String why = null;
    String limit = null;
    if (total.clients >= node.clients()) {
      limit = "maxClients";
      why = "the shuffle service serves " + node.clients() + " clients already (maxClients)";
    } else if (u.clients >= perUser.clients()) {
      limit = "maxClientsPerUser";
      why =
          "user "
              + user.getName()
              + " has "
              + u.clients
              + " connections open, its quota (maxClientsPerUser)";
    }
    if (why != null) {
      prune(users, user, u);
      return refused("user " + user.getName(), "clients", limit, why);
    }
    total.clients++;
    u.clients++;
    return null;
  }

  synchronized void returnClient(UserPrincipal user) {
    total.clients--;
    Use u = users.get(user);
    u.clients--;
    prune(users, user, u);
  }

  /** Takes a registered-connection slot of {@code app}; returns null, or why it was refused. */
  synchronized String takeApplicationClient(Object app, String appName) {
    Use a = applications.computeIfAbsent(app, k -> new Use());
    if (a.clients >= perApplication.clients()) {
      prune(applications, app, a);
      return refused(
          "application " + appName,
          "clients",
          "maxClientsPerApplication",
          "application "
              + appName
              + " has "
              + a.clients
              + " executors connected, its quota (maxClientsPerApplication)");
    }
    a.clients++;
    return null;
  }

  synchronized void returnApplicationClient(Object app) {
    Use a = applications.get(app);
    a.clients--;
    prune(applications, app, a);
  }

  /** Takes an application slot of {@code user}; returns null, or why it was refused. */
  synchronized String takeApplication(UserPrincipal user, String appName) {
    Use u = users.computeIfAbsent(user, k -> new Use());
    if (u.applications >= applicationsPerUser) {
      prune(users, user, u);
      return refused(
          "user " + user.getName(),
          "applications",
          "maxApplicationsPerUser",
          "user "
              + user.getName()
              + " has "
              + u.applications
              + " applications registered, its quota (maxApplicationsPerUser); "
              + appName
              + " refused");
    }
    u.applications++;
    return null;
  }

  synchronized void returnApplication(UserPrincipal user) {
    Use u = users.get(user);
    u.applications--;
    prune(users, user, u);
  }

  /** Takes one output for user and application; null, or why it was refused. */
  synchronized String takeOutput(UserPrincipal user, Object app, String appName) {
    Use u = users.computeIfAbsent(user, k -> new Use());
    Use a = applications.computeIfAbsent(app, k -> new Use());
    String holder = null;
    String what = null;
    String why = null;
    String limit = null;
    if (total.outputs >= node.outputs()) {
      limit = "maxOutputs";
      holder = "node";
      what = "outputs";
      why = "the service holds " + total.outputs + " map outputs, its limit (maxOutputs)";
    } else if (u.outputs >= perUser.outputs()) {
      limit = "maxOutputsPerUser";
      holder = "user " + user.getName();
      what = "outputs";
      why = "user " + user.getName() + " holds " + u.outputs + " outputs (maxOutputsPerUser)";
    } else if (a.outputs >= perApplication.outputs()) {
      limit = "maxOutputsPerApplication";
      holder = "application " + appName;
      what = "outputs";
      why =
          "application " + appName + " holds " + a.outputs + " outputs (maxOutputsPerApplication)";
    }
    if (why != null) {
      prune(users, user, u);
      prune(applications, app, a);
      return refused(holder, what, limit, why);
    }
    total.outputs++;
    u.outputs++;
    a.outputs++;
    return null;
  }

  synchronized void returnOutput(UserPrincipal user, Object app) {
    total.outputs--;
    Use u = users.get(user);
    u.outputs--;
    prune(users, user, u);
    Use a = applications.get(app);
    a.outputs--;
    prune(applications, app, a);
  }

  /**
   * Counts and logs a refusal by a byte quota of {@link ByteQuotas} ({@code limit} its key) and
   * returns {@code why}.
   */
  String refusedBytes(String holder, String limit, String why) {
    return refused(holder, "bytes", limit, why);
  }

  /** Outputs held on the whole node. */
  synchronized long outputsHeld() {
    return total.outputs;
  }

  private static <K> void prune(Map<K, Use> m, K key, Use u) {
    if (u.isEmpty()) {
      m.remove(key);
    }
  }

  private synchronized String refused(String holder, String what, String limit, String why) {
    refusals.increment();
    byLimit.computeIfAbsent(limit, k -> new LongAdder()).increment();
    if (warned.size() > 4096) {
      warned.clear(); // bounded: holders come and go
    }
    if (warned.add(holder + "/" + what)) {
      LOG.warn(
          "shuffle service quota: {} (further refusals of {} are logged at DEBUG)", why, holder);
    } else {
      LOG.debug("shuffle service quota: {}", why);
    }
    return why;
  }
}
