package io.memwire.shuffle.writer;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.shuffle.conf.ShuffleSettings;
import io.memwire.shuffle.protocol.ServiceClient;
import io.memwire.shuffle.protocol.ServiceIdentityException;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This executor's link to its node's shuffle service. An executor that finds no service (not
 * started yet, restarting) tries again at most every {@value #RETRY_MS} ms when it has an output to
 * hand over, so a service that comes up later is used from then on; once connected, {@link
 * ServiceClient} re-opens a broken connection itself. Used by map tasks and by {@code
 * unregisterShuffle}; every method may block up to the service timeout.
 */
public final class ServiceLink implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ServiceLink.class);
  static final long RETRY_MS = 5000;

  private final Path socket;
  private final ServiceClient.Registration registration;
  private final Duration timeout;
  private final Set<String> serviceUsers;
  private final long retryNanos;

  @GuardedBy("this")
  private ServiceClient client;

  @GuardedBy("this")
  private long nextAttemptNanos;

  @GuardedBy("this")
  private boolean warned;

  @GuardedBy("this")
  private boolean closed;

  /**
   * A link to the service on {@code socket}, which must run as one of {@code serviceUsers} (checked
   * before anything is sent).
   */
  public ServiceLink(
      Path socket,
      ServiceClient.Registration registration,
      Duration timeout,
      Set<String> serviceUsers) {
    this(socket, registration, timeout, serviceUsers, Duration.ofMillis(RETRY_MS));
  }

  ServiceLink(
      Path socket,
      ServiceClient.Registration registration,
      Duration timeout,
      Set<String> serviceUsers,
      Duration retry) {
    this.socket = socket;
    this.registration = registration;
    this.timeout = timeout;
    this.serviceUsers = serviceUsers;
    this.retryNanos = retry.toNanos();
  }

  /** The socket of the node's service. */
  public Path socket() {
    return socket;
  }

  /** True while a connection to the service is open. */
  public synchronized boolean isConnected() {
    return client != null;
  }

  /** The connected client, connecting first if due; null while there is no service. */
  public synchronized ServiceClient client() {
    if (client != null || closed) {
      return client;
    }
    long now = System.nanoTime();
    if (now - nextAttemptNanos < 0) {
      return null;
    }
    try {
      client = ServiceClient.connect(socket, registration, timeout, serviceUsers);
      if (warned) {
        LOG.info("connected to the shuffle service on {}: outputs go to it from now on", socket);
      }
      return client;
    } catch (IOException | RuntimeException e) {
      nextAttemptNanos = now + retryNanos;
      if (e instanceof ServiceIdentityException) {
        if (!warned) {
          warned = true;
          LOG.warn(
              "not using the shuffle service socket {}: {}. This executor serves its map outputs "
                  + "itself. If user {} runs your Memwire shuffle service, add it to "
                  + "spark.shuffle.rdma.{}",
              socket,
              e.getMessage(),
              ((ServiceIdentityException) e).user(),
              ShuffleSettings.SERVICE_USER);
        }
        return null;
      }
      if (!warned) {
        warned = true;
        LOG.warn(
            "no shuffle service on {} ({}); this executor serves its map outputs itself, and they "
                + "are lost with it, until a service answers",
            socket,
            e.getMessage());
      } else {
        LOG.debug("still no shuffle service on {}: {}", socket, e.getMessage());
      }
      return null;
    }
  }

  /** Asks the service, if connected, to drop a shuffle of this application. */
  public void removeShuffle(int shuffleId) {
    ServiceClient c;
    synchronized (this) {
      c = client;
    }
    if (c == null) {
      return;
    }
    try {
      c.removeShuffle(shuffleId);
    } catch (IOException e) {
      LOG.debug("shuffle service did not remove shuffle {}: {}", shuffleId, e.getMessage());
    }
  }

  @Override
  public synchronized void close() {
    closed = true;
    if (client != null) {
      client.close();
      client = null;
    }
  }
}
